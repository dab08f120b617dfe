"""Stored message records to Arrow record batches, column at a time.

Records (the CommitLog layout, also the body of a PULL_MESSAGE answer) are decoded without a Python
loop per message: the 88-byte headers of a batch are copied into one buffer and read as a numpy
structured array of big-endian fields; bodies and property strings are copied straight from the
source buffer (a memory-mapped CommitLog file or a pull answer) into Arrow columns; properties are
split at their separators for the whole column at once. Batches this fast path does not cover (IPv6
hosts, topics over 127 bytes, compressed bodies, other record versions, inconsistent sizes) are
decoded record by record.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from admin.pipelines import columns as C
from admin.pipelines import properties as P
from admin.pipelines.gather import I64, gather
from broker.protocol import properties as MP
from broker.protocol.message import (
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    MAGIC_V1,
    STOREHOST_V6_FLAG,
    Buffer,
    MessageRecord,
    RecordError,
    decode_record,
    unpack_host,
)
from broker.protocol.msgid import create_offset_msg_id

TS: Final = pa.timestamp("us", tz="UTC")
_ARROW: Final = {  # Spark type -> the Arrow type Spark expects for it
    "string": pa.string(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "binary": pa.binary(),
    "timestamp": TS,
    "map<string,string>": P.PROPS,
    "array<struct<key:string,value:binary>>": pa.list_(
        pa.struct([("key", pa.string()), ("value", pa.binary())])
    ),
}
SCHEMA: Final = pa.schema([pa.field(n, _ARROW[t], nullable=n in C.NULLABLE) for n, t in C.TYPES.items()])
KAFKA_SCHEMA: Final = pa.schema(
    [pa.field(n, _ARROW[t], nullable=n in C.KAFKA_NULLABLE) for n, t in C.KAFKA_TYPES.items()]
)
HEADER: Final = 88  # bytes before the body of an IPv4 record
_I32: Final = struct.Struct(">i")
_NO_FAST: Final = BORNHOST_V6_FLAG | STOREHOST_V6_FLAG | COMPRESSED_FLAG
_FIELDS: Final = (  # the header fields read, as (name, big-endian type, position)
    ("total", ">i4", 0), ("magic", ">i4", 4), ("queue_id", ">i4", 12), ("flag", ">i4", 16),
    ("queue_offset", ">i8", 20), ("phys", ">i8", 28), ("sys_flag", ">i4", 36), ("born_ts", ">i8", 40),
    ("born_host", ">u8", 48), ("store_ts", ">i8", 56), ("store_host", ">u8", 64),
    ("reconsume", ">i4", 72), ("body_len", ">i4", 84),
)  # fmt: skip
_HEAD: Final = np.dtype({"names": [f[0] for f in _FIELDS], "formats": [f[1] for f in _FIELDS],
                         "offsets": [f[2] for f in _FIELDS], "itemsize": HEADER})  # fmt: skip


def project(batch: pa.RecordBatch, columns: Sequence[tuple[str, bool]]) -> pa.RecordBatch:
    """The ``(name, nullable)`` columns of a user-given schema; Spark checks names, types and nullability."""
    schema = pa.schema(
        [pa.field(n, batch.schema.field(n).type, nullable=nullable) for n, nullable in columns]
    )
    return pa.RecordBatch.from_arrays([batch[n] for n, _ in columns], schema=schema)


def kafka_view(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of the source's columns as Spark's Kafka source's columns."""
    props = batch["properties"]
    entries = pa.StructArray.from_arrays([props.keys, props.items.cast(pa.binary())], ["key", "value"])
    headers = pa.ListArray.from_arrays(props.offsets, entries, type=KAFKA_SCHEMA.field("headers").type)
    columns = [
        batch["keys"].cast(pa.binary()),
        batch["body"],
        batch["topic"],
        batch["queueId"],
        batch["queueOffset"],
        batch["storeTimestamp"],
        headers,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=KAFKA_SCHEMA)


def empty_batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=SCHEMA)


def _hosts(packed: npt.NDArray[np.uint64]) -> pa.Array:
    """Packed IPv4 socket addresses to ``ip:port`` strings (each distinct value formatted once)."""
    first = packed[0]
    if bool(np.all(packed == first)):  # a store host always, a born host mostly: no sort needed
        return pa.repeat(pa.scalar(unpack_host(int(first).to_bytes(8, "big")), pa.string()), len(packed))
    distinct, rows = np.unique(packed, return_inverse=True)
    names = [unpack_host(int(v).to_bytes(8, "big")) for v in distinct]
    return pc.take(pa.array(names, pa.string()), pa.array(rows.astype(np.int32)))


def _ints(values: npt.NDArray[Any], dtype: type[np.signedinteger[Any]]) -> pa.Array:
    return pa.array(values.astype(dtype))


def _times(ms: npt.NDArray[Any]) -> pa.Array:
    return pa.array(ms.astype(np.int64) * 1000).cast(TS)


