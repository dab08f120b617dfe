"""PySpark pipelines: the ``rocketmq`` data source (admin/pipelines/source.py) and the jobs behind
``rmq spark`` (admin/pipelines/jobs.py). PySpark is an optional extra: nothing here imports it until
a function that needs it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession) -> None:
    """Register the ``rocketmq`` data source with ``spark`` (``spark.read.format("rocketmq")``)."""
    from admin.pipelines.source import RocketMQDataSource

    spark.dataSource.register(RocketMQDataSource)
