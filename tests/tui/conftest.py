"""A real NameServer + broker in a background thread, filled with topics, groups and dead letters,
and helpers to drive the dashboard with Textual's Pilot against it."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from admin.models import GroupSpec, TopicSpec
from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.codes import RequestCode
from broker.protocol.headers import ConsumerSendMsgBackRequestHeader, UpdateConsumerOffsetRequestHeader
from broker.protocol.msgid import UniqKeyGenerator, decode_offset_msg_id
from broker.protocol.remoting import make_request
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig
from tests.cli_online.conftest import heartbeat, keep_heartbeating, send

T = TypeVar("T")
TOPIC, GROUP, MESSAGES = "Orders", "orders-cg", 12
DLQ_GROUP, DLQ_TOPIC, DEAD = "pay-cg", "Payments", 3


@dataclass
class TuiCluster:
    namesrv: str
    broker: str
    loop: asyncio.AbstractEventLoop
    sent_ids: list[str]  # offset MessageIds of the Orders messages
    uniq_keys: list[str]
    client: RemotingClient

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(60)


def store_config(path: Path) -> StoreConfig:
    return StoreConfig(
        store_path=path,
        mapped_file_size_commit_log=1 << 20,
        mapped_file_size_consume_queue_units=1000,
        max_hash_slot_num=1000,
        max_index_num=4000,
    )


def namesrv_plan(path: Path) -> NodePlan:
    return NodePlan(
        namesrv=NamesrvConfig(
            listen_port=0,
            kv_config_path=path / "namesrv" / "kvConfig.json",
            config_store_path=path / "namesrv" / "namesrv.properties",
        )
    )


def broker_config(name: str, port: int = 0, namesrv: str = "") -> BrokerConfig:
    """A broker on ``port`` with every other listener on a free port or off."""
    config = BrokerConfig(broker_name=name, listen_host="127.0.0.1", listen_port=port, namesrv_addr=namesrv)
    config.grpc_port = -1
    if hasattr(config, "ha_listen_port"):
        config.ha_listen_port = 0
    return config


def broker_plan(path: Path, name: str, port: int = 0, namesrv: str = "") -> NodePlan:
    return NodePlan(broker=broker_config(name, port, namesrv), store=store_config(path))


def start_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="tui-node", daemon=True).start()
    return loop


async def dead_letters(client: RemotingClient, broker: str, topic: str, group: str, count: int) -> list[str]:
    """Send ``count`` messages to ``topic`` and dead-letter each for ``group`` (send back with delay
    level -1); returns their UNIQ_KEYs."""
    keys = []
    ids = UniqKeyGenerator()  # one generator: two made in the same millisecond give the same keys
    for i in range(count):
        key = ids.next()
        keys.append(key)
        answer = await send(
            client, broker, topic, f'{{"n": {i}}}'.encode(), 0, KEYS=f"dead-{i}", UNIQ_KEY=key
        )
        offset = decode_offset_msg_id(answer.msgId).offset
        header = ConsumerSendMsgBackRequestHeader(offset=offset, group=group, delayLevel=-1)
        response = await client.invoke(broker, make_request(RequestCode.CONSUMER_SEND_MSG_BACK, header), 10)
        assert response.code == 0, response.remark
    return keys


@pytest.fixture(scope="session")
def tui_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TuiCluster]:
    """Topic Orders (4 queues, 12 messages, keys order-N), group orders-cg (offsets at 2 per queue,
    online), and group pay-cg with 3 dead letters from topic Payments."""
    from admin.service import AdminService

    os.environ["TZ"] = "UTC"
    time.tzset()
    store = tmp_path_factory.mktemp("tui-store")
    plan = namesrv_plan(store)
    plan.broker = broker_config("broker-a")
    plan.store = store_config(store)
    node = Node(plan)
    loop = start_loop()

    async def setup() -> TuiCluster:
        await node.start()
        assert node.namesrv is not None and node.broker is not None
        namesrv, broker = f"127.0.0.1:{node.namesrv.port}", node.broker.address
        async with AdminService([namesrv], 10) as service:
            await service.wait_ready(20)
            await service.topic_create(TopicSpec(TOPIC, 4, 4))
            await service.topic_create(TopicSpec(DLQ_TOPIC, 2, 2))
            await service.group_create(GroupSpec(GROUP))
            await service.group_create(GroupSpec(DLQ_GROUP))
        client = RemotingClient()
        gen = UniqKeyGenerator()
        ids, keys = [], []
        for i in range(MESSAGES):
            keys.append(gen.next())
            answer = await send(
                client, broker, TOPIC, f"order {i}".encode(), i % 4,
                TAGS="even" if i % 2 == 0 else "odd", KEYS=f"order-{i} all", UNIQ_KEY=keys[-1],
            )  # fmt: skip
            ids.append(answer.msgId)
        for qid in range(4):
            header = UpdateConsumerOffsetRequestHeader(
                consumerGroup=GROUP, topic=TOPIC, queueId=qid, commitOffset=2
            )
            r = await client.invoke(broker, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, header), 10)
            assert r.code == 0, r.remark
        await heartbeat(client, broker, "10.0.0.9@tui", GROUP, TOPIC)
        await dead_letters(client, broker, DLQ_TOPIC, DLQ_GROUP, DEAD)
        return TuiCluster(namesrv, broker, loop, ids, keys, client)

    cluster = asyncio.run_coroutine_threadsafe(setup(), loop).result(60)
    beating = asyncio.run_coroutine_threadsafe(
        keep_heartbeating(cluster.client, cluster.broker, "10.0.0.9@tui", GROUP, TOPIC), loop
    )
    yield cluster
    beating.cancel()

    async def teardown() -> None:
        await cluster.client.close()
        await node.stop()

    asyncio.run_coroutine_threadsafe(teardown(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


async def until(check: Callable[[], bool], pilot: Any, timeout: float = 10.0, what: str = "") -> None:
    """Let the app run until ``check()`` holds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        await pilot.pause(0.05)


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())
