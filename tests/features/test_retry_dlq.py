"""CONSUMER_SEND_MSG_BACK and the client's own resend: %RETRY% after the delay, %DLQ% at the end."""

from __future__ import annotations

import time
from pathlib import Path

from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.protocol.headers import ConsumerSendMsgBackRequestHeader
from broker.protocol.message import MessageRecord
from broker.protocol.remoting import RemotingCommand, make_request
from broker.server.broker import Broker
from tests.broker.conftest import async_test, call, send
from tests.features.conftest import feature_broker, pull_all, v2_fields, wait_for


async def send_back(
    client: RemotingClient,
    broker: Broker,
    rec: MessageRecord,
    group: str = "G",
    delay: int = 0,
    max_times: int | None = None,
) -> RemotingCommand:
    header = ConsumerSendMsgBackRequestHeader(
        offset=rec.physical_offset, group=group, delayLevel=delay, maxReconsumeTimes=max_times
    )
    return await call(client, broker, RequestCode.CONSUMER_SEND_MSG_BACK, header)


async def original(
    client: RemotingClient, broker: Broker, topic: str = "Orders", body: bytes = b"work"
) -> MessageRecord:
    assert (
        await send(client, broker, topic, body, queue_id=0, tags="T", keys="k1")
    ).code == ResponseCode.SUCCESS
    return (await pull_all(client, broker.address, topic, 0))[-1]


@async_test
async def test_send_back_reappears_in_retry_topic_after_level_3(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        rec = await original(client, broker)
        sent_back_at = int(time.time() * 1000)
        assert (await send_back(client, broker, rec)).code == ResponseCode.SUCCESS
        assert await pull_all(client, broker.address, "%RETRY%G", 0) == []
        retry = (await wait_for(client, broker.address, "%RETRY%G", 0, 1))[0]
        assert retry.store_timestamp >= sent_back_at + 2000 - 5  # level 3 is 2 s here
        assert retry.reconsume_times == 1 and retry.body == b"work" and retry.tags == "T"
        assert retry.properties["RETRY_TOPIC"] == "Orders"
        assert retry.properties["ORIGIN_MESSAGE_ID"] == rec.offset_msg_id
        assert retry.uniq_key == rec.uniq_key and retry.born_timestamp == rec.born_timestamp
        assert "DELAY" not in retry.properties
        config = broker.topics.get("%RETRY%G")
        assert config is not None and (config.readQueueNums, config.perm) == (1, 6)


@async_test
async def test_after_the_last_retry_the_message_is_dead(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        await AdminApi(client).create_group(
            broker.address, SubscriptionGroupConfig(groupName="G", retryMaxTimes=2)
        )
        rec = await original(client, broker)
        for times in (1, 2):
            assert (await send_back(client, broker, rec)).code == ResponseCode.SUCCESS
            rec = (await wait_for(client, broker.address, "%RETRY%G", 0, times, timeout=6))[-1]
            assert rec.reconsume_times == times
        assert (await send_back(client, broker, rec)).code == ResponseCode.SUCCESS
        dead = await pull_all(client, broker.address, "%DLQ%G", 0)
        assert len(dead) == 1 and dead[0].reconsume_times == 3
        props = dead[0].properties
        assert (props["DLQ_ORIGIN_TOPIC"], props["RETRY_TOPIC"]) == ("Orders", "Orders")
        assert props["DLQ_ORIGIN_MESSAGE_ID"] == rec.uniq_key and "DELAY" not in props
        config = broker.topics.get("%DLQ%G")
        assert config is not None and (config.readQueueNums, config.writeQueueNums, config.perm) == (1, 1, 6)


@async_test
async def test_negative_level_or_header_max_goes_straight_to_dlq(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        rec = await original(client, broker)
        assert (await send_back(client, broker, rec, delay=-1)).code == ResponseCode.SUCCESS
        assert (await send_back(client, broker, rec, max_times=0)).code == ResponseCode.SUCCESS
        dead = await pull_all(client, broker.address, "%DLQ%G", 0)
        assert [m.properties["ORIGIN_MESSAGE_ID"] for m in dead] == [rec.offset_msg_id] * 2


@async_test
async def test_cpp_style_header_with_only_three_fields(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        rec = await original(client, broker)
        ext = {"offset": str(rec.physical_offset), "group": "G", "delayLevel": "1"}
        request = make_request(RequestCode.CONSUMER_SEND_MSG_BACK, None, ext_fields=ext)
        assert (await client.invoke(broker.address, request, 5)).code == ResponseCode.SUCCESS
        retry = await wait_for(client, broker.address, "%RETRY%G", 0, 1, timeout=4)
        assert [m.reconsume_times for m in retry] == [1]


@async_test
async def test_bad_send_back_requests_get_error_codes(tmp_path: Path) -> None:
    async with feature_broker(tmp_path, auto_create_subscription_group=False) as (broker, client):
        for group in ("G", "CG"):
            await AdminApi(client).create_group(broker.address, SubscriptionGroupConfig(groupName=group))
        rec = await original(client, broker)

        async def raw(**ext: str) -> int:
            request = make_request(RequestCode.CONSUMER_SEND_MSG_BACK, None, ext_fields=ext)
            return (await client.invoke(broker.address, request, 5)).code

        assert await raw(group="G", delayLevel="0") == ResponseCode.INVALID_PARAMETER
        assert await raw(offset="x", group="G", delayLevel="0") == ResponseCode.INVALID_PARAMETER
        assert (
            await raw(offset=str(rec.physical_offset + 3), group="G", delayLevel="0")
            == ResponseCode.SYSTEM_ERROR
        )
        assert await raw(offset="-5", group="G", delayLevel="0") == ResponseCode.SYSTEM_ERROR
        assert (
            await send_back(client, broker, rec, group="Nobody")
        ).code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        broker.config.broker_permission = 4
        assert (await send_back(client, broker, rec)).code == ResponseCode.NO_PERMISSION


@async_test
async def test_client_resend_to_retry_topic_routes_to_dlq_when_exhausted(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        ok = await send(client, broker, "%RETRY%G", b"again", queue_id=0, RETRY_TOPIC="Orders", DELAY="3",
                        RECONSUME_TIME="1")  # fmt: skip
        assert ok.code == ResponseCode.SUCCESS
        props = "RETRY_TOPIC\x01Orders\x02DELAY\x013\x02UNIQ_KEY\x01U1\x02"
        ext = v2_fields("%RETRY%G", props, j="3", l="2")
        request = make_request(RequestCode.SEND_MESSAGE_V2, None, body=b"dead", ext_fields=ext)
        assert (await client.invoke(broker.address, request, 5)).code == ResponseCode.SUCCESS
        dead = await pull_all(client, broker.address, "%DLQ%G", 0)
        assert [m.body for m in dead] == [b"dead"] and dead[0].reconsume_times == 3
        assert dead[0].properties["DLQ_ORIGIN_TOPIC"] == "Orders" and "DELAY" not in dead[0].properties
        assert dead[0].properties["DLQ_ORIGIN_MESSAGE_ID"] == "U1"
        assert [m.body for m in await wait_for(client, broker.address, "%RETRY%G", 0, 1)] == [b"again"]
