"""Remoting benchmark: the project's end-to-end targets, each beside the transport-only baseline.

The broker runs as ``rmq up --no-http`` in its own process and so does the baseline server, so the
load generator (this process) shares no GIL with either. Each case runs ``repeats`` times and
reports medians: throughput in msg/s, and for the synchronous-producer case the p99 latency too. The
``sdk_*`` cases run the SDK (broker.client) and the low-level client back to back and report sdkRatio,
SDK msg/s / low-level msg/s, in percent (target >= 80 %).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from admin.bench import runner
from admin.bench.runner import Baseline, BenchOptions, BenchResult, Flush, bench_consume, bench_produce
from admin.bench.stats import Rates

Result = dict[str, object]
_RMQ = "import sys; from cli.main import main; sys.exit(main(sys.argv[1:]))"
_NAMESRV_LINE = re.compile(r"^NameServer\s+(\S+:\d+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    target: float
    flush: Flush = Flush.ASYNC
    consume: bool = False
    options: dict[str, int] = field(default_factory=dict)
    note: str = ""
    client: runner.Client = runner.Client.REMOTING  # BOTH: SDK vs low-level; ``target`` in %
    settings: tuple[str, ...] = ()  # broker ``--set KEY=VALUE`` overrides


TUNED = (f"commitLogCacheWindow={256 << 20}",)
# batches of 32: 16 in flight on each of 2 connections, so the broker always has a request queued
# while the load generator answers (with 8 it waits ~10 % of the time)
BATCHES = {"batch": 32, "connections": 2, "inflight": 16}
CASES = [
    Case(
        "send_1k_64_sync_producers", 25_000, options={"producers": 64}, note="SEND_MESSAGE_V2, 1 connection"
    ),
    Case("send_1k_pipelined_4x32", 50_000, options={"connections": 4, "inflight": 32}),
    Case("send_1k_batch32_async", 200_000, options=BATCHES),
    Case("send_1k_batch32_sync", 120_000, Flush.SYNC, options=BATCHES),
    # the same loads on a broker tuned for sends (off by default): a CommitLog page-cache window that
    # keeps the broker reusing its memory
    *(
        Case(f"{name}_tuned", target, flush, options=options, settings=TUNED)
        for name, target, flush, options in [
            ("send_1k_64_sync_producers", 25_000, Flush.ASYNC, {"producers": 64}),
            ("send_1k_pipelined_4x32", 50_000, Flush.ASYNC, {"connections": 4, "inflight": 32}),
            ("send_1k_batch32_async", 200_000, Flush.ASYNC, BATCHES),
            ("send_1k_batch32_sync", 120_000, Flush.SYNC, BATCHES),
        ]
    ),
    Case("pull_32_page_cache", 600_000, consume=True, options={"connections": 2, "inflight": 8}),
    *(
        Case(name, 80, consume=consume, options=options, client=runner.Client.BOTH)
        for name, consume, options in [
            ("sdk_send_1k_batch32", False, {"batch": 32, "connections": 2, "inflight": 8}),
            ("sdk_send_1k_16_inflight", False, {"inflight": 16}),
            ("sdk_pull_32", True, {"connections": 2, "inflight": 8}),
        ]
    ),
]


@contextmanager
def broker_process(flush: Flush, settings: tuple[str, ...] = ()) -> Iterator[str]:
    """``rmq up`` on free ports with a temporary store; yields the NameServer address."""
    with tempfile.TemporaryDirectory(prefix="bench_remoting_") as tmp:
        cmd = [sys.executable, "-c", _RMQ, "up", "--store", str(Path(tmp) / "store"), "--namesrv-port", "0",
               "--broker-port", "0", "--no-http", "--grpc-port", "-1", "--set", "haListenPort=0",
               "--set", f"flushDiskType={flush.name}_FLUSH"]  # fmt: skip
        cmd += [arg for kv in settings for arg in ("--set", kv)]
        env = {**os.environ, "RMQ_CONFIG": str(Path(tmp) / "config.toml")}  # keep the user's profiles
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None
            banner = ""
            while not (found := _NAMESRV_LINE.search(banner)):
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"rmq up exited with {proc.wait()} before it was up")
                banner += line
            yield found.group(1)
        finally:
            proc.terminate()
            proc.wait(30)


def _median(runs: list[Rates], pick: str) -> float:
    if pick == "p99":
        return statistics.median(r.latency_ms.p99 * 1000 for r in runs)
    return statistics.median(r.msgs_per_sec for r in runs)


def _row(name: str, value: float, unit: str, target: float, baseline: float | None, note: str) -> Result:
    return {
        "name": name,
        "value": round(value, 1),
        "unit": unit,
        "target": target,
        "baseline": f"transport_only_{unit.replace('/', '_per_')}" if baseline is not None else None,
        "baseline_value": round(baseline, 1) if baseline is not None else None,
        "note": note,
    }


def run(quick: bool) -> list[Result]:
    repeats, duration, warmup = (1, 2.0, 0.5) if quick else (3, 5.0, 1.0)
    results: list[Result] = []
    for flush, settings in dict.fromkeys((c.flush, c.settings) for c in CASES):  # one broker each
        cases = [c for c in CASES if (c.flush, c.settings) == (flush, settings)]
        with broker_process(flush, settings) as namesrv:
            for case in cases:
                runs: list[BenchResult] = []
                for i in range(repeats):
                    # each run starts on a quiet disk: the write-back of the runs before it (gigabytes
                    # after the async cases) would otherwise compete with this run's fdatasync calls
                    os.sync()
                    opts = BenchOptions(
                        topic=f"Bench_{case.name}", namesrv=namesrv, duration=duration, warmup=warmup,
                        flush=flush, prefill=100_000 if quick else 300_000, client=case.client,
                        baseline=Baseline.OFF if case.client is runner.Client.BOTH else Baseline.PROCESS,
                    )  # fmt: skip
                    for key, value in case.options.items():
                        setattr(opts, key, value)
                    bench = bench_consume if case.consume else bench_produce
                    runs.append(bench(opts, _quiet))
                    print(
                        f"#   {case.name} run {i + 1}: {runs[-1].broker.msgs_per_sec:,.0f} msg/s",
                        file=sys.stderr,
                    )
                if case.client is runner.Client.BOTH:
                    results.append(_sdk_row(case, runs))
                    continue
                broker = [r.broker for r in runs]
                base = [r.baseline for r in runs if r.baseline is not None]
                p99 = _median(broker, "p99") / 1000
                note = f"{case.note + '; ' if case.note else ''}p99 {p99:.1f} ms; median of {repeats}"
                results.append(_row(case.name, _median(broker, "rate"), "msg/s", case.target,
                                    _median(base, "rate") if base else None, note))  # fmt: skip
                if case.options.get("producers"):
                    base_p99 = _median(base, "p99") if base else None
                    results.append(
                        _row(
                            f"{case.name}_p99",
                            _median(broker, "p99"),
                            "us",
                            10_000.0,
                            base_p99,
                            "request latency",
                        )
                    )
    return results


def _sdk_row(case: Case, runs: list[BenchResult]) -> Result:
    """The median sdkRatio in percent, with both clients' median rates in the note."""
    sdk = statistics.median(r.sdk.msgs_per_sec for r in runs if r.sdk is not None)
    low = statistics.median(r.broker.msgs_per_sec for r in runs)
    ratio = statistics.median(r.sdk_ratio or 0.0 for r in runs)
    note = f"SDK {sdk:,.0f} vs low-level {low:,.0f} msg/s; median of {len(runs)}"
    return {"name": case.name, "value": round(ratio * 100, 1), "unit": "%", "target": case.target,
            "baseline": None, "baseline_value": None, "note": note}  # fmt: skip


def _quiet(label: str, rates: Rates) -> None:
    """Per-second figures are not shown here; the medians are."""
