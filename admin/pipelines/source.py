"""The ``rocketmq`` PySpark data source: batch and streaming reads, batch and streaming writes.

Options (case-insensitive): ``nameServer`` | ``brokerAddr`` | ``storePath``; ``topic`` |
``subscribePattern`` (with ``includeSystemTopics``) | ``assign``; ``startingOffsets``/``endingOffsets``
(earliest, latest, ``{"T":{"broker-a":{"0":23}}}`` or ``{"T":{"0":23}}``, -2 earliest, -1 latest);
``startingTimestamp``/``endingTimestamp`` (ms or ISO 8601); ``subExpression`` with ``expressionType``
(TAG or SQL92); ``minPartitions``; ``pullBatchSize``; ``failOnDataLoss``; ``fetchOffset.numRetries``,
``fetchOffset.retryIntervalMs``; ``kafkaCompatible``; streaming: ``maxOffsetsPerTrigger``,
``consumerGroup``; writing: ``nameServer``, ``topic``, ``producerGroup``, ``rateLimit`` (messages/s per
task); reading and writing: ``accessKey`` with ``secretKeyEnv`` | ``secretKeyFile`` | ``secretKey``,
``tls``, ``tlsCaFile``, ``tlsCertFile``, ``tlsKeyFile`` (admin/pipelines/secure.py). Writes need
``.mode("append")``: a topic cannot be overwritten.

Nothing here imports pyarrow or numpy at module level: PySpark imports this module (through
pyspark_rocketmq) to find the source, and a Python without them must still find it and then hear
what it lacks (:func:`check_worker_python`).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from admin.pipelines import columns as C
from admin.pipelines import plan as PL
from admin.pipelines.plan import OptionError, QueueRange, ReadSpec

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)


def check_worker_python() -> None:
    """Fail with what is missing where Spark's Python workers lack the libraries reads and writes need
    (a worker started with another Python than the one rmqkit[spark] is installed in)."""
    missing = [m for m in ("pyarrow", "numpy") if importlib.util.find_spec(m) is None]
    if missing:
        version = ".".join(map(str, sys.version_info[:2]))
        raise RuntimeError(
            f"Spark's Python workers run {sys.executable} (Python {version}), which cannot import "
            f"{' or '.join(missing)}: install rmqkit[spark] into that Python, or set PYSPARK_PYTHON "
            "(spark.pyspark.python) to the Python rmqkit[spark] is installed in"
        )


class RangePartition(InputPartition):
    """A queue range and the read spec of the query that planned it; ``commits``: the range is all of
    its queue's part of a stream's batch, so its end goes to the consumer group once it is read."""

    def __init__(self, rng: QueueRange, spec: ReadSpec, *, commits: bool = False) -> None:
        super().__init__(rng)
        self.rng = rng
        self.spec = spec
        self.commits = commits


def _read(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    from admin.pipelines.readers import read_range

    assert isinstance(partition, RangePartition)
    if partition.rng.end > partition.rng.start:
        yield from read_range(partition.spec, partition.rng)
    if partition.commits and (
        problem := commit_group(partition.spec, {partition.rng.queue: partition.rng.end})
    ):
        log.warning("committing offsets of group %s failed: %s", partition.spec.consumer_group, problem)


def commit_group(spec: ReadSpec, offsets: dict[PL.QueueRef, int]) -> str:
    """Commit ``offsets`` as the stream's consumer group's (option consumerGroup); "" or why it failed.
    The group's offsets are a view of progress for tools such as ``rmq group lag``: the checkpoint is
    the record, so a failure is logged, never raised."""
    group = spec.consumer_group
    if not group or spec.store_path or not offsets:
        return ""
    try:
        PL.retrying(spec, lambda: PL.ClusterTarget(spec).commit(group, offsets))
    except Exception as exc:
        return str(exc) or type(exc).__name__
    return ""


class RocketMQReader(DataSourceReader):
    """Batch reads. Filters are not pushed: Spark 4.3 keeps the read it planned with pushed filters for
    the DataFrame's later queries without filters, which would then miss rows."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec

    def partitions(self) -> Sequence[InputPartition]:
        def plan() -> list[QueueRange]:
            target = PL.open_target(self.spec)
            try:
                return PL.plan_ranges(target, self.spec)
            finally:
                target.close()

        ranges = PL.retrying(self.spec, plan)
        parts = [RangePartition(r, self.spec) for r in PL.split(ranges, self.spec.min_partitions)]
        return parts or [RangePartition(QueueRange(PL.QueueRef("", "", -1, ""), 0, 0), self.spec)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)


Key = tuple[str, str, int]  # topic, broker, queue id


