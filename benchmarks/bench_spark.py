"""The ``rocketmq`` Spark source: rows/s reading N x 1 KiB messages on local[2] from a store folder and
through a broker (``rmq up`` in its own process), beside Spark reading the same rows from Parquet in
the same run (the baseline). Each figure is the median of five queries once warm: after the query that
plans the scan and starts the Python workers, queries run untimed until ~8M rows have gone through, as
the JVM's JIT takes ~10M rows to settle on the row conversion. The first query after planning is
reported as well (``spark_read_store_first``): what a short job sees."""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.bench_store import _result
from broker.protocol.msgid import UniqKeyGenerator
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage

Result = dict[str, object]
TOPIC = "SparkBench"
QUEUES = 2
RUNS = 5
WARM_ROWS = 8_000_000


def _fill(root: Path, n: int) -> None:
    store = MessageStore(StoreConfig(store_path=root, message_index_enable=False))
    store.start()
    gen = UniqKeyGenerator()
    body = b"x" * 1024
    try:
        for start in range(0, n, 1000):
            store.put_messages(
                [
                    PutMessage(
                        TOPIC, i % QUEUES, body, {"TAGS": "t", "KEYS": f"k{i}", "UNIQ_KEY": gen.next()}
                    )
                    for i in range(start, min(n, start + 1000))
                ],
                wait_store=False,
            )
    finally:
        store.shutdown()
    os.sync()  # the reads are timed on data in the page cache, not against the write-back of the fill


async def _create_topic(namesrv: str) -> None:
    """The store was filled directly, so the broker has no topic config for it yet."""
    from admin.models import TopicSpec
    from admin.service import AdminService

    async with AdminService([namesrv], 10) as service:
        await service.wait_ready(30)
        await service.topic_create(TopicSpec(TOPIC, QUEUES, QUEUES))


def _seconds(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def _timed(fn: Callable[[], object], rows: int, warm_rows: int) -> tuple[float, float]:
    """Seconds of (the first query after the one that plans the scan, the median of RUNS once warm)."""
    fn()
    first = _seconds(fn)
    for _ in range(warm_rows // rows):
        fn()
    return first, statistics.median(_seconds(fn) for _ in range(RUNS))


@contextmanager
def _rmq_up(root: Path, tmp: Path) -> Iterator[str]:
    """``rmq up`` on free ports serving ``root``, in its own process; yields the NameServer address."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RMQ_CONFIG": str(tmp / "rmq.toml")}
    cmd = [str(Path(sys.executable).with_name("rmq")), "up", "--store", str(root), "--namesrv-port", "0",
           "--broker-port", "0", "--no-http", "--grpc-port", "-1"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert proc.stdout is not None
        namesrv = ""
        for line in proc.stdout:
            if line.startswith("NameServer"):
                namesrv = line.split()[-1]
                break
        if not namesrv:
            raise RuntimeError(f"rmq up exited with {proc.wait()}")
        yield namesrv
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(quick: bool) -> list[Result]:
    from admin.pipelines.session import build_session

    n = 100_000 if quick else 1_000_000
    warm = WARM_ROWS // 4 if quick else WARM_ROWS
    spark = build_session("local[2]", "rmqkit-bench")
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        root = Path(tmp) / "store"
        _fill(root, n)
        store_df = spark.read.format("rocketmq").option("storePath", str(root)).option("topic", TOPIC).load()
        first_s, store_s = _timed(lambda: store_df.count(), n, warm)
        _, store_sum_s = _timed(lambda: store_df.selectExpr("sum(length(body))").collect(), n, warm)
        body_df = (
            spark.read.format("rocketmq").schema("body binary").option("storePath", str(root))
            .option("topic", TOPIC).load()
        )  # fmt: skip
        _, body_s = _timed(lambda: body_df.selectExpr("sum(length(body))").collect(), n, warm)
        parquet = Path(tmp) / "parquet"
        store_df.write.parquet(str(parquet))
        pq = spark.read.parquet(str(parquet))
        _, pq_s = _timed(lambda: pq.selectExpr("sum(length(body))").collect(), n, warm)

        broker_root = Path(tmp) / "broker-store"
        _fill(broker_root, n)
        with _rmq_up(broker_root, Path(tmp)) as namesrv:
            asyncio.run(_create_topic(namesrv))
            broker_df = (
                spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", TOPIC).load()
            )
            _, broker_s = _timed(lambda: broker_df.selectExpr("sum(length(body))").collect(), n, warm)
    pq_rate = n / pq_s
    baseline = ("spark_parquet", pq_rate)
    return [
        _result("spark_parquet", pq_rate, "rows/s", note=f"{n} x 1 KiB, local[2], sum(length(body))"),
        _result("spark_read_store_count", n / store_s, "rows/s", target=1_000_000, baseline=baseline,
                note="store folder, count()"),
        _result("spark_read_store", n / store_sum_s, "rows/s", target=1_000_000, baseline=baseline,
                note="store folder, sum(length(body))"),
        _result("spark_read_store_first", n / first_s, "rows/s", baseline=baseline,
                note="store folder, count(), first query after planning (JIT cold)"),
        _result("spark_read_store_body_only", n / body_s, "rows/s", target=1_000_000, baseline=baseline,
                note='store folder, .schema("body binary"), sum(length(body))'),
        _result("spark_read_broker", n / broker_s, "rows/s", target=300_000, baseline=baseline,
                note="rmq up in its own process, sum(length(body))"),
    ]  # fmt: skip
