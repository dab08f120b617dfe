"""Streams: the consumer group is created and committed as batches complete (lag 0 after availableNow),
offsets that went backwards (a topic deleted and created again) honour failOnDataLoss, and a broker that
restarts is waited for."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyspark.errors import PySparkException

from broker.client.message import Message
from broker.client.producer import Producer
from tests.spark.conftest import BROKER, Cluster

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

pytestmark = pytest.mark.servers


def _topic(cluster: Cluster, topic: str, *, delete_first: bool = False) -> None:
    from admin.models import TopicSpec
    from admin.service import AdminService

    async def go() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            if delete_first:
                await service.topic_delete(topic)
            await service.topic_create(TopicSpec(topic, 2, 2))

    cluster.call(go())


def _stream(spark: SparkSession, cluster: Cluster, topic: str, out: Path, **options: str) -> StreamingQuery:
    """Run an availableNow stream of ``topic`` into Parquet under ``out``; the query, ended."""
    from pyspark.errors import StreamingQueryException

    stream = (
        spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", topic)
        .option("startingOffsets", "earliest").options(**options).load()
    )  # fmt: skip
    query = (
        stream.select("uniqKey", "body").writeStream.format("parquet").option("path", str(out / "data"))
        .option("checkpointLocation", str(out / "ckpt")).trigger(availableNow=True).start()
    )  # fmt: skip
    with contextlib.suppress(StreamingQueryException):  # query.exception() has it
        query.awaitTermination(120)
    return query


def test_a_new_group_is_created_and_left_with_no_lag(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    from admin.service import AdminService

    _topic(cluster, "SparkLag")
    sent = cluster.send("SparkLag", [b"l%d" % i for i in range(20)])
    query = _stream(
        spark, cluster, "SparkLag", tmp_path, consumerGroup="spark-new-cg", maxOffsetsPerTrigger="6"
    )
    assert query.exception() is None
    progress = query.recentProgress
    assert len(progress) >= 4
    # what the stream has read and what there is, in each batch's progress: caught up at the end
    newest: dict[str, int] = {}
    for s in sent:
        newest[str(s.queue_id)] = max(newest.get(str(s.queue_id), 0), s.queue_offset + 1)
    last = progress[-1]["sources"][0]
    assert json.loads(last["latestOffset"]) == json.loads(last["endOffset"]) == {"SparkLag": {BROKER: newest}}
    assert sorted(r.uniqKey for r in spark.read.parquet(str(tmp_path / "data")).collect()) == sorted(
        s.uniq_key for s in sent
    )

    async def lag() -> tuple[int, int]:
        async with AdminService([cluster.namesrv], 10) as service:
            got = await service.group_lag("spark-new-cg", "SparkLag")
        return len(got.queues), got.diff_total

    assert cluster.call(lag()) == (2, 0)


def _lag(cluster: Cluster, group: str, topic: str) -> int:
    from admin.service import AdminService

    async def ask() -> int:
        async with AdminService([cluster.namesrv], 10) as service:
            return (await service.group_lag(group, topic)).diff_total

    return cluster.call(ask())


def test_a_stream_stopped_between_batches_has_committed_its_last_batch(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    """Spark never tells a Python source that a query stopped: the group's offsets are those of the
    last batch the sink committed, so its lag is exactly what the stream did not write."""
    _topic(cluster, "SparkStop")
    cluster.send("SparkStop", [b"s%d" % i for i in range(40)])
    stream = (
        spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", "SparkStop")
        .option("startingOffsets", "earliest").option("consumerGroup", "spark-stop-cg")
        .option("maxOffsetsPerTrigger", "6").load()
    )  # fmt: skip
    query = (
        stream.select("uniqKey").writeStream.format("parquet").option("path", str(tmp_path / "data"))
        .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(processingTime="3 seconds").start()
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not [p for p in query.recentProgress if p["numInputRows"] > 0] and time.monotonic() < deadline:
            time.sleep(0.05)  # a batch has just been written: the next waits for its trigger
    finally:
        query.stop()
    written = spark.read.parquet(str(tmp_path / "data")).count()
    assert 0 < written < 40
    assert _lag(cluster, "spark-stop-cg", "SparkStop") == 40 - written


def test_a_recreated_topic_fails_the_stream_or_is_read_from_its_start(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    _topic(cluster, "SparkRecreated")
    first = cluster.send("SparkRecreated", [b"old%d" % i for i in range(10)])
    assert _stream(spark, cluster, "SparkRecreated", tmp_path).exception() is None
    _topic(cluster, "SparkRecreated", delete_first=True)
    second = cluster.send("SparkRecreated", [b"new%d" % i for i in range(4)])
    failed = _stream(spark, cluster, "SparkRecreated", tmp_path).exception()
    assert failed is not None and "past the queue's end" in str(failed)
    assert "set failOnDataLoss=false" in str(failed)
    assert _stream(spark, cluster, "SparkRecreated", tmp_path, failOnDataLoss="false").exception() is None
    rows = spark.read.parquet(str(tmp_path / "data")).collect()
    assert sorted(r.uniqKey for r in rows) == sorted(s.uniq_key for s in first + second)


def test_a_broker_restart_is_waited_for(spark: SparkSession, cluster: Cluster, tmp_path: Path) -> None:
    """A read that finds its broker down retries (fetchOffset.numRetries) and reads once it is back."""
    from admin.models import TopicSpec
    from admin.service import AdminService
    from broker.namesrv.config import NamesrvConfig
    from broker.node import Node, NodePlan
    from broker.server.config import BrokerConfig
    from broker.store.config import StoreConfig
    from tests.features.conftest import free_port

    port = free_port()
    plan = NodePlan(
        namesrv=NamesrvConfig(listen_port=free_port(), kv_config_path=tmp_path / "kv.json",
                              config_store_path=tmp_path / "namesrv.properties"),
        broker=BrokerConfig(broker_name="broker-blip", listen_host="127.0.0.1", listen_port=port, http_port=0,
                            ha_listen_port=0, grpc_port=-1),
        store=StoreConfig(store_path=tmp_path / "data", mapped_file_size_commit_log=1 << 20,
                          mapped_file_size_consume_queue_units=1000, max_hash_slot_num=100,
                          max_index_num=400),
    )  # fmt: skip
    node = Node(plan)

    async def fill() -> None:
        await node.start()
        assert node.namesrv is not None
        namesrv = f"127.0.0.1:{node.namesrv.port}"
        async with AdminService([namesrv], 10) as service:
            await service.wait_ready(20)
            await service.topic_create(TopicSpec("Blip", 1, 1))
        async with Producer("blip-pg", namesrv) as producer:
            for i in range(5):
                await producer.send(Message("Blip", b"b%d" % i))
        await node.stop()

    cluster.call(fill())
    read = spark.read.format("rocketmq").option("brokerAddr", f"127.0.0.1:{port}").option("topic", "Blip")
    with pytest.raises(PySparkException, match=r"connect to 127\.0\.0\.1"):
        read.option("fetchOffset.numRetries", 0).load().collect()
    again = Node(plan)
    restart = threading.Timer(1.0, lambda: cluster.call(again.start()))
    restart.start()
    try:
        # up to 31.5 s of waiting: a node starts in about a second, more on a busy machine
        waiting = read.option("fetchOffset.retryIntervalMs", 500).option("fetchOffset.numRetries", 6)
        assert waiting.load().count() == 5
    finally:
        restart.join()
        cluster.call(again.stop())