def _key(r: PL.QueueRef) -> Key:
    return (r.topic, r.broker, r.queue_id)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets of record are the checkpoint's ``{"topic": {"broker": {"queueId": offset}}}``. The consumer
    group (option consumerGroup) gets a queue's batch end as soon as the task that read it has read it
    all: Spark calls a Python source's ``commit`` only when it plans the next batch and never calls its
    ``stop``, so a stream stopped between two batches would leave its last batch uncommitted. The end
    of the last completed batch is committed again when the next batch is planned (a read split
    between several tasks is committed then only)."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec
        self.refs: dict[Key, PL.QueueRef] = {}
        self.bounds: dict[Key, tuple[int, int]] = {}
        self.until: dict[str, Any] | None = None
        self.committed: dict[str, Any] | None = None  # the group's offsets as last committed
        self.group_problem = ""  # why the last commit to the group failed (logged once per reason)

    def _latest(self) -> dict[PL.QueueRef, tuple[int, int]]:
        bounds = PL.queue_bounds(self.spec)
        for r, b in bounds.items():
            self.refs[_key(r)] = r
            self.bounds[_key(r)] = b
        return bounds

    def _lost(self, r: PL.QueueRef, problem: str, instead: str) -> None:
        """Fail the stream, or with failOnDataLoss=false log what happens ``instead``."""
        where = f"{r.topic}/{r.broker}/{r.queue_id}"
        if self.spec.fail_on_data_loss:
            raise RuntimeError(f"{where}: {problem}; set failOnDataLoss=false to read on from what is left")
        log.warning("%s: %s; %s (failOnDataLoss=false)", where, problem, instead)

    def initialOffset(self) -> dict[str, Any]:
        bounds = self._latest()

        def starts() -> dict[PL.QueueRef, int]:
            target = PL.open_target(self.spec)
            try:
                return PL.resolve(target, self.spec, list(bounds), bounds, "starting", self.spec.starting_ts)
            finally:
                target.close()

        return PL.to_offsets(PL.retrying(self.spec, starts))

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.spec.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.until = PL.to_offsets({r: hi for r, (_lo, hi) in self._latest().items()})

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        bounds = self._latest()
        self._commit_group(start)  # the end of the last completed batch
        ends: dict[PL.QueueRef, int] = {}
        begins: dict[PL.QueueRef, int] = {}
        for r, (lo, top) in bounds.items():
            hi = top
            if self.until is not None:
                cap = PL.lookup(self.until, r)
                hi = lo if cap is None else min(hi, cap)  # queues that appear later wait for the next run
            begin = PL.lookup(start, r)
            if begin is None:  # a queue that appeared later: from its earliest
                begin = lo
            elif begin > top:
                problem = (
                    f"offset {begin} is past the queue's end {top} (the topic deleted and created again?)"
                )
                self._lost(r, problem, "reading the queue from its start")
                begin = lo
            elif begin < lo:
                self._lost(r, f"offsets {begin} to {lo - 1} are gone (retention)", "skipped")
                begin = lo
            begins[r] = begin
            ends[r] = max(begin, hi)
        if isinstance(limit, ReadMaxRows):
            ends = _cap(begins, ends, limit.max_rows)
        out = PL.to_offsets(ends)
        for topic, brokers in start.items():  # queues a broker restart hides for now keep their place
            for broker, queues in brokers.items():
                for qid, off in queues.items():
                    out.setdefault(topic, {}).setdefault(broker, {}).setdefault(qid, int(off))
        return out

    def reportLatestOffset(self) -> dict[str, Any]:
        """The queues' newest offsets as last seen: Spark reports them as the source's latestOffset."""
        return PL.to_offsets({r: self.bounds[k][1] for k, r in self.refs.items()})

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        parts = []
        for topic, brokers in end.items():
            for broker, queues in brokers.items():
                for qid, hi in queues.items():
                    key = (topic, broker, int(qid))
                    if key not in self.refs:  # a restarted query: learn the addresses again
                        self._latest()
                    if key not in self.refs:  # not there now: its offsets stay as they were
                        continue
                    lo = PL.lookup(start, self.refs[key])
                    if lo is None or lo > int(hi):  # new, or read again from its start (see latestOffset)
                        lo = self.bounds[key][0]
                    if int(hi) > lo:
                        parts.append(QueueRange(self.refs[key], lo, int(hi)))
        whole = set(parts)
        return [
            RangePartition(r, self.spec, commits=r in whole)
            for r in PL.split(parts, self.spec.min_partitions)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_group(end)

    def _commit_group(self, offsets: dict[str, Any]) -> None:
        if offsets == self.committed:
            return
        found = {ref: off for ref in self.refs.values() if (off := PL.lookup(offsets, ref)) is not None}
        problem = commit_group(self.spec, found)
        if problem and problem != self.group_problem:
            log.warning(
                "committing offsets of group %s failed (tried again next batch): %s",
                self.spec.consumer_group, problem,
            )  # fmt: skip
        self.group_problem = problem
        if not problem:
            self.committed = offsets


def _cap(
    begins: dict[PL.QueueRef, int], ends: dict[PL.QueueRef, int], max_rows: int
) -> dict[PL.QueueRef, int]:
    """Share ``max_rows`` between the queues in proportion to what each has waiting."""
    waiting = {r: ends[r] - begins[r] for r in ends}
    total = sum(waiting.values())
    if total <= max_rows:
        return ends
    out = {}
    left = max_rows
    for r in sorted(waiting, key=lambda q: (q.topic, q.broker, q.queue_id)):
        share = min(waiting[r], left, max(1, waiting[r] * max_rows // total))
        out[r] = begins[r] + share
        left -= share
    return out


@dataclass
class SentMessage(WriterCommitMessage):
    partition: int
    count: int


def _task() -> tuple[int, str | None, int | None]:
    """This task's partition id, and the streaming query id and batch id when there are any."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, None, None
    batch = ctx.getLocalProperty("streaming.sql.batchId")
    return (
        ctx.partitionId(),
        ctx.getLocalProperty("sql.streaming.queryId"),
        None if batch is None else int(batch),
    )


class RocketMQWriter(DataSourceWriter):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        from admin.pipelines.sink import parse_write_options

        self.spec = parse_write_options(options, {f.name: f.dataType.simpleString() for f in schema.fields})
        self.write_id = uuid.uuid4().hex  # fixed on the driver: retried tasks reuse it

    def write(self, iterator: Iterator[Any]) -> SentMessage:
        from admin.pipelines.sink import send_rows

        partition, query, batch = _task()
        sent = send_rows(iterator, self.spec, query or self.write_id, batch or 0, partition)
        return SentMessage(partition, sent)


class RocketMQStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        from admin.pipelines.sink import parse_write_options

        self.spec = parse_write_options(options, {f.name: f.dataType.simpleString() for f in schema.fields})
        self.write_id = uuid.uuid4().hex

    def write(self, iterator: Iterator[Any]) -> SentMessage:
        from admin.pipelines.sink import send_rows

        partition, query, batch = _task()
        sent = send_rows(iterator, self.spec, query or self.write_id, batch or 0, partition)
        return SentMessage(partition, sent)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Sends are confirmed one by one; nothing is left to commit."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Sent messages cannot be taken back; their UNIQ_KEYs let consumers drop the retried copies."""


def read_columns(schema: StructType, kafka: bool) -> tuple[tuple[str, bool], ...] | None:
    """The ``(name, nullable)`` columns a user-specified schema selects (None: the source's own
    schema); each must be one of the source's columns with its type, NOT NULL only where it has a value."""
    types, nullable = (C.KAFKA_TYPES, C.KAFKA_NULLABLE) if kafka else (C.TYPES, C.NULLABLE)
    columns = tuple((f.name, f.nullable) for f in schema.fields)
    for f in schema.fields:
        want = types.get(f.name)
        if want is None:
            raise OptionError(f"schema: the rocketmq source has no column {f.name!r} ({', '.join(types)})")
        if f.dataType.simpleString() != want:
            raise OptionError(f"schema: column {f.name} is {want}, not {f.dataType.simpleString()}")
        if not f.nullable and f.name in nullable:
            raise OptionError(f"schema: column {f.name} can be null; declare it without NOT NULL")
    own = tuple((name, name in nullable) for name in types)
    return None if columns == own else columns


class RocketMQDataSource(DataSource):
    """Short name ``rocketmq``; see the module docstring for the options."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        check_worker_python()
        if PL.kafka_compatible(self.options):
            return C.ddl(C.KAFKA_TYPES, C.KAFKA_NULLABLE)
        return C.ddl(C.TYPES, C.NULLABLE)

    def reader(self, schema: StructType) -> DataSourceReader:
        check_worker_python()
        spec = PL.parse_options(self.options)
        return RocketMQReader(replace(spec, columns=read_columns(schema, spec.kafka)))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        check_worker_python()
        spec = PL.parse_options(self.options, streaming=True)
        return RocketMQStreamReader(replace(spec, columns=read_columns(schema, spec.kafka)))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        check_worker_python()
        if overwrite:
            raise OptionError('a topic cannot be overwritten: write with .mode("append")')
        return RocketMQWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        check_worker_python()
        return RocketMQStreamWriter(dict(self.options), schema)
