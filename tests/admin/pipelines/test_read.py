"""Batch reads through the broker and from the store folder return exactly the messages sent."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.admin.pipelines.conftest import BROKER, MESSAGES, TOPIC, Cluster

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _rows(df: DataFrame) -> dict[str, tuple[bytes, str, str, int, int]]:
    return {
        r.uniqKey: (bytes(r.body), r.tags, r.keys, r.queueId, r.queueOffset)
        for r in df.select("uniqKey", "body", "tags", "keys", "queueId", "queueOffset").collect()
    }


def _expected(cluster: Cluster) -> dict[str, tuple[bytes, str, str, int, int]]:
    return {s.uniq_key: (s.body, s.tags, s.keys, s.queue_id, s.queue_offset) for s in cluster.sent}


def test_read_through_broker(spark: SparkSession, cluster: Cluster) -> None:
    df = spark.read.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", TOPIC).load()
    assert _rows(df) == _expected(cluster)
    row = df.filter(df.queueOffset == 0).orderBy("queueId").first()
    assert row is not None
    assert row.topic == TOPIC and row.brokerName == BROKER and row.msgId == row.uniqKey
    assert row.properties["TAGS"] == row.tags and row.storeTimestamp is not None and row.storeHost


def test_store_folder_equals_broker(spark: SparkSession, cluster: Cluster) -> None:
    cols = [
        "uniqKey",
        "body",
        "tags",
        "keys",
        "queueId",
        "queueOffset",
        "commitLogOffset",
        "bornTimestamp",
        "storeTimestamp",
        "bornHost",
        "storeHost",
        "properties",
        "flag",
        "sysFlag",
        "reconsumeTimes",
        "msgId",
    ]
    via_broker = (
        spark.read.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", TOPIC).load()
    )
    via_store = (
        spark.read.format("rocketmq").option("storePath", str(cluster.store)).option("topic", TOPIC).load()
    )
    a = sorted(tuple(sorted(r.asDict().items())) for r in via_broker.select(*cols).collect())
    b = sorted(tuple(sorted(r.asDict().items())) for r in via_store.select(*cols).collect())
    assert a == b and len(a) == MESSAGES
    assert _rows(via_store) == _expected(cluster)
    # a message always has every column but these three, and Spark is told so
    assert [f.name for f in via_store.schema if f.nullable] == ["uniqKey", "tags", "keys"]


def test_offsets_tags_and_a_reused_dataframe(spark: SparkSession, cluster: Cluster) -> None:
    start = json.dumps({TOPIC: {BROKER: {"0": 2}}})
    df = (
        spark.read.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", TOPIC)
        .option("startingOffsets", start).option("subExpression", "even").option("minPartitions", 6).load()
    )  # fmt: skip
    want = {k: v for k, v in _expected(cluster).items() if v[1] == "even" and not (v[3] == 0 and v[4] < 2)}
    assert _rows(df) == want
    assert df.rdd.getNumPartitions() >= 6
    # a filtered query of a DataFrame leaves its later unfiltered queries whole
    want = {k: v for k, v in _expected(cluster).items() if v[3] == 1 and v[4] >= 3 and v[1] == "odd"}
    store = (
        spark.read.format("rocketmq").option("storePath", str(cluster.store)).option("topic", TOPIC).load()
    )
    assert _rows(store.filter("queueId = 1 AND queueOffset >= 3 AND tags = 'odd'")) == want
    assert store.filter("queueId = 0").count() == len([s for s in cluster.sent if s.queue_id == 0])
    assert store.count() == MESSAGES
    newest = store.agg({"storeTimestamp": "max"}).first()
    assert newest is not None
    assert store.filter(store.storeTimestamp <= newest[0]).count() == MESSAGES


def test_a_schema_of_some_columns_reads_only_those(spark: SparkSession, cluster: Cluster) -> None:
    """``.schema(...)`` picks columns (Spark hands a Python source every column otherwise); filters on
    columns left out still apply, and a column the source lacks or a wrong type is refused by name."""
    from pyspark.errors import PySparkException
    from pyspark.errors.exceptions.captured import CapturedException

    for source in (("storePath", str(cluster.store)), ("nameServer", cluster.namesrv)):
        df = (
            spark.read.format("rocketmq").schema("queueOffset bigint, body binary, uniqKey string")
            .option(*source).option("topic", TOPIC).option("subExpression", "t").load()
        )  # fmt: skip
        assert df.columns == ["queueOffset", "body", "uniqKey"]
        got = {r.uniqKey: (bytes(r.body), r.queueOffset) for r in df.collect()}
        assert got == {s.uniq_key: (s.body, s.queue_offset) for s in cluster.sent if s.tags == "t"}
    strict = spark.read.format("rocketmq").schema("body binary not null, tags string")
    strict = strict.option("storePath", str(cluster.store)).option("topic", TOPIC).load()
    assert strict.count() == MESSAGES and not strict.schema["body"].nullable
    for schema, message in (
        ("body binary, colour string", "has no column 'colour'"),
        ("queueOffset int", "column queueOffset is bigint, not int"),
        ("tags string not null", "column tags can be null; declare it without NOT NULL"),
    ):
        bad = spark.read.format("rocketmq").schema(schema).option("storePath", str(cluster.store))
        try:
            bad.option("topic", TOPIC).load().collect()
        except (PySparkException, CapturedException) as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"schema {schema!r} was accepted")
