"""The sink refuses columns of the wrong type when the write is planned, and a task with a bad row
sends none of its rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from pyspark.errors import PySparkException

from tests.admin.pipelines.conftest import Cluster

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.servers

SINK = "SparkSinkChecks"


def _write(df: DataFrame, cluster: Cluster) -> str:
    with pytest.raises(PySparkException) as info:
        df.write.format("rocketmq").option("nameServer", cluster.namesrv).option("topic", SINK).mode(
            "append"
        ).save()
    return str(info.value)


def _sent(spark: SparkSession, cluster: Cluster) -> int:
    return (
        spark.read.format("rocketmq")
        .option("brokerAddr", cluster.broker)
        .option("topic", SINK)
        .load()
        .count()
    )


def test_bad_columns_and_rows_send_nothing(spark: SparkSession, cluster: Cluster) -> None:
    from admin.models import TopicSpec
    from admin.service import AdminService

    async def create() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec(SINK, 1, 1))

    cluster.call(create())
    cluster.send(SINK, [b"first"])
    as_int = spark.createDataFrame([(7,)], "body int")
    assert "column body must be binary or string, not int: cast it" in _write(as_int, cluster)
    props = spark.createDataFrame([(b"x", {"n": 1})], "body binary, properties map<string,int>")
    assert "column properties must be map<string,string>, not map<string,int>" in _write(props, cluster)
    rows = [(None if i == 7 else b"r%d" % i,) for i in range(10)]
    null_body = spark.createDataFrame(rows, "body binary").coalesce(1)
    assert "row 7 of task 0: a row has a null body; nothing of this task was sent" in _write(
        null_body, cluster
    )
    assert _sent(spark, cluster) == 1
