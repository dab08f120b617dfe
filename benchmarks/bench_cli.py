"""CLI benchmark: cold start of ``rmq topic list`` beside ``python -c pass`` (the interpreter's own
start, measured in the same run, alternating with it), and the list/status views over 1 000 topics and
500 groups, against a NameServer + broker that ``rmq up`` runs in a process of its own (targets: start
<= 300 ms, views <= 1 s).

``rmq up`` writes its ``local`` profile to a temporary config file, so ``rmq topic list`` runs exactly as
an operator types it, without flags, on a terminal (a pseudo-terminal of 120 columns) and piped. Start
times are measured with Python's bytecode cache in a temporary folder, warmed by one untimed run, as for
an installed ``rmq``; one more row shows the start with the cache turned off (PYTHONDONTWRITEBYTECODE),
where every project module is compiled on each run.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from admin.models import GroupSpec
from admin.service import AdminService
from broker.protocol.bodies import TopicConfig
from broker.protocol.group_bodies import SubscriptionGroupConfig

Result = dict[str, object]
TOPICS = 1000
GROUPS = 500
START_TARGET_US = 300_000
VIEW_TARGET_US = 1_000_000
_RMQ = "import sys, cli.main; sys.exit(cli.main.main())"
_NAMESRV_LINE = re.compile(r"NAMESRV_ADDR=(\S+)")


def _result(
    name: str, value_us: float, target: float | None, baseline: tuple[str, float] | None, note: str
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


def _rmq() -> list[str]:
    script = Path(sys.executable).with_name("rmq")
    return [str(script)] if script.exists() else [sys.executable, "-c", _RMQ]


def _on_terminal(argv: list[str], env: dict[str, str]) -> None:
    """Run ``argv`` with its stdout on a pseudo-terminal of 120 columns, reading what it writes."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        argv, stdout=side, stderr=subprocess.DEVNULL, env={**env, "TERM": "xterm-256color"}
    )
    os.close(side)
    try:
        while os.read(main, 65536):
            pass
    except OSError:  # EIO: the command closed the terminal
        pass
    finally:
        os.close(main)
    if proc.wait():
        raise subprocess.CalledProcessError(proc.returncode, argv)


def _wall_us(argvs: list[list[str]], runs: int, env: dict[str, str], terminal: bool = False) -> list[float]:
    """Median wall time of a fresh process for each command, running them in turn ``runs`` times so
    that the machine's load falls on all alike."""
    times: list[list[float]] = [[] for _ in argvs]
    for _ in range(runs):
        for argv, samples in zip(argvs, times, strict=True):
            began = time.perf_counter()
            if terminal:
                _on_terminal(argv, env)
            else:
                subprocess.run(argv, check=True, capture_output=True, env=env)
            samples.append((time.perf_counter() - began) * 1e6)
    return [statistics.median(samples) for samples in times]


class UpProcess(NamedTuple):
    namesrv: str  # the NameServer's address
    pid: int


@contextmanager
def rmq_up(root: Path, env: dict[str, str]) -> Iterator[UpProcess]:
    """``rmq up`` on free ports with a store under ``root`` (kept between runs: a second run is a
    restart); stopped with SIGTERM, as an operator stops it."""
    cmd = [sys.executable, "-c", _RMQ, "up", "--store", str(root / "store"), "--namesrv-port", "0",
           "--broker-port", "0", "--no-http", "--grpc-port", "-1", "--set", "haListenPort=0"]  # fmt: skip
    with (root / "rmq-up.log").open("a") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        try:
            assert proc.stdout is not None
            banner = ""
            while not (found := _NAMESRV_LINE.search(banner)):
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"rmq up exited with {proc.wait()}; see {root / 'rmq-up.log'}")
                banner += line
            yield UpProcess(found.group(1), proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)


async def _wait_ready(namesrv: str) -> None:
    async with AdminService([namesrv], 10) as service:
        await service.wait_ready(30)


async def _populate(namesrv: str, topics: int, groups: int) -> None:
    async with AdminService([namesrv], 60) as service:
        broker = (await service.cluster_list()).brokers[0].address
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


def _start_rows(rmq: list[str], runs: int, cached: dict[str, str], uncached: dict[str, str]) -> list[Result]:
    python = [sys.executable, "-c", "pass"]
    _wall_us([python, rmq], 1, cached)  # fills the bytecode cache
    rows = []
    for name, env, terminal, target, note in [
        ("cold_start_topic_list", cached, True, START_TARGET_US, "after rmq up, no flags, on a terminal"),
        ("cold_start_topic_list_piped", cached, False, START_TARGET_US, "the same, stdout piped"),
        # for comparison only: an install always has its bytecode
        ("cold_start_topic_list_no_bytecode", uncached, True, None, "on a terminal, compiling every module"),
    ]:
        base, value = _wall_us([python, rmq], runs, env, terminal)
        rows.append(_result(name, value, target, ("python -c pass", base), f"{note}; {runs} runs"))
    return rows


def run(quick: bool) -> list[Result]:
    runs = 5 if quick else 15
    view_runs = 3 if quick else 9
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench_cli_", dir=os.environ.get("RMQ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k not in ("RMQ_PROFILE", "NAMESRV_ADDR")}
        env["RMQ_CONFIG"] = str(root / "config.toml")  # rmq up's local profile goes here
        cached = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        # an empty cache folder that is never written: every module is compiled on every run
        uncached = {**env, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(root / "empty")}
        with rmq_up(root, env) as (namesrv, _pid):
            asyncio.run(_wait_ready(namesrv))
            results += _start_rows([*_rmq(), "topic", "list"], runs, cached, uncached)
            asyncio.run(_populate(namesrv, TOPICS, GROUPS))
            size = f"{TOPICS} topics, {GROUPS} groups"
            views: list[tuple[str, Callable[[AdminService], Awaitable[object]]]] = [
                ("view_topic_list", lambda s: s.topic_list()),
                ("view_group_list", lambda s: s.group_list()),
                ("view_cluster_list", lambda s: s.cluster_list()),
                ("view_topic_status", lambda s: s.topic_status("bench-topic-0001")),
                ("view_group_lag", lambda s: s.group_lag("bench-extra")),
            ]
            for name, fn in views:
                value = asyncio.run(_timed(namesrv, fn, view_runs))
                results.append(_result(name, value, VIEW_TARGET_US, None, f"{size}, rmq up process"))
            python, full = _wall_us(
                [[sys.executable, "-c", "pass"], [*_rmq(), "topic", "list", "-a", "-o", "json"]],
                view_runs,
                cached,
            )
            results.append(
                _result(
                    "cli_topic_list_1000",
                    full,
                    VIEW_TARGET_US,
                    ("python -c pass", python),
                    f"{size}, whole process",
                )
            )
    return results
