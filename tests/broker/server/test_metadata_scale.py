"""Metadata at fleet size, sized for CI: a NameServer and a broker in one process, as ``rmq up`` runs
them, take an apply of 2 000 topics and 400 groups without one full registration per topic, the
NameServer answers route lookups all along, and a restart finds everything."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest

from admin.metadata_file import load_metadata
from admin.models.metadata import MetadataPlan
from admin.service import AdminService
from admin.service.metadata import APPLY_BATCH
from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.bodies import TopicConfig
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import GetRouteInfoRequestHeader
from broker.protocol.remoting import make_request
from tests.broker.server.conftest import broker_config, small_store

pytestmark = pytest.mark.servers

T = TypeVar("T")
TOPICS, GROUPS = 2000, 400


class InProcessNode:
    """A NameServer + broker on a loop of their own thread; the test talks to them over TCP."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="scale-node", daemon=True).start()
        self.node: Node | None = None

    def run(self, coro: Any) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(120)

    def start(self) -> None:
        config = broker_config(register_name_server_period=60_000)  # no periodic one during a test
        plan = NodePlan(
            namesrv=NamesrvConfig(
                listen_port=0,
                kv_config_path=self.store / "namesrv" / "kvConfig.json",
                config_store_path=self.store / "namesrv" / "namesrv.properties",
            ),
            broker=config,
            store=small_store(self.store),
        )
        self.node = Node(plan)
        self.run(self.node.start())

    def stop(self) -> None:
        if self.node is not None:
            self.run(self.node.stop())
            self.node = None

    @property
    def namesrv(self) -> str:
        assert self.node is not None and self.node.namesrv is not None
        return f"127.0.0.1:{self.node.namesrv.port}"

    @property
    def broker(self) -> Any:
        assert self.node is not None
        return self.node.broker


@pytest.fixture
def node(tmp_path: Path) -> Iterator[InProcessNode]:
    running = InProcessNode(tmp_path)
    running.start()
    try:
        yield running
    finally:
        running.stop()
        running.loop.call_soon_threadsafe(running.loop.stop)


def _export(path: Path) -> Path:
    lines = []
    for i in range(TOPICS):
        lines.append(f"[topicConfigTable.fleet-{i:05d}]\nreadQueueNums = 8\nwriteQueueNums = 8\n")
    for i in range(GROUPS):
        lines.append(f"[subscriptionGroupTable.fleet-cg-{i:04d}]\nretryMaxTimes = 3\n")
    path.write_text("\n".join(lines))
    return path


async def _lookups_while(namesrv: str, work: asyncio.Future[Any]) -> list[int]:
    """Route lookups one after another until ``work`` is done; the answer codes of those asked
    while it ran (each must come within 3 s, or the lookup fails)."""
    client = RemotingClient()
    codes = []
    try:
        while not work.done():
            header = GetRouteInfoRequestHeader(topic="TBW102")
            request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
            codes.append((await client.invoke(namesrv, request, 3)).code)
            await asyncio.sleep(0.01)
    finally:
        await client.close()
    return codes


def test_apply_registers_changes_only_and_the_nameserver_keeps_answering(
    node: InProcessNode, tmp_path: Path
) -> None:
    doc = load_metadata(_export(tmp_path / "fleet.toml"), False)
    registration = node.broker.registration
    full_before = registration.sent_full

    async def apply_and_look_up() -> list[int]:
        async with AdminService([node.namesrv], 30) as service:
            work: asyncio.Future[MetadataPlan] = asyncio.ensure_future(service.metadata_apply(doc))
            codes = await _lookups_while(node.namesrv, work)
            plan = await work
            assert plan.pending == TOPICS + GROUPS and plan.applied
            route = await service.api.topic_route([node.namesrv], f"fleet-{TOPICS - 1:05d}")
            assert route.queueDatas[0].writeQueueNums == 8
            assert len((await service.topic_list()).topics) >= TOPICS
        return codes

    codes = asyncio.run(apply_and_look_up())
    assert len(codes) >= 3 and set(codes) == {ResponseCode.SUCCESS}
    assert registration.sent_full == full_before  # every change went as the changed topics only
    assert 1 <= registration.sent_increments <= TOPICS // APPLY_BATCH + 1  # at most one per batch

    node.stop()
    node.start()  # the coalesced saves reached the disk before the broker stopped
    topics, groups = node.broker.topics.table, node.broker.groups.table
    assert sum(t.startswith("fleet-") for t in topics) == TOPICS
    assert sum(g.startswith("fleet-cg-") for g in groups) == GROUPS


def test_single_creates_send_one_topic_each_and_are_routed_when_answered(node: InProcessNode) -> None:
    registration = node.broker.registration
    full_before, increments_before = registration.sent_full, registration.sent_increments

    async def create_and_route() -> None:
        async with AdminService([node.namesrv], 10) as service:
            broker = (await service.cluster_list()).brokers[0].address
            for i in range(20):
                await service.api.create_topic(broker, TopicConfig(f"single-{i}", 2, 2))
                route = await service.api.topic_route([node.namesrv], f"single-{i}")
                assert route.queueDatas[0].readQueueNums == 2

    asyncio.run(create_and_route())
    assert registration.sent_full == full_before
    assert registration.sent_increments - increments_before == 20
