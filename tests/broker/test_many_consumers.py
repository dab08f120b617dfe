"""A group of 500 consumers, each on a connection of its own as real clients are: every member sees
the same 500 ids, their allocation covers every queue exactly once, and the joins are told to the
members in a few rounds rather than one per join."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.client.remoting_client import RemotingChannel, RemotingClient
from broker.protocol.allocate import AllocateAveragely
from broker.protocol.bodies import MessageQueue, TopicConfig
from broker.protocol.codes import RequestCode
from broker.protocol.group_bodies import GetConsumerListByGroupResponseBody
from broker.protocol.headers import ConsumerGroupRequestHeader
from broker.protocol.remoting import RemotingCommand
from tests.broker.conftest import async_test, call, heartbeat_body, running_broker

pytestmark = pytest.mark.servers

CONSUMERS, QUEUES, GROUP, TOPIC = 500, 64, "G500", "Wide"


@async_test
async def test_five_hundred_consumers_split_every_queue_once(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, _):
        broker.topics.put(TopicConfig(TOPIC, QUEUES, QUEUES))
        notified = 0

        async def on_notify(request: RemotingCommand, channel: RemotingChannel) -> None:
            nonlocal notified
            notified += 1

        clients = [RemotingClient() for _ in range(CONSUMERS)]
        ids = [f"10.0.0.{i // 250}@c{i:03d}" for i in range(CONSUMERS)]
        try:
            for client, cid in zip(clients, ids, strict=True):
                client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
                body = heartbeat_body(cid, GROUP, {TOPIC: "*"})
                assert (await call(client, broker, RequestCode.HEART_BEAT, None, body)).code == 0
            header = ConsumerGroupRequestHeader(consumerGroup=GROUP)
            answers = await asyncio.gather(
                *(call(c, broker, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header) for c in clients[::25])
            )
            seen = [
                GetConsumerListByGroupResponseBody.from_json(a.body or b"").consumerIdList for a in answers
            ]
            assert all(sorted(s) == sorted(ids) for s in seen)
            queues = [MessageQueue(TOPIC, broker.config.broker_name, q) for q in range(QUEUES)]
            members = sorted(ids)
            owned = [q for cid in members for q in AllocateAveragely().allocate(GROUP, cid, queues, members)]
            assert sorted(owned) == sorted(queues)  # every queue once, none twice
            await asyncio.sleep(0.5)  # the last round of notifications arrives
            assert 0 < notified < CONSUMERS * CONSUMERS // 4  # rounds, not one per join (125 250)
        finally:
            await asyncio.gather(*(c.close() for c in clients))
