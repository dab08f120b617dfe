"""CLI benchmark: cold start of ``rmq topic list`` beside ``python -c pass`` (the interpreter's own
start, measured in the same run), and the list/status views over 1 000 topics and 500 groups
against a real in-process NameServer + broker (targets: start <= 300 ms, views <= 1 s)."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from admin.models import GroupSpec
from admin.service import AdminService
from broker.namesrv.config import NamesrvConfig
from broker.protocol.bodies import SubscriptionGroupConfig, TopicConfig
from broker.server.config import BrokerConfig
from broker.server.node import Node, NodePlan
from broker.store.config import StoreConfig

Result = dict[str, object]
T = TypeVar("T")
TOPICS = 1000
GROUPS = 500
START_TARGET_US = 300_000
VIEW_TARGET_US = 1_000_000


def _result(
    name: str, value_us: float, target: float, baseline: tuple[str, float] | None, note: str
) -> Result:
    return {
        "name": name,
        "value": round(value_us, 1),
        "unit": "us",
        "target": target,
        "baseline": baseline[0] if baseline else None,
        "baseline_value": round(baseline[1], 1) if baseline else None,
        "note": note,
    }


def _wall_us(argv: list[str], runs: int, env: dict[str, str]) -> float:
    """Median wall time of a fresh process."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        times.append((time.perf_counter() - began) * 1e6)
    return statistics.median(times)


def _rmq() -> list[str]:
    script = Path(sys.executable).with_name("rmq")
    return (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "import sys, cli.main; sys.exit(cli.main.main())"]
    )


class _Node:
    """A NameServer + broker on a background event loop."""

    def __init__(self, root: Path) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.node = Node(
            NodePlan(
                namesrv=NamesrvConfig(
                    listen_port=0, kv_config_path=root / "kv.json", config_store_path=root / "ns.properties"
                ),
                broker=BrokerConfig(broker_name="bench", listen_host="127.0.0.1", listen_port=0, http_port=0),
                store=StoreConfig(store_path=root / "store"),
            )
        )
        self.call(self.node.start())
        assert self.node.namesrv is not None and self.node.broker is not None
        self.namesrv = f"127.0.0.1:{self.node.namesrv.port}"
        self.broker = self.node.broker.address

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(600)

    def close(self) -> None:
        self.call(self.node.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)


async def _populate(namesrv: str, broker: str, topics: int, groups: int) -> None:
    async with AdminService([namesrv], 60) as service:
        await service.wait_ready(30)
        for i in range(topics):  # the broker persists its table on every change: one at a time
            await service.api.create_topic(broker, TopicConfig(f"bench-topic-{i:04d}", 4, 4))
        for i in range(groups):
            await service.api.create_group(broker, SubscriptionGroupConfig(f"bench-group-{i:03d}"))
        await service.group_create(GroupSpec("bench-extra"))


async def _timed(namesrv: str, fn: Callable[[AdminService], Awaitable[object]], runs: int) -> float:
    """Median time of a view with a fresh service (connections included), in microseconds."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        async with AdminService([namesrv], 10) as service:
            await fn(service)
        times.append((time.perf_counter() - began) * 1e6)
    return statistics.median(times)


def run(quick: bool) -> list[Result]:
    runs = 3 if quick else 9
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench_cli_", dir=os.environ.get("RMQ_BENCH_DIR")) as tmp:
        node = _Node(Path(tmp))
        try:
            env = {k: v for k, v in os.environ.items() if k not in ("RMQ_PROFILE", "NAMESRV_ADDR")}
            env["RMQ_CONFIG"] = str(Path(tmp) / "config.toml")
            python = _wall_us([sys.executable, "-c", "pass"], runs, env)
            baseline = ("python -c pass", python)
            cold = _wall_us([*_rmq(), "topic", "list", "-n", node.namesrv], runs, env)
            results.append(
                _result(
                    "cold_start_topic_list", cold, START_TARGET_US, baseline, "empty cluster, whole process"
                )
            )
            node.call(_populate(node.namesrv, node.broker, TOPICS, GROUPS))
            size = f"{TOPICS} topics, {GROUPS} groups"
            views: list[tuple[str, Callable[[AdminService], Awaitable[object]]]] = [
                ("view_topic_list", lambda s: s.topic_list()),
                ("view_group_list", lambda s: s.group_list()),
                ("view_cluster_list", lambda s: s.cluster_list()),
                ("view_topic_status", lambda s: s.topic_status("bench-topic-0001")),
                ("view_group_lag", lambda s: s.group_lag("bench-extra")),
            ]
            for name, fn in views:
                value = node.call(_timed(node.namesrv, fn, runs))
                results.append(_result(name, value, VIEW_TARGET_US, None, f"{size}, in-process broker"))
            full = _wall_us([*_rmq(), "topic", "list", "-a", "-o", "json", "-n", node.namesrv], runs, env)
            results.append(
                _result("cli_topic_list_1000", full, VIEW_TARGET_US, baseline, f"{size}, whole process")
            )
        finally:
            node.close()
    return results
