"""The ``rocketmq`` Spark source: rows/s reading N x 1 KiB messages on local[2] from a store folder and
through a broker, beside Spark reading the same rows from Parquet in the same run (the baseline)."""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.bench_store import _result
from broker.protocol.msgid import UniqKeyGenerator
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage

Result = dict[str, object]
TOPIC = "SparkBench"
QUEUES = 2


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


async def _create_topic(namesrv: str) -> None:
    """The store was filled directly, so the broker has no topic config for it yet."""
    from admin.models import TopicSpec
    from admin.service import AdminService

    async with AdminService([namesrv], 10) as service:
        await service.wait_ready(30)
        await service.topic_create(TopicSpec(TOPIC, QUEUES, QUEUES))


def _best(fn: object, runs: int = 2) -> float:
    assert callable(fn)
    best = float("inf")
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return best


def run(quick: bool) -> list[Result]:
    from admin.pipelines.session import build_session
    from broker.namesrv.config import NamesrvConfig
    from broker.server.config import BrokerConfig
    from broker.server.node import Node, NodePlan

    n = 100_000 if quick else 1_000_000
    spark = build_session("local[2]", "rmqkit-bench")
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        root = Path(tmp) / "store"
        _fill(root, n)
        store_df = spark.read.format("rocketmq").option("storePath", str(root)).option("topic", TOPIC).load()
        store_s = _best(lambda: store_df.count())
        parquet = Path(tmp) / "parquet"
        store_df.write.parquet(str(parquet))
        pq = spark.read.parquet(str(parquet))
        pq_s = _best(lambda: pq.selectExpr("sum(length(body))").collect())
        store_sum_s = _best(lambda: store_df.selectExpr("sum(length(body))").collect())

        plan = NodePlan(
            namesrv=NamesrvConfig(
                listen_port=0,
                kv_config_path=Path(tmp) / "kv.json",
                config_store_path=Path(tmp) / "namesrv.properties",
            ),
            broker=BrokerConfig(
                broker_name="bench",
                listen_host="127.0.0.1",
                listen_port=0,
                http_port=0,
                ha_listen_port=0,
                grpc_port=-1,
            ),
            store=StoreConfig.for_existing(root),
        )
        node = Node(plan)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        asyncio.run_coroutine_threadsafe(node.start(), loop).result(120)
        try:
            assert node.namesrv is not None
            namesrv = f"127.0.0.1:{node.namesrv.port}"
            asyncio.run_coroutine_threadsafe(_create_topic(namesrv), loop).result(60)
            broker_df = (
                spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", TOPIC).load()
            )
            broker_s = _best(lambda: broker_df.selectExpr("sum(length(body))").collect(), runs=1)
        finally:
            asyncio.run_coroutine_threadsafe(node.stop(), loop).result(120)
            loop.call_soon_threadsafe(loop.stop)
    pq_rate = n / pq_s
    return [
        _result(
            "spark_read_store_count",
            n / store_s,
            "rows/s",
            target=1_000_000,
            baseline=("spark_parquet", pq_rate),
            note=f"{n} x 1 KiB, local[2], count()",
        ),
        _result(
            "spark_read_store",
            n / store_sum_s,
            "rows/s",
            target=1_000_000,
            baseline=("spark_parquet", pq_rate),
            note="sum(length(body))",
        ),
        _result(
            "spark_read_broker",
            n / broker_s,
            "rows/s",
            target=300_000,
            baseline=("spark_parquet", pq_rate),
            note="in-process broker, sum(length(body))",
        ),
    ]
