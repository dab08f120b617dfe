"""Every read path returns each message asked for exactly once: broker and store-folder reads agree over
ranges, tag and SQL92 filters and pull sizes, and options that would read nothing are refused."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException

from admin.pipelines import plan as PL
from admin.pipelines.readers import read_range
from broker.client.message import Message
from broker.client.producer import Producer
from broker.protocol.bodies import MessageQueue
from tests.spark.conftest import Cluster

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.servers

MIXED = "SparkMixed"
PER_QUEUE = 60
TAGS = ("A", "B", "C")


@pytest.fixture(scope="module")
def mixed(cluster: Cluster) -> Cluster:
    """Topic ``SparkMixed``: 2 queues of 60 messages each; message ``i`` of a queue has tag
    ``A``, ``B`` or ``C`` by ``i % 7 % 3`` (runs of one tag and single ones) and property ``n=i``."""
    from admin.models import TopicSpec
    from admin.service import AdminService

    async def fill() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec(MIXED, 2, 2))
        async with Producer("spark-mixed-pg", cluster.namesrv) as producer:
            for i in range(PER_QUEUE):
                for q in (0, 1):
                    msg = Message(MIXED, b"m%d-%d" % (q, i), tags=TAGS[i % 7 % 3], properties={"n": str(i)})
                    await producer.send(msg, selector=_by_arg, arg=q)

    cluster.call(fill())
    return cluster


def _by_arg(queues: Sequence[MessageQueue], _msg: Message, arg: Any) -> MessageQueue:
    return queues[int(arg)]


def _read(options: dict[str, str]) -> list[tuple[int, int, bytes]]:
    """Plan and read as the source does, without Spark: (queue id, queue offset, body) of every row."""
    spec = PL.parse_options(options)
    target = PL.open_target(spec)
    try:
        ranges = PL.plan_ranges(target, spec)
    finally:
        target.close()
    rows: list[tuple[int, int, bytes]] = []
    for rng in PL.split(ranges, spec.min_partitions):
        for batch in read_range(spec, rng):
            rows += zip(
                batch["queueId"].to_pylist(), batch["queueOffset"].to_pylist(), batch["body"].to_pylist(),
                strict=True,
            )  # fmt: skip
    return sorted(rows)


def _expected(start: int, end: int, keep: Any) -> list[tuple[int, int, bytes]]:
    return [(q, i, b"m%d-%d" % (q, i)) for q in (0, 1) for i in range(start, end) if keep(i)]


FILTERS: dict[str, tuple[dict[str, str], Any]] = {
    "all": ({}, lambda i: True),
    "A": ({"subExpression": "A"}, lambda i: TAGS[i % 7 % 3] == "A"),
    "A || C": ({"subExpression": "A || C"}, lambda i: TAGS[i % 7 % 3] in ("A", "C")),
    "sql": (
        {"subExpression": "n BETWEEN 5 AND 40 AND TAGS <> 'B'", "expressionType": "SQL92"},
        lambda i: 5 <= i <= 40 and TAGS[i % 7 % 3] != "B",
    ),
}


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    start=st.integers(0, PER_QUEUE),
    length=st.integers(0, PER_QUEUE),
    name=st.sampled_from(sorted(FILTERS)),
    pull=st.integers(1, 40),
    parts=st.integers(1, 5),
)
def test_broker_and_store_reads_agree(
    mixed: Cluster, start: int, length: int, name: str, pull: int, parts: int
) -> None:
    end = min(PER_QUEUE, start + length)
    options, keep = FILTERS[name]
    offsets = {
        "startingOffsets": json.dumps({MIXED: {"0": start, "1": start}}),
        "endingOffsets": json.dumps({MIXED: {"0": end, "1": end}}),
        "topic": MIXED, "pullBatchSize": str(pull), "minPartitions": str(parts), **options,
    }  # fmt: skip
    want = _expected(start, end, keep)
    assert _read({**offsets, "nameServer": mixed.namesrv}) == want
    assert _read({**offsets, "storePath": str(mixed.store)}) == want


def _keys(df: DataFrame) -> list[tuple[int, int]]:
    return sorted((r.queueId, r.queueOffset) for r in df.select("queueId", "queueOffset").collect())


def test_tag_filtered_spark_reads_have_no_duplicates(spark: SparkSession, mixed: Cluster) -> None:
    """A filtered pull answers up to pullBatchSize *matching* messages, past the end of its chunk."""
    for source in (
        ("nameServer", mixed.namesrv),
        ("brokerAddr", mixed.broker),
        ("storePath", str(mixed.store)),
    ):
        df = (
            spark.read.format("rocketmq").option(*source).option("topic", MIXED)
            .option("subExpression", "A || B").option("pullBatchSize", 4).load()
        )  # fmt: skip
        want = [(q, i) for q, i, _ in _expected(0, PER_QUEUE, lambda i: TAGS[i % 7 % 3] != "C")]
        assert _keys(df) == want, source


def test_a_reused_dataframe_reads_every_row_with_filter_pushdown_on(
    spark: SparkSession, mixed: Cluster
) -> None:
    """Spark 4.3 keeps the read that a query planned with pushed filters for the DataFrame's next
    queries that have none: the source takes no filters, so each query gets all it asks for."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        df = spark.read.format("rocketmq").option("storePath", str(mixed.store)).option("topic", MIXED).load()
        assert df.filter("queueId = 0").count() == PER_QUEUE
        assert df.count() == 2 * PER_QUEUE
        tagged_a = _expected(0, PER_QUEUE, lambda i: TAGS[i % 7 % 3] == "A")
        assert df.filter("tags = 'A'").count() == len(tagged_a)
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")


