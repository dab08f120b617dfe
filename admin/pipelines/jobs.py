"""The pipelines behind ``rmq spark``: archive a topic to Parquet, report dead letters, replay messages.

Each job takes a SparkSession (admin/pipelines/session.py builds one) and the read options of the
``rocketmq`` source, and reports progress through a callback of one-line messages.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from admin.errors import BadInput
from admin.pipelines import plan as PL
from admin.pipelines.plan import Offsets
from broker.protocol.names import DLQ_PREFIX, dlq_topic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    """Progress that goes nowhere."""


def source(spark: SparkSession, options: dict[str, str]) -> DataFrame:
    return spark.read.format("rocketmq").options(**options).load()


@dataclass(frozen=True, slots=True)
class ArchiveResult:
    rows: int  # written by this run
    total: int  # in the archive now
    dates: list[str]
    path: str


STATE = "_rmqkit_archive.json"  # in the archive folder: the queue offsets archived so far


def _latest(options: dict[str, str]) -> Offsets:
    """The newest offset of every queue the options read, fixed before a job reads, so that the job
    knows exactly what it has read."""
    bounds = PL.queue_bounds(PL.parse_options(options))
    return PL.to_offsets({r: hi for r, (_lo, hi) in bounds.items()})


def archive(
    spark: SparkSession,
    options: dict[str, str],
    path: str,
    *,
    overwrite: bool = False,
    progress: Progress = _quiet,
) -> ArchiveResult:
    """Messages to Parquet under ``path``, partitioned by ``date`` (UTC day of the store time). A run
    continues from where the archive's last run stopped (the offsets in ``path/_rmqkit_archive.json``),
    so running it again adds only what is new; ``overwrite`` starts the archive again."""
    from pyspark.sql import functions as F

    folder = Path(path)
    state = folder / STATE
    if overwrite and folder.exists():
        shutil.rmtree(folder)
    done: Offsets = json.loads(state.read_text())["offsets"] if state.exists() else {}
    if done and any(k.lower() in ("startingtimestamp", "startingoffsets") for k in options):
        raise BadInput(f"{path} continues from where its last run stopped: a start applies to a new archive")
    if not done and folder.exists() and any(folder.iterdir()):
        raise BadInput(
            f"{path} is not empty and is no archive of this command: choose another or --overwrite"
        )
    progress("planning the read")
    ends = _latest(options)
    read = dict(options, endingOffsets=json.dumps(ends))
    if done:
        read["startingOffsets"] = json.dumps(done)
    before = spark.read.parquet(path).count() if done else 0
    df = source(spark, read).withColumn("date", F.to_date("storeTimestamp"))
    progress(f"writing Parquet to {path}")
    df.write.mode("append").partitionBy("date").parquet(path)
    state.write_text(json.dumps({"offsets": ends}))
    written = spark.read.parquet(path)
    counts = written.groupBy("date").count().orderBy("date").collect()
    total = sum(r["count"] for r in counts)
    return ArchiveResult(total - before, total, [str(r["date"]) for r in counts], path)


def dlq_source(spark: SparkSession, options: dict[str, str], group: str) -> tuple[DataFrame, Offsets]:
    """The group's dead letters not replayed yet (those after the offsets the group has committed on its
    DLQ topic), and the offsets to commit once they are replayed (:func:`mark_replayed`)."""
    opts = dict(options, topic=dlq_topic(group), failOnDataLoss="false")
    spec = PL.parse_options(opts)
    target = PL.ClusterTarget(spec)

    def ask() -> tuple[dict[PL.QueueRef, tuple[int, int]], dict[PL.QueueRef, int]]:
        refs = target.queues(spec)
        return target.bounds(refs), target.committed(group, refs)

    bounds, starts = PL.retrying(spec, ask)
    ends = PL.to_offsets({r: hi for r, (_lo, hi) in bounds.items()})
    read = dict(opts, endingOffsets=json.dumps(ends))
    if starts:
        read["startingOffsets"] = json.dumps(PL.to_offsets(starts))
    return source(spark, read), ends


def mark_replayed(options: dict[str, str], group: str, ends: Offsets) -> None:
    """Commit ``ends`` as the group's offsets on its DLQ topic: the next replay starts after them."""
    spec = PL.parse_options(dict(options, topic=dlq_topic(group)))
    target = PL.ClusterTarget(spec)
    refs = PL.retrying(spec, lambda: target.queues(spec))
    PL.retrying(
        spec, lambda: target.commit(group, {r: o for r in refs if (o := PL.lookup(ends, r)) is not None})
    )


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
