"""Dashboard benchmark: with 1 000 topics and 200 groups, the time one refresh of the topics and the
groups screens spends in the admin service, and how long a key press waits while a refresh runs."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

Result = dict[str, object]
SERVICE_TARGET_US = 500_000.0  # 500 ms


def _result(name: str, value: float, unit: str, target: float | None = None, note: str = "") -> Result:
    return {
        "name": name,
        "value": round(value, 1),
        "unit": unit,
        "target": target,
        "baseline": None,
        "baseline_value": None,
        "note": note,
    }


async def _fill(namesrv: str, topics: int, groups: int) -> None:
    from admin.service import AdminService
    from broker.protocol.bodies import SubscriptionGroupConfig, TopicConfig

    async with AdminService([namesrv], 30) as service:
        await service.wait_ready(30)
        addr = next(iter((await service.cluster_list()).brokers)).address
        sem = asyncio.Semaphore(32)

        async def topic(i: int) -> None:
            async with sem:
                await service.api.create_topic(
                    addr,
                    TopicConfig(topicName=f"bench-topic-{i:04d}", readQueueNums=4, writeQueueNums=4, perm=6),
                )

        async def group(i: int) -> None:
            async with sem:
                await service.api.create_group(addr, SubscriptionGroupConfig(groupName=f"bench-cg-{i:03d}"))

        await asyncio.gather(*(topic(i) for i in range(topics)), *(group(i) for i in range(groups)))
        # the NameServer learns the new topics at the broker's next registration
        deadline = time.monotonic() + 60
        while len((await service.topic_list()).topics) < topics and time.monotonic() < deadline:
            await asyncio.sleep(0.5)


async def _measure(namesrv: str, rounds: int) -> tuple[list[float], list[float], list[float]]:
    from admin.service import AdminService
    from admin.tui import DashboardApp

    topics_ms: list[float] = []
    groups_ms: list[float] = []
    keys_ms: list[float] = []
    app = DashboardApp(lambda: AdminService([namesrv], 10), target=namesrv, refresh=0, deadline=30)
    async with app.run_test(size=(120, 40)) as pilot:
        for mode, sink in (("topics", topics_ms), ("groups", groups_ms)):
            await pilot.press("2" if mode == "topics" else "3")
            screen: Any = app.screen
            while screen.latest is None or screen.busy:
                await pilot.pause(0.01)
            for _ in range(rounds):
                screen.action_refresh_now()
                await pilot.pause(0)
                while screen.busy:  # keys pressed while the refresh runs
                    began = time.perf_counter()
                    await pilot.press("down")
                    keys_ms.append((time.perf_counter() - began) * 1000)
                    await pilot.pause(0.005)
                sink.append(screen.service_ms)
    return topics_ms, groups_ms, keys_ms


def run(quick: bool = False) -> list[Result]:
    from broker.namesrv.config import NamesrvConfig
    from broker.server.config import BrokerConfig
    from broker.server.node import Node, NodePlan
    from broker.store.config import StoreConfig

    topics, groups, rounds = 1000, 200, 3 if quick else 10
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        broker = BrokerConfig(broker_name="bench-broker", listen_host="127.0.0.1", listen_port=0)
        broker.grpc_port = -1
        if hasattr(broker, "ha_listen_port"):
            broker.ha_listen_port = 0
        namesrv_cfg = NamesrvConfig(
            listen_port=0,
            kv_config_path=root / "ns" / "kv.json",
            config_store_path=root / "ns" / "namesrv.properties",
        )
        node = Node(
            NodePlan(namesrv=namesrv_cfg, broker=broker, store=StoreConfig(store_path=root / "store"))
        )
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(node.start(), loop).result(60)
        assert node.namesrv is not None
        namesrv = f"127.0.0.1:{node.namesrv.port}"
        try:
            asyncio.run_coroutine_threadsafe(_fill(namesrv, topics, groups), loop).result(300)
            topics_ms, groups_ms, keys_ms = asyncio.run(_measure(namesrv, rounds))
        finally:
            asyncio.run_coroutine_threadsafe(node.stop(), loop).result(60)
            loop.call_soon_threadsafe(loop.stop)
    note = f"{topics} topics, {groups} groups, median of {rounds}"
    p95 = sorted(keys_ms)[int(len(keys_ms) * 0.95)] if keys_ms else 0.0
    return [
        _result(
            "tui topics refresh in service",
            statistics.median(topics_ms) * 1000,
            "us",
            SERVICE_TARGET_US,
            note,
        ),
        _result(
            "tui groups refresh in service",
            statistics.median(groups_ms) * 1000,
            "us",
            SERVICE_TARGET_US,
            note,
        ),
        _result(
            "tui key latency during refresh p95",
            p95 * 1000,
            "us",
            None,
            f"{len(keys_ms)} keys pressed while refreshing, max {max(keys_ms, default=0):.1f} ms",
        ),
    ]
