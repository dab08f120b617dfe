"""The ``rocketmq`` PySpark data source: batch and streaming reads, batch and streaming writes.

Options (case-insensitive): ``nameServer`` | ``brokerAddr`` | ``storePath``; ``topic`` |
``subscribePattern`` | ``assign``; ``startingOffsets``/``endingOffsets`` (earliest, latest or
``{"T":{"broker-a":{"0":23}}}``, -2 earliest, -1 latest); ``startingTimestamp``/``endingTimestamp`` (ms);
``subExpression``; ``minPartitions``; ``pullBatchSize``; ``failOnDataLoss``; streaming:
``maxOffsetsPerTrigger``, ``consumerGroup``; writing: ``nameServer``, ``topic``, ``producerGroup``,
``rateLimit`` (messages/s per task); reading and writing: ``accessKey`` with ``secretKeyEnv`` |
``secretKeyFile`` | ``secretKey``, ``tls``, ``tlsCaFile``, ``tlsCertFile``, ``tlsKeyFile``
(admin/pipelines/secure.py). Writes need ``.mode("append")``: a topic cannot be overwritten.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from admin.pipelines import arrow as A
from admin.pipelines import plan as PL
from admin.pipelines.plan import OptionError, QueueRange, ReadSpec


class RangePartition(InputPartition):
    """A queue range and the read spec (with any pushed filters) of the query that planned it."""

    def __init__(self, rng: QueueRange, spec: ReadSpec) -> None:
        super().__init__(rng)
        self.rng = rng
        self.spec = spec


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _ms(value: Any) -> int | None:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int((value - _EPOCH) // dt.timedelta(milliseconds=1))
    if isinstance(value, int | float):
        return int(value)
    return None


def push(spec: ReadSpec, filters: Sequence[Filter]) -> tuple[ReadSpec, list[Filter]]:
    """Fold the filters the source can apply exactly into ``spec``; return the others."""
    rest: list[Filter] = []
    for f in filters:
        attribute: tuple[str, ...] = getattr(f, "attribute", ())
        col = attribute[0] if len(attribute) == 1 else None
        value = getattr(f, "value", None)
        if col == "queueId" and isinstance(f, EqualTo | In) and value is not None:
            ids = frozenset(int(v) for v in (value if isinstance(f, In) else (value,)))
            spec = replace(spec, queue_ids=ids if spec.queue_ids is None else spec.queue_ids & ids)
        elif col == "tags" and isinstance(f, EqualTo | In) and value is not None:
            tags = frozenset(str(v) for v in (value if isinstance(f, In) else (value,)) if v is not None)
            spec = replace(spec, extra_tags=tags if spec.extra_tags is None else spec.extra_tags & tags)
        elif col in ("queueOffset", "storeTimestamp") and isinstance(
            f, EqualTo | GreaterThan | GreaterThanOrEqual | LessThan | LessThanOrEqual
        ):
            v = int(value) if col == "queueOffset" and isinstance(value, int) else _ms(value)
            if v is None or (
                col == "storeTimestamp" and isinstance(value, dt.datetime) and value.microsecond % 1000
            ):
                rest.append(f)
                continue
            lo_name, hi_name = ("offset_min", "offset_max") if col == "queueOffset" else ("ts_min", "ts_max")
            lo = (
                v + 1
                if isinstance(f, GreaterThan)
                else v
                if isinstance(f, GreaterThanOrEqual | EqualTo)
                else None
            )
            hi = v if isinstance(f, LessThan) else v + 1 if isinstance(f, LessThanOrEqual | EqualTo) else None
            if lo is not None:
                cur_lo: int | None = getattr(spec, lo_name)
                spec = replace(spec, **{lo_name: lo if cur_lo is None else max(cur_lo, lo)})  # type: ignore[arg-type]
            if hi is not None:
                cur_hi: int | None = getattr(spec, hi_name)
                spec = replace(spec, **{hi_name: hi if cur_hi is None else min(cur_hi, hi)})  # type: ignore[arg-type]
        else:
            rest.append(f)
    return spec, rest


class RocketMQReader(DataSourceReader):
    def __init__(self, spec: ReadSpec) -> None:
        self.base = self.spec = spec

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        if not self.base.filter_pushdown:
            yield from filters  # Spark applies them all
            return
        # from the options again: Spark may push into a reader it planned an earlier query with
        self.spec, rest = push(self.base, filters)
        yield from rest

    def partitions(self) -> Sequence[InputPartition]:
        # Spark may plan a later query with this reader without calling pushFilters again: the
        # pushed spec belongs to this planning only and travels in its partitions.
        spec, self.spec = self.spec, self.base
        target = PL.open_target(spec)
        try:
            ranges = PL.plan_ranges(target, spec)
        finally:
            target.close()
        parts = [RangePartition(r, spec) for r in PL.split(ranges, spec.min_partitions)]
        return parts or [RangePartition(QueueRange(PL.QueueRef("", "", -1, ""), 0, 0), spec)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from admin.pipelines.readers import read_range

        assert isinstance(partition, RangePartition)
        if partition.rng.end > partition.rng.start:
            yield from read_range(partition.spec, partition.rng)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets of record are the checkpoint's ``{"topic": {"broker": {"queueId": offset}}}``."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec
        self.refs: dict[tuple[str, str, int], PL.QueueRef] = {}
        self.mins: dict[tuple[str, str, int], int] = {}
        self.until: dict[str, Any] | None = None

    def _latest(self) -> tuple[dict[PL.QueueRef, tuple[int, int]], PL.Target]:
        target = PL.open_target(self.spec)
        refs = target.queues(self.spec)
        bounds = target.bounds(refs)
        for r in refs:
            self.refs[(r.topic, r.broker, r.queue_id)] = r
            self.mins[(r.topic, r.broker, r.queue_id)] = bounds[r][0]
        return bounds, target

    def initialOffset(self) -> dict[str, Any]:
        bounds, target = self._latest()
        try:
            refs = list(bounds)
            ts = self.spec.starting_ts
            starts = PL.resolve(target, self.spec, refs, bounds, "starting", ts)
        finally:
            target.close()
        return PL.to_offsets(starts)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.spec.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        bounds, target = self._latest()
        target.close()
        self.until = PL.to_offsets({r: hi for r, (_lo, hi) in bounds.items()})

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        bounds, target = self._latest()
        target.close()
        ends: dict[PL.QueueRef, int] = {}
        begins: dict[PL.QueueRef, int] = {}
        for r, (lo, hi) in bounds.items():
            if self.until is not None:
                cap = PL.lookup(self.until, r)
                hi = lo if cap is None else min(hi, cap)  # queues that appear later wait for the next run
            begin = PL.lookup(start, r)
            begin = lo if begin is None else begin  # a queue that appeared later: from its earliest
            begins[r] = begin
            ends[r] = max(begin, hi)
        if isinstance(limit, ReadMaxRows):
            ends = _cap(begins, ends, limit.max_rows)
        return PL.to_offsets(ends)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        parts = []
        for topic, brokers in end.items():
            for broker, queues in brokers.items():
                for qid, hi in queues.items():
                    key = (topic, broker, int(qid))
                    if key not in self.refs:  # a restarted query: learn the addresses again
                        self._latest()[1].close()
                    lo = PL.lookup(start, self.refs[key])
                    lo = self.mins.get(key, 0) if lo is None else lo
                    if int(hi) > lo:
                        parts.append(QueueRange(self.refs[key], lo, int(hi)))
        return [RangePartition(r, self.spec) for r in PL.split(parts, self.spec.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from admin.pipelines.readers import read_range

        assert isinstance(partition, RangePartition)
        yield from read_range(partition.spec, partition.rng)

    def commit(self, end: dict[str, Any]) -> None:
        group = self.spec.consumer_group
        if not group or self.spec.store_path:
            return
        offsets = {ref: off for ref in self.refs.values() if (off := PL.lookup(end, ref)) is not None}
        if offsets:
            target = PL.ClusterTarget(self.spec)
            target.commit(group, offsets)


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

        self.spec = parse_write_options(options, schema.fieldNames())
        self.write_id = uuid.uuid4().hex  # fixed on the driver: retried tasks reuse it

    def write(self, iterator: Iterator[Any]) -> SentMessage:
        from admin.pipelines.sink import send_rows

        partition, query, batch = _task()
        sent = send_rows(iterator, self.spec, query or self.write_id, batch or 0, partition)
        return SentMessage(partition, sent)


class RocketMQStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        from admin.pipelines.sink import parse_write_options

        self.spec = parse_write_options(options, schema.fieldNames())
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


# name -> Spark type of every column the source reads, in order
_COLUMN_TYPES: dict[str, str] = {name: spark for name, _, spark in A.COLUMNS}
_OWN_COLUMNS: tuple[tuple[str, bool], ...] = tuple((f.name, f.nullable) for f in A.SCHEMA)


def read_columns(schema: StructType) -> tuple[tuple[str, bool], ...] | None:
    """The ``(name, nullable)`` columns a user-specified schema selects (None: the source's own
    schema); each must be one of the source's columns with its type, NOT NULL only where it has a value."""
    columns = tuple((f.name, f.nullable) for f in schema.fields)
    for f in schema.fields:
        want = _COLUMN_TYPES.get(f.name)
        if want is None:
            raise OptionError(
                f"schema: the rocketmq source has no column {f.name!r} ({', '.join(_COLUMN_TYPES)})"
            )
        if f.dataType.simpleString() != want:
            raise OptionError(f"schema: column {f.name} is {want}, not {f.dataType.simpleString()}")
        if not f.nullable and f.name in A.NULLABLE:
            raise OptionError(f"schema: column {f.name} can be null; declare it without NOT NULL")
    return None if columns == _OWN_COLUMNS else columns


class RocketMQDataSource(DataSource):
    """Short name ``rocketmq``; see the module docstring for the options."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return A.DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return RocketMQReader(replace(PL.parse_options(self.options), columns=read_columns(schema)))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        spec = PL.parse_options(self.options, streaming=True)
        return RocketMQStreamReader(replace(spec, columns=read_columns(schema)))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError('a topic cannot be overwritten: write with .mode("append")')
        return RocketMQWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return RocketMQStreamWriter(dict(self.options), schema)
