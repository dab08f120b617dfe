"""Streaming reads (availableNow, restart from the checkpoint) and writes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tests.admin.pipelines.conftest import Cluster

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _run(spark: SparkSession, cluster: Cluster, out: Path, ckpt: Path) -> None:
    stream = (
        spark.readStream.format("rocketmq")
        .option("nameServer", cluster.namesrv)
        .option("topic", "SparkStream")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 7)
        .option("consumerGroup", "spark-stream-cg")
        .load()
    )
    query = (
        stream.select("uniqKey", "body", "queueId", "queueOffset")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None


def test_stream_restart_yields_each_message_once(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    first = cluster.send("SparkStream", [f"s{i}".encode() for i in range(15)])
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    _run(spark, cluster, out, ckpt)
    second = cluster.send("SparkStream", [f"t{i}".encode() for i in range(12)])
    _run(spark, cluster, out, ckpt)
    rows = spark.read.parquet(str(out)).collect()
    keys = [r.uniqKey for r in rows]
    assert sorted(keys) == sorted(s.uniq_key for s in first + second)
    assert {bytes(r.body) for r in rows} == {s.body for s in first + second}


def test_write_then_read_back(spark: SparkSession, cluster: Cluster) -> None:
    df = spark.createDataFrame(
        [(f"w{i}".encode(), "blue" if i % 2 else "red", f"key{i}", {"origin": "spark"}) for i in range(20)],
        "body binary, tags string, keys string, properties map<string,string>",
    )
    df.write.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", "SparkOut").mode(
        "append"
    ).save()
    back = (
        spark.read.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", "SparkOut").load()
    )
    rows = back.collect()
    assert sorted(bytes(r.body) for r in rows) == sorted(f"w{i}".encode() for i in range(20))
    assert all(r.properties["origin"] == "spark" and r.tags in ("blue", "red") for r in rows)
    assert len({r.uniqKey for r in rows}) == 20 and all(len(r.uniqKey) == 32 for r in rows)
