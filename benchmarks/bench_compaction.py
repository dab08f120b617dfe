"""Compaction benchmark: 100,000 messages over 1,000 keys into a COMPACTION topic of a broker in its own
process, then

* compaction throughput (messages rewritten per second) with the broker otherwise idle;
* send throughput to another topic while a compaction runs, against the same sends with no compaction
  before and after it (target: at most 10 % lost);
* the acceptance checks: a reader from offset 0 gets every key's newest value, the compaction log's disk
  use fell, and a broker SIGKILLed in the middle of a compaction loses no newest value on restart.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from broker.client.remoting_client import RemotingClient
from broker.protocol.bodies import KVTable
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import (
    CreateTopicRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from broker.protocol.message import BatchItem, decode_records, encode_batch
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import ExtFieldsHeader, RemotingCommand, make_request

Result = dict[str, object]
KV = "BenchKv"
PLAIN = "BenchPlain"
QUEUES = 2
KEYS = 1000
BATCH = 32
CONCURRENCY = 8
BODY = b"v" * 100
ROUNDS = 5
ROUND_MESSAGES = 20_000  # new values per round, for its compaction to work through
TARGET_LOSS = 10.0  # percent of send throughput a running compaction may cost
SERVE = (
    "import sys, asyncio; from benchmarks.bench_compaction import serve; asyncio.run(serve(*sys.argv[1:]))"
)
IDLE = 3_600_000  # compactionScheduleInternal while the benchmark fills the topic: no compaction


async def serve(store: str, port: str) -> None:
    """The broker process (run by :func:`_spawn`)."""
    from broker.server.broker import Broker
    from broker.server.config import BrokerConfig
    from broker.store.config import StoreConfig

    config = BrokerConfig(
        broker_name="bench-compaction",
        listen_host="127.0.0.1",
        listen_port=int(port),
        ha_listen_port=0,  # any free port: no slave here
        http_port=0,
        grpc_port=-1,
    )
    store_config = StoreConfig(
        store_path=Path(store),
        compaction_mapped_file_size=512 << 10,  # many closed files to compact
        compaction_cq_mapped_file_size=64 << 10,
        compaction_schedule_interval_ms=IDLE,
    )
    broker = Broker(config, store_config)
    await broker.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


def _spawn(store: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(store), str(port)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()  # "ready"
    return proc


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Bench:
    """One broker under test and the client that drives it."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.port = _free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.proc = _spawn(store, self.port)
        self.client = RemotingClient()
        self.busy_answers = 0  # sends the broker turned away (flow control) and that were sent again

    async def call(
        self, code: int, header: ExtFieldsHeader | None = None, body: bytes | None = None
    ) -> RemotingCommand:
        return await self.client.invoke(self.addr, make_request(code, header, body=body), 30)

    async def restart(self, sig: int) -> None:
        self.proc.send_signal(sig)
        self.proc.wait(60)
        await self.client.close()
        self.proc = await asyncio.to_thread(_spawn, self.store, self.port)
        self.client = RemotingClient()

    async def close(self) -> None:
        await self.client.close()
        self.proc.terminate()
        self.proc.wait(60)

    async def create(self, topic: str, attributes: str | None) -> None:
        header = CreateTopicRequestHeader(
            topic=topic, defaultTopic="TBW102", readQueueNums=QUEUES, writeQueueNums=QUEUES, perm=6,
            topicFilterType="SINGLE_TAG", attributes=attributes,
        )  # fmt: skip
        response = await self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
        assert response.code == ResponseCode.SUCCESS, response.remark

    async def send_batch(self, topic: str, queue_id: int, items: list[BatchItem]) -> None:
        v1 = SendMessageRequestHeader(
            producerGroup="bench-compaction", topic=topic, defaultTopic="TBW102",
            defaultTopicQueueNums=QUEUES, queueId=queue_id, sysFlag=0,
            bornTimestamp=int(time.time() * 1000), flag=0, properties="", batch=True,
        )  # fmt: skip
        header = SendMessageRequestHeaderV2.from_v1(v1)
        body = encode_batch(items)
        while True:  # a busy broker (flow control) is asked again, as a producer would
            response = await self.call(RequestCode.SEND_BATCH_MESSAGE, header, body)
            if response.code != ResponseCode.SYSTEM_BUSY:
                break
            self.busy_answers += 1
            await asyncio.sleep(0.01)
        assert response.code == ResponseCode.SUCCESS, response.remark

    async def fill(self, first: int, count: int) -> None:
        """``count`` values, seq ``first`` on: key ``seq % KEYS``, body ``<seq>`` and padding."""
        seqs = list(range(first, first + count))
        batches = [seqs[i : i + BATCH] for i in range(0, count, BATCH)]
        pending = asyncio.Semaphore(CONCURRENCY)

        async def one(index: int, batch: list[int]) -> None:
            async with pending:
                items = [
                    BatchItem(0, b"%d." % s + BODY, encode_properties({"KEYS": f"key-{s % KEYS}"}))
                    for s in batch
                ]
                await self.send_batch(KV, index % QUEUES, items)

        await asyncio.gather(*(one(i, b) for i, b in enumerate(batches)))

    async def load(self, seconds: float, until: asyncio.Event | None = None) -> float:
        """Batched sends to the plain topic for ``seconds`` (or until ``until`` is set): msg/s."""
        deadline = time.monotonic() + seconds
        sent = 0
        items = [BatchItem(0, BODY, "") for _ in range(BATCH)]

        async def worker(n: int) -> None:
            nonlocal sent
            while time.monotonic() < deadline and not (until is not None and until.is_set()):
                await self.send_batch(PLAIN, n % QUEUES, items)
                sent += BATCH

        started = time.monotonic()
        await asyncio.gather(*(worker(n) for n in range(CONCURRENCY)))
        return sent / (time.monotonic() - started)

    async def progress(self) -> dict[int, list[int]]:
        """Queue -> [fedOffset, messages, diskBytes, compactedOffset, runs]."""
        response = await self.call(RequestCode.GET_BROKER_RUNTIME_INFO)
        table = KVTable.from_json(response.body or b"").table
        prefix = f"compactionProgress_{KV}_"
        return {
            int(k[len(prefix) :]): [int(x) for x in v.split(",")]
            for k, v in table.items()
            if k.startswith(prefix)
        }

    async def set_interval(self, ms: int) -> None:
        body = f"compactionScheduleInternal={ms}\n".encode()
        response = await self.call(RequestCode.UPDATE_BROKER_CONFIG, body=body)
        assert response.code == ResponseCode.SUCCESS, response.remark

    async def wait_fed(self, total: int) -> None:
        while sum(p[0] for p in (await self.progress()).values()) < total:
            await asyncio.sleep(0.05)

    async def wait_runs(self, runs: int, done: asyncio.Event | None = None) -> None:
        while True:
            progress = await self.progress()
            if len(progress) == QUEUES and min(p[4] for p in progress.values()) >= runs:
                break
            await asyncio.sleep(0.02)
        if done is not None:
            done.set()

    async def latest_from_start(self) -> tuple[dict[str, int], int]:
        """Key -> newest seq a reader from offset 0 gets, and how many messages it read."""
        latest: dict[str, int] = {}
        read = 0
        for queue_id in range(QUEUES):
            offset = 0
            while True:
                header = PullMessageRequestHeader(
                    consumerGroup="bench-reader", topic=KV, queueId=queue_id, queueOffset=offset,
                    maxMsgNums=32, sysFlag=0x4, commitOffset=0, suspendTimeoutMillis=0, subVersion=0,
                    subscription="*",
                )  # fmt: skip
                response = await self.call(RequestCode.PULL_MESSAGE, header)
                records = list(decode_records(response.body or b""))
                for rec in records:
                    latest[rec.keys[0]] = max(latest.get(rec.keys[0], -1), int(rec.body.split(b".")[0]))
                read += len(records)
                next_offset = int(response.ext_fields["nextBeginOffset"])
                if not records and next_offset == offset:
                    break
                offset = next_offset
        return latest, read


