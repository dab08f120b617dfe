"""Heartbeats, consumer lists, rebalance notifications and queue locks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.client.remoting_client import RemotingChannel, RemotingClient
from broker.protocol.bodies import MessageQueue
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import (
    ConsumerConnection,
    ConsumerConnectionTable,
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
)
from broker.protocol.headers import (
    ConsumerGroupRequestHeader,
    UnregisterClientRequestHeader,
)
from broker.protocol.remoting import RemotingCommand
from broker.server.broker import Broker
from tests.broker.conftest import async_test, call, heartbeat_body, pull, records, running_broker, send


async def heartbeat(
    client: RemotingClient, broker: Broker, client_id: str, group: str = "G"
) -> RemotingCommand:
    body = heartbeat_body(client_id, group, {"HB": "*", f"%RETRY%{group}": "*"})
    return await call(client, broker, RequestCode.HEART_BEAT, None, body)


async def consumer_ids(client: RemotingClient, broker: Broker, group: str = "G") -> RemotingCommand:
    header = ConsumerGroupRequestHeader(consumerGroup=group)
    return await call(client, broker, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header)


@async_test
async def test_heartbeat_registers_consumer_and_creates_group_and_retry_topic(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        response = await heartbeat(client, broker, "10.0.0.1@1")
        assert response.code == ResponseCode.SUCCESS
        assert response.ext_fields["IS_SUPPORT_HEART_BEAT_V2"] == "true"
        assert broker.groups.get("G") is not None and broker.topics.get("%RETRY%G") is not None
        ids = GetConsumerListByGroupResponseBody.from_json((await consumer_ids(client, broker)).body or b"")
        assert ids.consumerIdList == ["10.0.0.1@1"]
        none = await consumer_ids(client, broker, "Nobody")
        assert none.code == ResponseCode.SYSTEM_ERROR and "Nobody" in (none.remark or "")


@async_test
async def test_pull_uses_heartbeat_subscription(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        body = heartbeat_body("c@1", "CG", {"HS": "A"})
        await call(client, broker, RequestCode.HEART_BEAT, None, body)
        for tag in "AB":
            await send(client, broker, "HS", tag.encode(), queue_id=0, tags=tag)
        got = records(await pull(client, broker, "HS", 0, 0, sysFlag=0))
        assert [r.body for r in got] == [b"A"]


@async_test
async def test_members_are_notified_when_a_consumer_joins_and_leaves(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        notified: asyncio.Queue[str] = asyncio.Queue()

        async def on_notify(request: RemotingCommand, channel: RemotingChannel) -> None:
            await notified.put(request.ext_fields["consumerGroup"])

        second = RemotingClient()
        second.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
        third = RemotingClient()
        try:
            await heartbeat(second, broker, "c@2")
            assert await asyncio.wait_for(notified.get(), 5) == "G"  # its own join
            await heartbeat(third, broker, "c@3")
            assert await asyncio.wait_for(notified.get(), 5) == "G"
            ids = GetConsumerListByGroupResponseBody.from_json(
                (await consumer_ids(client, broker)).body or b""
            )
            assert sorted(ids.consumerIdList) == ["c@2", "c@3"]
            await heartbeat(third, broker, "c@3")  # a repeated heartbeat changes nothing
            await third.close()
            assert await asyncio.wait_for(notified.get(), 5) == "G"
            ids = GetConsumerListByGroupResponseBody.from_json(
                (await consumer_ids(client, broker)).body or b""
            )
            assert ids.consumerIdList == ["c@2"]
            assert notified.empty()
        finally:
            await second.close()
            await third.close()


@async_test
async def test_unregister_and_connection_lists(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        body = heartbeat_body("c@9", "G", {"HB": "*"})
        await call(client, broker, RequestCode.HEART_BEAT, None, body)
        conn = await call(
            client,
            broker,
            RequestCode.GET_CONSUMER_CONNECTION_LIST,
            ConsumerGroupRequestHeader(consumerGroup="G"),
        )
        connection = ConsumerConnection.from_json(conn.body or b"")
        assert connection.connectionSet[0].clientId == "c@9" and "HB" in connection.subscriptionTable
        header = UnregisterClientRequestHeader(clientID="c@9", consumerGroup="G")
        assert (
            await call(client, broker, RequestCode.UNREGISTER_CLIENT, header)
        ).code == ResponseCode.SUCCESS
        gone = await call(
            client,
            broker,
            RequestCode.GET_CONSUMER_CONNECTION_LIST,
            ConsumerGroupRequestHeader(consumerGroup="G"),
        )
        assert gone.code == ResponseCode.CONSUMER_NOT_ONLINE


@async_test
async def test_every_online_group_connections_in_one_answer(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        for client_id, group in (("c@1", "G1"), ("c@3", "G2"), ("c@4", "Gone")):
            await call(
                client, broker, RequestCode.HEART_BEAT, None, heartbeat_body(client_id, group, {"T": "*"})
            )
        header = UnregisterClientRequestHeader(clientID="c@4", consumerGroup="Gone")
        await call(client, broker, RequestCode.UNREGISTER_CLIENT, header)
        answer = await call(client, broker, RequestCode.GET_ALL_CONSUMER_CONNECTIONS, None)
        table = ConsumerConnectionTable.from_json(answer.body or b"").connectionTable
        assert sorted(table) == ["G1", "G2"]  # a group with nobody online is left out, as 203 answers it
        assert [c.clientId for c in table["G1"].connectionSet] == ["c@1"]
        assert "T" in table["G2"].subscriptionTable


@async_test
async def test_lock_batch(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        queues = [MessageQueue("T", "broker-t", q) for q in range(2)]

        async def lock(client_id: str, code: int = RequestCode.LOCK_BATCH_MQ) -> list[MessageQueue]:
            body = LockBatchRequestBody(consumerGroup="G", clientId=client_id, mqSet=queues).to_json()
            response = await call(client, broker, code, None, body)
            assert response.code == ResponseCode.SUCCESS
            return LockBatchResponseBody.from_json(response.body).lockOKMQSet if response.body else []

        assert set(await lock("a")) == set(queues)
        assert await lock("b") == []
        assert set(await lock("a")) == set(queues)  # renewal
        await lock("a", RequestCode.UNLOCK_BATCH_MQ)
        assert set(await lock("b")) == set(queues)