def _error(df: DataFrame) -> str:
    with pytest.raises(PySparkException) as info:
        df.collect()
    return str(info.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"subExpression": "n > 3"},
            "is not a tag list (a || b): for an SQL92 selector set expressionType=SQL92",
        ),
        (
            {
                "startingOffsets": '{"SparkMixed": {"0": 50, "1": 50}}',
                "endingOffsets": '{"SparkMixed": {"0": 10}}',
            },
            "startingOffsets 50 is after endingOffsets 10",
        ),
        ({"startingOffsets": '{"SparkMixed": {"1": 61}}'}, "startingOffsets 61 is past the queue's end (60)"),
        ({"topic": "NoSuchTopic"}, "topic NoSuchTopic does not exist in the store folder"),
        ({"filterPushdown": "true"}, "option filterPushdown is gone"),
    ],
    ids=["sql-without-type", "start-after-end", "start-past-end", "missing-topic", "pushdown"],
)
def test_reads_of_nothing_are_refused(
    spark: SparkSession, mixed: Cluster, options: dict[str, str], message: str
) -> None:
    reader = spark.read.format("rocketmq").option("storePath", str(mixed.store)).option("topic", MIXED)
    assert message in _error(reader.options(**options).load())


def test_kafka_habits(spark: SparkSession, mixed: Cluster) -> None:
    """kafkaCompatible columns, offsets JSON without a broker name, ISO timestamps, and patterns that
    leave out system, retry and DLQ topics."""
    kafka = (
        spark.read.format("rocketmq").option("nameServer", mixed.namesrv).option("topic", MIXED)
        .option("kafkaCompatible", "true").option("startingOffsets", '{"SparkMixed": {"0": 58, "1": 60}}')
        .load()
    )  # fmt: skip
    assert kafka.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "headers"]
    rows = kafka.orderBy("offset").collect()
    assert [(r.partition, r.offset, bytes(r.value)) for r in rows] == [(0, 58, b"m0-58"), (0, 59, b"m0-59")]
    headers = {h.key: bytes(h.value) for h in rows[0].headers}
    assert headers["n"] == b"58" and headers["TAGS"] == TAGS[58 % 7 % 3].encode() and rows[0].key is None
    newest = spark.read.format("rocketmq").option("storePath", str(mixed.store)).option("topic", MIXED).load()
    last = newest.agg({"storeTimestamp": "max"}).first()
    assert last is not None
    since = (
        spark.read.format("rocketmq").option("storePath", str(mixed.store)).option("topic", MIXED)
        .option("startingTimestamp", last[0].isoformat()).load()
    )  # fmt: skip
    assert 1 <= since.count() < 2 * PER_QUEUE
    mixed.send("%DLQ%spark-pattern-cg", [b"dead"])
    pattern = (
        spark.read.format("rocketmq").option("nameServer", mixed.namesrv).option("subscribePattern", ".*")
    )
    topics = {r.topic for r in pattern.load().select("topic").distinct().collect()}
    assert MIXED in topics and not any(
        t.startswith(("%DLQ%", "%RETRY%", "RMQ_SYS_", "rmq_sys_")) for t in topics
    )