def _compaction_bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in (store / "compaction").rglob("*") if p.is_file())


def _expected(total: int) -> dict[str, int]:
    return {f"key-{s % KEYS}": s for s in range(total)}


async def _run(root: Path, messages: int, window: float) -> list[Result]:
    bench = Bench(root / "store")
    results: list[Result] = []
    try:
        await bench.create(KV, "+cleanup.policy=COMPACTION")
        await bench.create(PLAIN, None)
        # 1. fill, let the thread copy it in, then compact with nothing else running
        started = time.monotonic()
        await bench.fill(0, messages)
        fill_rate = messages / (time.monotonic() - started)
        await bench.wait_fed(messages)
        before = _compaction_bytes(bench.store)
        started = time.monotonic()
        await bench.set_interval(100)
        await bench.wait_runs(1)
        idle_rate = messages / (time.monotonic() - started)
        after = _compaction_bytes(bench.store)
        latest, read = await bench.latest_from_start()
        assert latest == _expected(messages), "a key's newest value is missing after compaction"
        results.append(
            _result("compaction, broker idle", idle_rate, "msg/s", baseline=("keyed sends", fill_rate))
        )
        results.append(
            _result(
                "compaction log after / before",
                100 * after / before,
                "%",
                note=f"{before / 1e6:.1f} MB -> {after / 1e6:.1f} MB; a reader from 0 read {read:,} messages",
            )
        )
        # 2. sends while a compaction runs against sends just before it, round after round (the
        # median of the paired ratios: the machine's other load changes between rounds)
        ratios: list[float] = []
        rates: list[tuple[float, float]] = []
        compacted = compacting_seconds = 0.0
        total = messages
        for round_no in range(1, ROUNDS + 1):
            await bench.set_interval(IDLE)
            await bench.fill(total, ROUND_MESSAGES)
            total += ROUND_MESSAGES
            await bench.wait_fed(total)
            quiet = await bench.load(window)
            held = sum(p[1] for p in (await bench.progress()).values())
            done = asyncio.Event()
            await bench.set_interval(100)
            watcher = asyncio.create_task(bench.wait_runs(round_no + 1, done))
            started = time.monotonic()
            during = await bench.load(window, until=done)
            await watcher
            compacting_seconds += time.monotonic() - started
            compacted += held
            ratios.append(during / quiet)
            rates.append((during, quiet))
            print(f"# round {round_no}: {quiet:,.0f} msg/s quiet, {during:,.0f} during", file=sys.stderr)
        await bench.set_interval(IDLE)
        loss = 100 * (1 - statistics.median(ratios))
        during, quiet = statistics.median(r[0] for r in rates), statistics.median(r[1] for r in rates)
        results.append(
            _result(
                "sends during compaction",
                during,
                "msg/s",
                baseline=("sends without", quiet),
                note=f"{bench.busy_answers} flow-control answers sent again",
            )
        )
        results.append(
            {
                **_result(
                    "send throughput lost to compaction",
                    loss,
                    "%",
                    note=f"median of {ROUNDS} paired windows; target <= {TARGET_LOSS:g} %",
                ),
                "met": loss <= TARGET_LOSS,
            }
        )
        results.append(_result("compaction, under send load", compacted / compacting_seconds, "msg/s"))
        messages = total
        # 3. SIGKILL in the middle of a compaction, restart, read from the start
        await bench.fill(messages, ROUND_MESSAGES * 2)
        messages += ROUND_MESSAGES * 2
        await bench.wait_fed(messages)
        await bench.set_interval(100)
        compacting = list(bench.store.glob("compaction/compactionLog/*/*/compacting"))
        deadline = time.monotonic() + 60
        while not compacting and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
            compacting = list(bench.store.glob("compaction/compactionLog/*/*/compacting"))
        await bench.restart(signal.SIGKILL)
        latest, _ = await bench.latest_from_start()
        kept = latest == _expected(messages)
        results.append(
            {
                **_result(
                    "newest values after SIGKILL mid-compaction",
                    100 * sum(latest.get(k) == v for k, v in _expected(messages).items()) / KEYS,
                    "%",
                    note="killed while compacting" if compacting else "compaction not caught in progress",
                ),
                "met": kept,
            }
        )
    finally:
        await bench.close()
    return results


def _result(
    name: str, value: float, unit: str, *, baseline: tuple[str, float] | None = None, note: str = ""
) -> Result:
    return {
        "name": name,
        "value": round(value, 1),
        "unit": unit,
        "target": None,
        "baseline": baseline[0] if baseline else None,
        "baseline_value": round(baseline[1], 1) if baseline else None,
        "note": note,
    }


def run(quick: bool) -> list[Result]:
    messages = 20_000 if quick else 100_000
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
        return asyncio.run(_run(Path(tmp), messages, 2.0 if quick else 4.0))


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
    os._exit(0)
