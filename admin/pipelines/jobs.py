"""The pipelines behind ``rmq spark``: archive a topic to Parquet, report dead letters, replay messages.

Each job takes a SparkSession (admin/pipelines/session.py builds one) and the read options of the
``rocketmq`` source, and reports progress through a callback of one-line messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.protocol.names import DLQ_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    """Progress that goes nowhere."""


def source(spark: SparkSession, options: dict[str, str]) -> DataFrame:
    return spark.read.format("rocketmq").options(**options).load()


@dataclass(frozen=True, slots=True)
class ArchiveResult:
    rows: int
    dates: list[str]
    path: str


def archive(
    spark: SparkSession,
    options: dict[str, str],
    path: str,
    *,
    overwrite: bool = False,
    progress: Progress = _quiet,
) -> ArchiveResult:
    """Messages to Parquet under ``path``, partitioned by ``date`` (UTC day of the store time)."""
    from pyspark.sql import functions as F

    progress("planning the read")
    df = source(spark, options).withColumn("date", F.to_date("storeTimestamp"))
    progress(f"writing Parquet to {path}")
    df.write.mode("overwrite" if overwrite else "append").partitionBy("date").parquet(path)
    written = spark.read.parquet(path)
    counts = written.groupBy("date").count().orderBy("date").collect()
    return ArchiveResult(sum(r["count"] for r in counts), [str(r["date"]) for r in counts], path)


@dataclass(frozen=True, slots=True)
class DlqRow:
    group: str
    origin_topic: str
    reconsume_times: int
    messages: int
    oldest_age_s: float
    newest_age_s: float


def dlq_report(spark: SparkSession, options: dict[str, str], *, progress: Progress = _quiet) -> list[DlqRow]:
    """Dead letters by group, origin topic and reconsume times, with their ages (seconds)."""
    from pyspark.sql import functions as F

    opts = {k: v for k, v in options.items() if k.lower() not in ("topic", "subscribepattern", "assign")}
    opts["subscribePattern"] = f"{DLQ_PREFIX}.*"
    opts["includeSystemTopics"] = "true"  # dead-letter topics are left out of patterns otherwise
    progress("reading the dead-letter topics")
    now = time.time()
    df = source(spark, opts)
    origin = F.coalesce(df.properties["DLQ_ORIGIN_TOPIC"], df.properties["RETRY_TOPIC"], F.lit(""))
    rows = (
        df.groupBy(
            F.substring(df.topic, len(DLQ_PREFIX) + 1, 1000).alias("group"),
            origin.alias("origin"),
            df.reconsumeTimes.alias("reconsume"),
        )
        .agg(
            F.count("*").alias("n"),
            F.min("storeTimestamp").alias("oldest"),
            F.max("storeTimestamp").alias("newest"),
        )
        .orderBy("group", "origin", "reconsume")
        .collect()
    )
    return [
        DlqRow(
            r["group"],
            r["origin"],
            r["reconsume"],
            r["n"],
            now - r["oldest"].timestamp(),
            now - r["newest"].timestamp(),
        )
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class ReplayResult:
    rows: int
    topic: str
    dry_run: bool


def replay(
    spark: SparkSession,
    df: DataFrame,
    sink_options: dict[str, str],
    topic: str,
    *,
    rate: float | None = None,
    dry_run: bool = False,
    progress: Progress = _quiet,
) -> ReplayResult:
    """Send the rows of ``df`` (Parquet written by :func:`archive`, or a DLQ read) to ``topic``;
    ``sink_options`` are the ``rocketmq`` sink's (``nameServer`` and any credentials or TLS options).

    ``rate`` limits the whole job to that many messages per second (shared by the partitions).
    """
    from pyspark.sql import functions as F

    keep = [c for c in ("body", "tags", "keys", "properties") if c in df.columns]
    out = df.select(*keep)
    if "properties" in keep:  # the broker sets these again; the old UNIQ_KEY would hide the copies
        out = out.withColumn(
            "properties",
            F.map_filter(
                "properties",
                lambda k, _v: (
                    ~k.isin(
                        "UNIQ_KEY",
                        "WAIT",
                        "TAGS",
                        "KEYS",
                        "MIN_OFFSET",
                        "MAX_OFFSET",
                        "CLUSTER",
                        "REAL_TOPIC",
                        "REAL_QID",
                    )
                ),
            ),
        )
    rows = out.count()
    if dry_run:
        progress(f"dry run: {rows} message(s) would go to {topic}")
        return ReplayResult(rows, topic, True)
    parts = max(1, out.rdd.getNumPartitions())
    writer = out.write.format("rocketmq").options(**sink_options).option("topic", topic).mode("append")
    if rate:
        writer = writer.option("rateLimit", str(rate / parts))
    progress(f"sending {rows} message(s) to {topic}")
    writer.save()
    return ReplayResult(rows, topic, False)
