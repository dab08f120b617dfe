"""Stored message records to Arrow record batches, column at a time.

Records (the CommitLog layout, also the body of a PULL_MESSAGE answer) are decoded without a Python
loop per message: the fixed header fields are cut out with ``binary_slice``, byte-swapped with
``array.byteswap`` and viewed as Arrow integers; bodies and property strings are gathered with one
``take`` over an offsets array that alternates value and gap; properties are parsed with Arrow's
string kernels. Records this fast path does not cover (IPv6 hosts, topics over 127 bytes,
compressed bodies, messages without UNIQ_KEY) fall back to per-record work for those rows only.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from array import array
from collections.abc import Sequence
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from broker.protocol import properties as P
from broker.protocol.message import (
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    MAGIC_V1,
    STOREHOST_V6_FLAG,
    MessageRecord,
    decode_record,
)

TS: Final = pa.timestamp("us", tz="UTC")
PROPS: Final = pa.map_(pa.string(), pa.string())
SCHEMA: Final = pa.schema(
    [
        ("topic", pa.string()),
        ("brokerName", pa.string()),
        ("queueId", pa.int32()),
        ("queueOffset", pa.int64()),
        ("commitLogOffset", pa.int64()),
        ("msgId", pa.string()),
        ("uniqKey", pa.string()),
        ("body", pa.binary()),
        ("tags", pa.string()),
        ("keys", pa.string()),
        ("flag", pa.int32()),
        ("sysFlag", pa.int32()),
        ("bornTimestamp", TS),
        ("storeTimestamp", TS),
        ("bornHost", pa.string()),
        ("storeHost", pa.string()),
        ("reconsumeTimes", pa.int32()),
        ("properties", PROPS),
    ]
)
DDL: Final = (
    "topic string, brokerName string, queueId int, queueOffset bigint, commitLogOffset bigint, "
    "msgId string, uniqKey string, body binary, tags string, keys string, flag int, sysFlag int, "
    "bornTimestamp timestamp, storeTimestamp timestamp, bornHost string, storeHost string, "
    "reconsumeTimes int, properties map<string,string>"
)
HEADER: Final = 88  # bytes before the body of an IPv4 record
_PROP_RE: Final = "(?s)^(?P<k>[^\x01]+)\x01(?P<v>.+)$"
_I32: Final = struct.Struct(">i")
_NO_FAST: Final = BORNHOST_V6_FLAG | STOREHOST_V6_FLAG | COMPRESSED_FLAG


def empty_batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=SCHEMA)


def _bytes_of(arr: pa.Array, width: int) -> memoryview:
    """The value bytes of a fixed-width array (respecting its offset)."""
    buf = arr.buffers()[1]
    assert buf is not None
    return memoryview(buf)[arr.offset * width : (arr.offset + len(arr)) * width]


def be_ints(col: pa.Array, width: int) -> pa.Array:
    """A ``fixed_size_binary(width)`` column of big-endian integers as int32/int64."""
    a = array("i" if width == 4 else "q")
    a.frombytes(_bytes_of(col, width))
    a.byteswap()
    return pa.Array.from_buffers(pa.int32() if width == 4 else pa.int64(), len(col), [None, pa.py_buffer(a)])


def field(block: pa.Array, start: int, width: int) -> pa.Array:
    """Integer field at ``start`` of every value of ``block`` (binary values at least that long)."""
    return be_ints(pc.binary_slice(block, start, start + width).cast(pa.binary(width)), width)


def int32_array(values: array[int] | pa.Array) -> pa.Array:
    if isinstance(values, pa.Array):
        return values.cast(pa.int32())
    return pa.Array.from_buffers(pa.int32(), len(values), [None, pa.py_buffer(values)])


def to_i32(arr: pa.Array) -> array[int]:
    out = array("i")
    out.frombytes(_bytes_of(arr.cast(pa.int32()), 4))
    return out


def gather(data: pa.Buffer, starts: array[int], ends: array[int], total: int) -> pa.Array:
    """Binary column of ``data[starts[i]:ends[i]]``: values and gaps alternate in one offsets array,
    and ``take`` keeps the values (ranges ascending, not overlapping)."""
    n = len(starts)
    offsets = array("i", bytes(4 * (2 * n + 1)))
    offsets[0 : 2 * n : 2] = starts
    offsets[1 : 2 * n : 2] = ends
    offsets[2 * n] = total
    both = pa.Array.from_buffers(pa.binary(), 2 * n, [None, pa.py_buffer(offsets), data])
    return pc.take(both, _evens(n))


_EVENS: list[pa.Array] = [pa.array([], pa.int32())]


def _evens(n: int) -> pa.Array:
    """``0, 2, 4 …`` (n values), cut from a cached array."""
    if len(_EVENS[0]) < n:
        _EVENS[0] = pa.array(range(0, 2 * max(n, 4096), 2), pa.int32())
    return _EVENS[0].slice(0, n)


def _hosts(col: pa.Array) -> pa.Array:
    """8-byte packed IPv4 socket addresses to ``ip:port`` strings (each distinct value formatted once)."""
    enc = pc.dictionary_encode(col)
    names = [f"{ipaddress.IPv4Address(v[:4])}:{_I32.unpack(v[4:])[0]}" for v in enc.dictionary.to_pylist()]
    return pc.take(pa.array(names, pa.string()), enc.indices)


def parse_properties(props: pa.Array) -> pa.Array:
    """``name\\x01value\\x02…`` strings to ``map<string,string>`` (malformed entries dropped as Java does)."""
    parts = pc.split_pattern(props, "\x02")
    flat = parts.flatten()
    kv = pc.extract_regex(flat, _PROP_RE)
    keep = kv.is_valid()
    running = pc.cumulative_sum(keep.cast(pa.int32()))
    before = pa.concat_arrays([pa.array([0], pa.int32()), running])
    offsets = pc.take(before, parts.offsets)
    kept = kv.filter(keep)
    return pa.MapArray.from_arrays(offsets, kept.field("k"), kept.field("v"), type=PROPS)


def decode(
    data: bytes | bytearray | memoryview, starts: array[int], topic: str, broker: str
) -> pa.RecordBatch:
    """Decode the records of ``topic`` that start at ``starts`` in ``data`` (back to back, in order)."""
    n = len(starts)
    if n == 0:
        return empty_batch()
    buf = pa.py_buffer(data)
    total = len(data)
    ends = array("i", starts[1:])
    ends.append(total)
    recs = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(array("i", [*starts, total])), buf])
    head = pc.binary_slice(recs, 0, HEADER).cast(pa.binary(HEADER))
    magic = field(head, 4, 4)
    sys_flag = field(head, 36, 4)
    body_len = field(head, 84, 4)
    topic_raw = topic.encode()
    fast = (
        pc.all(pc.equal(magic, MAGIC_V1)).as_py()
        and pc.sum(pc.bit_wise_and(sys_flag, _NO_FAST)).as_py() == 0
        and len(topic_raw) <= 127
    )
    if not fast:
        return _slow(data, starts, broker)
    bstart = pc.add(int32_array(starts), HEADER)
    bend = pc.add(bstart, body_len)
    body = gather(buf, to_i32(bstart), to_i32(bend), total)
    pstart = pc.add(bend, 1 + len(topic_raw) + 2)
    props_bin = gather(buf, to_i32(pstart), ends, total)
    props = parse_properties(props_bin.cast(pa.string()))
    uniq = pc.map_lookup(props, P.UNIQ_KEY, "last")
    phys = field(head, 28, 8)
    store_raw = pc.binary_slice(head, 64, 72).cast(pa.binary(8))
    msg_id = uniq
    if uniq.null_count:
        ids = [
            u or (s + struct.pack(">q", p)).hex().upper()
            for u, s, p in zip(uniq.to_pylist(), store_raw.to_pylist(), phys.to_pylist(), strict=True)
        ]
        msg_id = pa.array(ids, pa.string())
    columns = [
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(broker, pa.string()), n),
        field(head, 12, 4),
        field(head, 20, 8),
        phys,
        msg_id,
        uniq,
        body,
        pc.map_lookup(props, P.TAGS, "last"),
        pc.map_lookup(props, P.KEYS, "last"),
        field(head, 16, 4),
        sys_flag,
        pc.multiply(field(head, 40, 8), 1000).cast(TS),
        pc.multiply(field(head, 56, 8), 1000).cast(TS),
        _hosts(pc.binary_slice(head, 48, 56).cast(pa.binary(8))),
        _hosts(store_raw),
        field(head, 72, 4),
        props,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=SCHEMA)


def _inflate(rec: MessageRecord) -> bytes:
    if rec.sys_flag & COMPRESSED_FLAG and (rec.sys_flag & COMPRESSION_TYPE_MASK) >> 8 in (0, 3):
        return zlib.decompress(rec.body)
    return rec.body


def _slow(data: bytes | bytearray | memoryview, starts: Sequence[int], broker: str) -> pa.RecordBatch:
    return records_batch([decode_record(data, s) for s in starts], broker)


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
        "tags": [r.properties.get(P.TAGS) for r in records],
        "keys": [r.properties.get(P.KEYS) for r in records],
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


def record_starts(data: bytes | bytearray | memoryview) -> array[int]:
    """Where each record of back-to-back records (a pull answer) starts."""
    starts = array("i")
    pos, n = 0, len(data)
    unpack = _I32.unpack_from
    while pos < n:
        starts.append(pos)
        pos += unpack(data, pos)[0]
    return starts