def decode(data: Buffer, starts: I64, sizes: I64, topic: str, broker: str) -> pa.RecordBatch:
    """Decode the records of ``topic`` at ``data[starts[i]:starts[i] + sizes[i]]`` (in order)."""
    n = len(starts)
    if n == 0:
        return empty_batch()
    topic_raw = topic.encode()
    ends = starts + sizes
    if not (
        len(topic_raw) <= 127
        and int(starts[0]) >= 0
        and int(ends[-1]) <= len(data)
        and np.all(sizes >= HEADER)
        and np.all(starts[1:] >= ends[:-1])
    ):
        return _slow(data, starts, broker)
    head = np.frombuffer(_cut(data, starts, starts + HEADER).buffers()[2], _HEAD, n)
    body_len = head["body_len"].astype(np.int64)
    if not (
        np.all(head["magic"] == MAGIC_V1)
        and not np.any(head["sys_flag"] & _NO_FAST)
        and np.all(head["total"] == sizes)
        and np.all((body_len >= 0) & (HEADER + body_len + 1 + len(topic_raw) + 2 <= sizes))
    ):
        return _slow(data, starts, broker)
    body_start = starts + HEADER
    body_end = body_start + body_len
    body = _cut(data, body_start, body_end)
    props = P.parse(_cut(data, body_end + 1 + len(topic_raw) + 2, ends).cast(pa.string()))
    uniq, tags, keys = P.lookup(props, (MP.UNIQ_KEY, MP.TAGS, MP.KEYS))
    msg_id = uniq
    if uniq.null_count:
        ids = [
            u or create_offset_msg_id(s.to_bytes(8, "big"), p)
            for u, s, p in zip(
                uniq.to_pylist(), head["store_host"].tolist(), head["phys"].tolist(), strict=True
            )
        ]
        msg_id = pa.array(ids, pa.string())
    columns = [
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(broker, pa.string()), n),
        _ints(head["queue_id"], np.int32),
        _ints(head["queue_offset"], np.int64),
        _ints(head["phys"], np.int64),
        msg_id,
        uniq,
        body,
        tags,
        keys,
        _ints(head["flag"], np.int32),
        _ints(head["sys_flag"], np.int32),
        _times(head["born_ts"]),
        _times(head["store_ts"]),
        _hosts(head["born_host"]),
        _hosts(head["store_host"]),
        _ints(head["reconsume"], np.int32),
        props,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=SCHEMA)


def _cut(data: Buffer, starts: I64, ends: I64) -> pa.Array:
    """Copies of ``data``'s ranges; nothing returned refers to ``data``, so a memory map can close."""
    return gather(pa.py_buffer(data), starts, ends)


def _inflate(rec: MessageRecord) -> bytes:
    if rec.sys_flag & COMPRESSED_FLAG and (rec.sys_flag & COMPRESSION_TYPE_MASK) >> 8 in (0, 3):
        return zlib.decompress(rec.body)
    return rec.body


def _slow(data: Buffer, starts: I64, broker: str) -> pa.RecordBatch:
    return records_batch([decode_record(data, s) for s in starts.tolist()], broker)


def records_batch(records: Sequence[MessageRecord], broker: str) -> pa.RecordBatch:
    """Decoded records to a batch (the per-record path)."""
    rows = {
        "topic": [r.topic for r in records],
        "brokerName": [broker] * len(records),
        "queueId": [r.queue_id for r in records],
        "queueOffset": [r.queue_offset for r in records],
        "commitLogOffset": [r.physical_offset for r in records],
        "msgId": [r.msg_id for r in records],
        "uniqKey": [r.uniq_key for r in records],
        "body": [_inflate(r) for r in records],
        "tags": [r.properties.get(MP.TAGS) for r in records],
        "keys": [r.properties.get(MP.KEYS) for r in records],
        "flag": [r.flag for r in records],
        "sysFlag": [r.sys_flag for r in records],
        "bornTimestamp": [r.born_timestamp * 1000 for r in records],
        "storeTimestamp": [r.store_timestamp * 1000 for r in records],
        "bornHost": [r.born_host for r in records],
        "storeHost": [r.store_host for r in records],
        "reconsumeTimes": [r.reconsume_times for r in records],
        "properties": [list(r.properties.items()) for r in records],
    }
    return pa.RecordBatch.from_arrays([pa.array(rows[f.name], f.type) for f in SCHEMA], schema=SCHEMA)


def record_starts(data: Buffer) -> tuple[I64, I64]:
    """Where each record of back-to-back records (a pull answer) starts, and its size."""
    starts: list[int] = []
    sizes: list[int] = []
    pos, n = 0, len(data)
    unpack = _I32.unpack_from
    while pos < n:
        size = unpack(data, pos)[0] if n - pos >= 4 else 0
        if size < 4 or pos + size > n:
            raise RecordError(f"record at {pos} has a bad size {size}")
        starts.append(pos)
        sizes.append(size)
        pos += size
    return np.array(starts, np.int64), np.array(sizes, np.int64)
