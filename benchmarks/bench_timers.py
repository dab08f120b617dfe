"""Timer messages at 10^5, 10^6 and 10^7 pending (``--quick``: 10^4 and 10^5): an ``rmq up`` process
holds them while its heap (anonymous resident memory) and whole RSS are read, then delivers a burst
of timers due together and a probe stream whose lateness is measured, then is killed and restarted.

The pending timers are written into the store folder before the broker starts, by the send path's own
parking function and the store's append (sending ten million over the network would take this machine
longer than the rest of the run); the broker takes them from the timer queue onto its wheel exactly
as it takes sent ones. The intake cost per timer is printed beside the store's own append cost per
message (the machine limit), and every per-size figure beside the smallest size's.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import PullMessageRequestHeader
from broker.protocol.message import BatchItem, decode_records, encode_batch
from broker.protocol.msgid import UniqKeyGenerator
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import make_request
from broker.server.timer_service import park_timer_message
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage
from broker.store.timer_store import TimerStore

Result = dict[str, object]
PENDING_TOPIC = "BenchTimerPending"
LOAD_TOPIC = "BenchTimerLoad"
PROBE_TOPIC = "BenchTimerProbe"
PULL_SUBSCRIPTION = 0x4  # the pull carries its subscription
FILL_BATCH = 1000
# timers due within the same two seconds as the probes: a quarter of what this machine's store can
# append in that time (at most 20,000), so the broker is busy but not asked for more than it can do
LOAD_SHARE = 0.25
LOAD_MAX = 20_000
PROBES = 200
PRECISION_MS = 1000
# a timer is due at the end of its precision step; what it may take beyond that to be re-put under load
HANDLING_MS = 200
MiB = 1 << 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _fill(store_path: Path, count: int) -> float:
    """Park ``count`` timers due in one to two hours; seconds per appended message."""
    config = StoreConfig(store_path=store_path)
    store = MessageStore(config)
    store.start()
    now = int(time.time() * 1000)
    ids = UniqKeyGenerator()
    began = time.perf_counter()
    try:
        for start in range(0, count, FILL_BATCH):
            batch = []
            for i in range(start, min(start + FILL_BATCH, count)):
                due = now + 3_600_000 + i * 3_600_000 // count
                props = {"TIMER_DELIVER_MS": str(due), "KEYS": f"k{i}", "UNIQ_KEY": ids.next()}
                msg = PutMessage(PENDING_TOPIC, i % 4, b"pending timer %d" % i, props, born_timestamp=now)
                park_timer_message(msg, config, now)
                batch.append(msg)
            result = store.append(batch)
            assert result.ok, result.remark
    finally:
        store.shutdown()
    return (time.perf_counter() - began) / count


def _open_timer_files(store_path: Path) -> float:
    """Seconds the timer files' crash recovery takes (what the broker does first when it starts)."""
    config = StoreConfig(store_path=store_path)
    began = time.perf_counter()
    files = TimerStore(store_path, config.timer_precision_ms, config.mapped_file_size_timer_log)
    files.open()
    elapsed = time.perf_counter() - began
    files.close()
    return elapsed


def _memory(pid: int) -> tuple[int, int]:
    """(RssAnon, VmRSS) of a process, in bytes."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return int(fields["RssAnon"].split()[0]) * 1024, int(fields["VmRSS"].split()[0]) * 1024


class _Up:
    """``rmq up`` on free ports for one store folder."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.port = _free_port()
        self.namesrv_port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.addr = f"127.0.0.1:{self.port}"

    async def start(self, admin: AdminApi) -> float:
        """Start and wait until it answers; the seconds that took."""
        rmq = Path(sys.executable).with_name("rmq")
        cmd = [str(rmq), "up", "--store", str(self.store), "--no-http", "--broker-port", str(self.port),
               "--namesrv-port", str(self.namesrv_port), "--set", "grpcPort=-1"]  # fmt: skip
        began = time.perf_counter()
        log = (self.store.parent / "rmq-up.log").open("ab")
        env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        while True:
            assert self.proc.poll() is None, (self.store.parent / "rmq-up.log").read_text()[-2000:]
            try:
                await admin.runtime_info(self.addr)
                return time.perf_counter() - began
            except Exception:  # not listening yet
                await asyncio.sleep(0.1)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(120)


