"""``rmq group rebalances``: the broker records which SDK consumer took which queue when, whoever
watches, and keeps it across a restart."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from broker.client import ConsumeConcurrentlyStatus, MessageExt, PushConsumer
from broker.node import Node
from tests.cli.online.conftest import _start_loop, node_plan

Rmq = Callable[..., Result]
pytestmark = pytest.mark.servers
TOPIC, GROUP = "RebalanceTopic", "rebalance-cg"


def _consumer(namesrv: str) -> PushConsumer:
    async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(GROUP, namesrv, rebalance_interval=1.0)
    consumer.subscribe(TOPIC)
    consumer.register_message_listener_concurrently(listen)
    return consumer


class Node_:
    """A node in a thread of its own that can be restarted on the same store."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.loop = _start_loop()
        self.node = Node(node_plan(store))
        self.namesrv = self.call(self._start())

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    async def _start(self) -> str:
        from admin.service import AdminService

        await self.node.start()
        assert self.node.namesrv is not None
        namesrv = f"127.0.0.1:{self.node.namesrv.port}"
        async with AdminService([namesrv], 10) as service:
            await service.wait_ready(20)
        return namesrv

    def restart(self) -> None:
        self.call(self.node.stop())
        self.node = Node(node_plan(self.store))
        self.namesrv = self.call(self._start())

    def stop(self) -> None:
        self.call(self.node.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)


def _history(rmq: Rmq, namesrv: str, *args: str) -> dict[str, Any]:
    result = rmq("group", "rebalances", GROUP, "-n", namesrv, "-o", "json", *args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _holders(data: dict[str, Any]) -> dict[int, str]:
    return {h["queueId"]: h["clientId"] for h in data["holders"] if h["topic"] == TOPIC}


def _all_held_by(data: dict[str, Any], client: str) -> bool:
    holders = _holders(data)
    return len(holders) == 4 and set(holders.values()) == {client}


def _wait(rmq: Rmq, namesrv: str, check: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for _ in range(150):
        data = _history(rmq, namesrv)
        if check(data):
            return data
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}: {data}")


def test_the_broker_records_who_took_which_queue_and_keeps_it(tmp_path: Path, rmq: Rmq) -> None:
    from admin.models import GroupSpec, TopicSpec
    from admin.service import AdminService

    node = Node_(tmp_path / "store")
    first, second = _consumer(node.namesrv), _consumer(node.namesrv)
    running: list[PushConsumer] = []
    try:

        async def start_first() -> None:
            async with AdminService([node.namesrv], 10) as service:
                await service.topic_create(TopicSpec(TOPIC, 4, 4))
                await service.group_create(GroupSpec(GROUP))
            await first.start()
            running.append(first)

        node.call(start_first())
        alone = _wait(
            rmq,
            node.namesrv,
            lambda d: _all_held_by(d, first.client_id),
            "the first consumer to hold every queue",
        )
        assert not alone["moves"]  # taking queues nobody held is no move
        node.call(second.start())
        running.append(second)
        shared = _wait(
            rmq, node.namesrv,
            lambda d: set(_holders(d).values()) == {first.client_id, second.client_id}
            and sum(m["topic"] == TOPIC for m in d["moves"]) >= 2,  # each queue moves on its own pull
            "the second consumer to take its share",
        )  # fmt: skip
        joined = [m for m in shared["moves"] if m["topic"] == TOPIC]
        assert len(joined) == 2
        assert all((m["fromClient"], m["toClient"]) == (first.client_id, second.client_id) for m in joined)
        after_join = max(m["timestamp"] for m in joined) + 1
        node.call(first.shutdown())
        running.remove(first)
        left = _wait(
            rmq,
            node.namesrv,
            lambda d: _all_held_by(d, second.client_id),
            "the second to take the first's queues",
        )
        moves = [(m["queueId"], m["fromClient"], m["toClient"]) for m in left["moves"] if m["topic"] == TOPIC]
        assert sorted(q for q, _, _ in moves) == [0, 1, 2, 3]  # every queue moved once, to the second
        assert {(f, t) for _, f, t in moves} == {(first.client_id, second.client_id)}
        assert not left["flapping"] and left["group"] == GROUP
        since = _history(rmq, node.namesrv, "--since", str(after_join))
        assert len([m for m in since["moves"] if m["topic"] == TOPIC]) == 2  # the moves when it left
        node.call(second.shutdown())
        running.remove(second)
        node.restart()
        kept = _history(rmq, node.namesrv)
        assert kept["moves"] == left["moves"]
        assert _holders(kept) == _holders(left)
        assert not any(h["online"] for h in kept["holders"])
        table = rmq("group", "rebalances", GROUP, "-n", node.namesrv)
        assert table.exit_code == 0 and second.client_id in table.stdout, table.output
    finally:
        for consumer in running:
            node.call(consumer.shutdown())
        node.stop()


def test_a_group_no_broker_knows_is_not_found(tmp_path: Path, rmq: Rmq) -> None:
    node = Node_(tmp_path / "store")
    try:
        result = rmq("group", "rebalances", "no-such-group", "-n", node.namesrv)
        assert result.exit_code != 0 and "not found" in result.stderr
    finally:
        node.stop()
