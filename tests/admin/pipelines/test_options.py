"""The reader options ``brokerAddr`` and ``failOnDataLoss``, and the writer's ``shardingKey`` column."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyspark.errors import AnalysisException

from broker.store.message_store import MessageStore, PutMessage
from tests.admin.pipelines.conftest import BROKER, MESSAGES, TOPIC, Cluster
from tests.broker.store.helpers import small_config

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

LOSSY = "Lossy"
LOSSY_QUEUES = 2
LOSSY_MESSAGES = 240
SHARDED = "SparkSharded"
SHARDED_QUEUES = 4


def _by_uniq_key(df: DataFrame) -> dict[str, dict[str, Any]]:
    return {r.uniqKey: r.asDict() for r in df.collect()}


def test_broker_addr_reads_what_the_name_server_route_reads(spark: SparkSession, cluster: Cluster) -> None:
    via_namesrv = (
        spark.read.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", TOPIC).load()
    )
    via_broker = (
        spark.read.format("rocketmq").option("brokerAddr", cluster.broker).option("topic", TOPIC).load()
    )
    rows = _by_uniq_key(via_broker)
    assert len(rows) == MESSAGES and {r["brokerName"] for r in rows.values()} == {BROKER}
    assert rows == _by_uniq_key(via_namesrv)


@pytest.mark.parametrize(
    ("addr", "message"),
    [
        ("127.0.0.1:1", "connect to 127.0.0.1:1 failed"),
        ("not-an-address", "connect to not-an-address failed: address must be host:port"),
    ],
    ids=["refused", "malformed"],
)
def test_bad_broker_addr_fails_with_the_connect_error(spark: SparkSession, addr: str, message: str) -> None:
    df = spark.read.format("rocketmq").option("brokerAddr", addr).option("topic", TOPIC).load()
    with pytest.raises(AnalysisException, match=message):
        df.collect()


@pytest.fixture(scope="module")
def lossy_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Topic ``Lossy`` whose oldest CommitLog files retention deleted: message ``i`` went to queue
    ``i % 2`` at offset ``i // 2`` with body ``m<i>`` padded to 1000 bytes."""
    root = tmp_path_factory.mktemp("lossy-store")
    # a clock 100 hours ahead: every CommitLog file but the one being written has expired
    store = MessageStore(small_config(root), clock=lambda: time.time() + 100 * 3600)
    store.start()
    try:
        for i in range(LOSSY_MESSAGES):
            body = f"m{i}".encode().ljust(1000, b".")
            assert store.put_messages([PutMessage(LOSSY, i % LOSSY_QUEUES, body, {})]).ok
        assert store.clean_expired(manual=True).deleted_files
        assert all(store.min_offset(LOSSY, q) > 0 for q in range(LOSSY_QUEUES))
    finally:
        store.shutdown()
    return root


def _read_lossy(spark: SparkSession, store: Path, starts: dict[int, int], fail: str | None) -> DataFrame:
    reader = (
        spark.read.format("rocketmq").option("storePath", str(store)).option("topic", LOSSY)
        .option("startingOffsets", json.dumps({LOSSY: {"store": {str(q): o for q, o in starts.items()}}}))
    )  # fmt: skip
    if fail is not None:
        reader = reader.option("failOnDataLoss", fail)
    return reader.load()


def test_fail_on_data_loss(spark: SparkSession, lossy_store: Path) -> None:
    store = MessageStore.open_read_only(lossy_store)
    try:
        bounds = {q: (store.min_offset(LOSSY, q), store.max_offset(LOSSY, q)) for q in range(LOSSY_QUEUES)}
    finally:
        store.shutdown()
    left = {
        (q, off): f"m{off * LOSSY_QUEUES + q}".encode().ljust(1000, b".")
        for q, (lo, hi) in bounds.items()
        for off in range(lo, hi)
    }
    assert 0 < len(left) < LOSSY_MESSAGES

    from_zero = dict.fromkeys(bounds, 0)
    gone = rf"{LOSSY}/store/\d: offset 0 is gone \(the queue starts at [1-9]\d*\); set failOnDataLoss=false"
    for fail in (None, "true"):  # on by default
        with pytest.raises(AnalysisException, match=gone):
            _read_lossy(spark, lossy_store, from_zero, fail).collect()

    rows = _read_lossy(spark, lossy_store, from_zero, "false").collect()
    assert {(r.queueId, r.queueOffset): bytes(r.body) for r in rows} == left
    assert len(rows) == len(left)
    # starting exactly where the queues now begin loses nothing, so the check lets it through
    from_min = {q: lo for q, (lo, _hi) in bounds.items()}
    assert _read_lossy(spark, lossy_store, from_min, None).count() == len(left)


def test_offsets_naming_a_queue_the_read_lacks_are_refused(spark: SparkSession, lossy_store: Path) -> None:
    """A broker name copied from a cluster (a store folder's is ``store``) or a queue that does not exist
    would otherwise read the whole queue."""
    for offsets, named in (({"broker-a": {"0": 5}}, "broker-a/0"), ({"store": {"9": 5}}, "store/9")):
        reader = spark.read.format("rocketmq").option("storePath", str(lossy_store)).option("topic", LOSSY)
        reader = reader.option("endingOffsets", json.dumps({LOSSY: offsets}))
        with pytest.raises(AnalysisException, match=rf"endingOffsets names {LOSSY}/{named}, which this read"):
            reader.load().collect()


@pytest.fixture(scope="module")
def sharded_topic(cluster: Cluster) -> str:
    from admin.models import TopicSpec
    from admin.service import AdminService

    async def create() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec(SHARDED, SHARDED_QUEUES, SHARDED_QUEUES))

    cluster.call(create())
    return SHARDED


def test_sharding_key_keeps_a_keys_rows_on_one_queue_in_order(
    spark: SparkSession, cluster: Cluster, sharded_topic: str
) -> None:
    keys = [f"user-{k}" for k in range(6)]
    sent = [(f"{keys[i % len(keys)]}#{i}", keys[i % len(keys)]) for i in range(36)]
    # one partition: one task sends every row, in the DataFrame's order
    df = spark.createDataFrame(sent, "body string, shardingKey string").coalesce(1)
    df.write.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", sharded_topic).mode(
        "append"
    ).save()

    back = (
        spark.read.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", sharded_topic)
        .load().orderBy("queueId", "queueOffset").collect()
    )  # fmt: skip
    assert sorted(bytes(r.body).decode() for r in back) == sorted(body for body, _key in sent)
    queues: dict[str, set[int]] = {}
    order: dict[str, list[str]] = {}
    for r in back:
        key = r.properties["__SHARDINGKEY"]
        assert bytes(r.body).decode().startswith(f"{key}#")
        queues.setdefault(key, set()).add(r.queueId)
        order.setdefault(key, []).append(bytes(r.body).decode())
    assert all(len(q) == 1 for q in queues.values()), queues
    assert len(set().union(*queues.values())) > 1  # the keys spread over the queues
    assert order == {k: [body for body, key in sent if key == k] for k in keys}