async def _taken_in(admin: AdminApi, addr: str) -> float:
    """Wait until every stored timer is on the wheel; seconds waited."""
    began = time.perf_counter()
    while (await admin.runtime_info(addr))["timerOffsetBehind"] != "0":
        await asyncio.sleep(0.2)
    return time.perf_counter() - began


async def _send_timers(client: RemotingClient, addr: str, topic: str, due: list[int]) -> None:
    for start in range(0, len(due), 500):
        items = [BatchItem(0, b"%d" % ms, encode_properties({"TIMER_DELIVER_MS": str(ms)}))
                 for ms in due[start : start + 500]]  # fmt: skip
        ext = {
            "a": "PG",
            "b": topic,
            "c": "TBW102",
            "d": "1",
            "e": "0",
            "f": "0",
            "g": "0",
            "h": "0",
            "m": "true",
        }
        request = make_request(RequestCode.SEND_BATCH_MESSAGE, ext_fields=ext, body=encode_batch(items))
        while (answer := await client.invoke(addr, request, 30)).code == ResponseCode.SYSTEM_BUSY:
            await asyncio.sleep(0.2)
        assert answer.code == ResponseCode.SUCCESS, answer.remark


async def _lateness(client: RemotingClient, addr: str, load: int) -> list[int]:
    """A burst of ``load`` timers and PROBES probes due over the same two seconds; each probe's
    delivery (its re-put's store time) minus its requested time, in ms."""
    start = int(time.time() * 1000) + 4000
    await _send_timers(client, addr, LOAD_TOPIC, [start + i * 2000 // load for i in range(load)])
    start = max(start, int(time.time() * 1000) + 1500)
    await _send_timers(client, addr, PROBE_TOPIC, [start + i * 2000 // PROBES for i in range(PROBES)])
    lateness: list[int] = []
    offset = 0
    deadline = time.monotonic() + 60
    while len(lateness) < PROBES and time.monotonic() < deadline:
        header = PullMessageRequestHeader(
            consumerGroup="bench",
            topic=PROBE_TOPIC,
            queueId=0,
            queueOffset=offset,
            maxMsgNums=32,
            sysFlag=PULL_SUBSCRIPTION,
            commitOffset=0,
            suspendTimeoutMillis=0,
            subscription="*",
            subVersion=0,
        )
        answer = await client.invoke(addr, make_request(RequestCode.PULL_MESSAGE, header), 10)
        records = list(decode_records(answer.body or b"")) if answer.code == ResponseCode.SUCCESS else []
        for rec in records:
            lateness.append(rec.store_timestamp - int(rec.properties["TIMER_DELIVER_MS"]))
        offset += len(records)
        if not records:
            await asyncio.sleep(0.05)
    return lateness


async def _one(count: int, append_s: float, store: Path) -> dict[str, float]:
    client = RemotingClient()
    admin = AdminApi(client, timeout=30)
    up = _Up(store)
    try:
        await up.start(admin)
        assert up.proc is not None
        intake_s = await _taken_in(admin, up.addr)
        await asyncio.sleep(2)
        heap, rss = _memory(up.proc.pid)
        load = min(LOAD_MAX, int(LOAD_SHARE * 2.0 / append_s))
        late = await _lateness(client, up.addr, load)
        up.kill()
        await client.close()
        timer_open_s = _open_timer_files(store)
        restart_s = await up.start(admin)
        recover_s = await _taken_in(admin, up.addr)
        heap_after, _ = _memory(up.proc.pid)
        up.kill(signal.SIGTERM)
    finally:
        await client.close()
        up.kill()
    late.sort()
    return {
        "heap": heap / MiB,
        "rss": rss / MiB,
        "heap_after": heap_after / MiB,
        "intake_us": intake_s / count * 1e6,
        "append_us": append_s * 1e6,
        "late_max": float(late[-1]) if late else float("nan"),
        "late_p50": statistics.median(late) if late else float("nan"),
        "early": float(sum(1 for x in late if x < 0)),
        "probes": float(len(late)),
        "restart_s": restart_s,
        "timer_open_s": timer_open_s,
        "recover_s": recover_s,
        "timer_recovery_s": timer_open_s + recover_s,
        "load": float(load),
    }


def run(quick: bool) -> list[Result]:
    sizes: tuple[int, ...] = (10_000, 100_000) if quick else (100_000, 1_000_000, 10_000_000)
    env = os.environ.get("RMQ_BENCH_TIMER_SIZES")  # e.g. "100000,1000000" where 10^7 does not fit
    if env:
        sizes = tuple(int(s) for s in env.split(","))
    figures: dict[int, dict[str, float]] = {}
    for count in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-timers-") as tmp:
            store = Path(tmp) / "store"
            print(f"# timers: parking {count:,}", file=sys.stderr, flush=True)
            append_s = _fill(store, count)
            print(f"# timers: {count:,} parked; measuring", file=sys.stderr, flush=True)
            figures[count] = asyncio.run(_one(count, append_s, store))
            print(f"# timers: {count:,}: {figures[count]}", file=sys.stderr, flush=True)
    return _results(figures)


def _results(figures: dict[int, dict[str, float]]) -> list[Result]:
    rows: list[Result] = []
    small = min(figures)
    for count, f in figures.items():
        base = figures[small]
        n = f"timers {count:,}"
        heap_note = (
            f"RSS {f['rss']:.0f} MiB with mapped files; {f['heap_after']:.1f} MiB heap after the restart"
        )
        back_note = (
            f"timer files {f['timer_open_s']:.2f} s, then the wheel caught up in {f['recover_s']:.1f} s"
        )
        late_note = f"p50 {f['late_p50']:.0f} ms, {f['early']:.0f} early, {f['probes']:.0f}/{PROBES} probes"
        rows += [
            {"name": f"{n}: broker heap (RssAnon)", "value": round(f["heap"], 1), "unit": "MiB",
             "baseline": f"{small:,}: {base['heap']:.1f}", "baseline_value": base["heap"], "target": 100,
             "met": f["heap"] <= 100, "note": heap_note},
            {"name": f"{n}: intake per timer", "value": round(f["intake_us"], 2), "unit": "us",
             "baseline": f"store append {f['append_us']:.1f} us", "baseline_value": f["append_us"]},
            {"name": f"{n}: probe lateness max", "value": f["late_max"], "unit": "ms",
             "baseline": f"precision {PRECISION_MS}", "baseline_value": PRECISION_MS,
             "target": PRECISION_MS + HANDLING_MS,
             "met": f["early"] == 0 and f["late_max"] <= PRECISION_MS + HANDLING_MS and f["probes"] == PROBES,
             "note": f"{late_note}, {f['load']:,.0f} more due alongside"},
            {"name": f"{n}: timers back after SIGKILL", "value": round(f["timer_recovery_s"], 2), "unit": "s",
             "baseline": f"{small:,}: {base['timer_recovery_s']:.2f} s",
             "baseline_value": base["timer_recovery_s"], "note": back_note},
            {"name": f"{n}: broker restart after SIGKILL", "value": round(f["restart_s"], 2), "unit": "s",
             "baseline": f"{small:,}: {base['restart_s']:.2f} s", "baseline_value": base["restart_s"],
             "note": "until it answers; mostly the CommitLog's crash recovery"},
        ]  # fmt: skip
    big = max(figures)
    flat = (
        ("heap", "broker heap"),
        ("intake_us", "intake per timer"),
        ("timer_recovery_s", "timers back after SIGKILL"),
    )
    for key, what in flat:
        ratio = figures[big][key] / figures[small][key]
        rows.append({"name": f"timers {big:,} / {small:,}: {what}", "value": round(ratio, 2), "unit": "x",
                     "baseline": "flat: <= 2", "met": ratio <= 2})  # fmt: skip
    return rows
