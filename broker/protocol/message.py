"""The stored message record, the batch send body and the sysflag bits.

The same bytes are written to the CommitLog, returned by PULL/QUERY/VIEW responses and decoded by
clients, so this one codec serves the store, the servers and the SDK.
"""

from __future__ import annotations

import ipaddress
import mmap
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final, NamedTuple

# ISA-L's CRC32 (zlib's polynomial) is many times faster than zlib's on small bodies: every append needs one
from isal.isal_zlib import crc32

from broker.protocol import properties as message_properties
from broker.protocol.properties import decode_properties

MAGIC_V1: Final = -626843481  # 0xDAA320A7
MAGIC_V2: Final = -626843477  # 0xDAA320AB
BLANK_MAGIC: Final = -875286124  # 0xCBD43194, end-of-file marker
BLANK_SIZE: Final = 8

# MessageSysFlag
COMPRESSED_FLAG: Final = 0x1
MULTI_TAGS_FLAG: Final = 0x2
TRANSACTION_NOT_TYPE: Final = 0x0
TRANSACTION_PREPARED_TYPE: Final = 0x4
TRANSACTION_COMMIT_TYPE: Final = 0x8
TRANSACTION_ROLLBACK_TYPE: Final = 0xC
TRANSACTION_MASK: Final = 0xC
BORNHOST_V6_FLAG: Final = 0x10
STOREHOST_V6_FLAG: Final = 0x20
COMPRESSION_TYPE_MASK: Final = 0x700

# what the decoders read from: wire bytes, or a mapped store file without copying it
Buffer = bytes | bytearray | memoryview | mmap.mmap

MAX_PROPERTIES_BYTES: Final = 32767
MAX_TOPIC_BYTES: Final = 127
MAX_RETRY_TOPIC_BYTES: Final = 255

# TOTALSIZE .. BORNTIMESTAMP: fixed positions whatever the host sizes.
_HEAD: Final = struct.Struct(">iiiiiqqiq")  # 48 bytes
_I32: Final = struct.Struct(">i")
_I16: Final = struct.Struct(">h")
_I64: Final = struct.Struct(">q")
_HOST4: Final = struct.Struct(">4si")
_HOST16: Final = struct.Struct(">16si")
# after the hosts: RECONSUMETIMES, PREPARED_TRANSACTION_OFFSET, BODYLENGTH
_TAIL: Final = struct.Struct(">iqi")
_TS: Final = _I64
_HEAD_V4: Final = struct.Struct(">iiiiiqqiq8sq8siqi")  # everything up to the body for IPv4 hosts
_SIZE_MAGIC: Final = struct.Struct(">ii")
# record_length(0, 0, 0, 0): the size of an IPv4 record without body, topic and properties
_FIXED_V4: Final = 91
_TOPIC_LEN_V1: Final = tuple(bytes((n,)) for n in range(MAX_TOPIC_BYTES + 1))  # one-byte topic lengths
# what read_layout needs of an IPv4 record, in one unpack: TOTALSIZE, MAGIC, BODYCRC, SYSFLAG,
# STORETIMESTAMP, BODYLENGTH (the body starts right after it, at byte 88)
_FRAME_V4: Final = struct.Struct(">iii24xi16xq20xi")
# what scan_records needs of an IPv4 record: TOTALSIZE, MAGIC, QUEUEOFFSET, SYSFLAG, BODYLENGTH
_SCAN_V4: Final = struct.Struct(">ii12xq8xi44xi")

POS_TOTAL_SIZE: Final = 0
POS_MAGIC: Final = 4
POS_BODY_CRC: Final = 8
POS_QUEUE_ID: Final = 12
POS_FLAG: Final = 16
POS_QUEUE_OFFSET: Final = 20
POS_PHYSICAL_OFFSET: Final = 28
POS_SYSFLAG: Final = 36
POS_BORN_TIMESTAMP: Final = 40
POS_BORN_HOST: Final = 48


class RecordError(ValueError):
    """A record that is not a valid stored message (bad magic, size or CRC)."""


def body_crc(body: bytes | bytearray | memoryview) -> int:
    """BODYCRC as RocketMQ stores it: CRC32 with the top bit masked off."""
    return crc32(body) & 0x7FFFFFFF


def pack_host(addr: str) -> bytes:
    """``"ip:port"`` (IPv6 may be bracketed) to the 8- or 20-byte socket address of a record."""
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"not an ip:port address: {addr!r}")
    ip = ipaddress.ip_address(host.strip("[]"))
    if ip.version == 4:
        return _HOST4.pack(ip.packed, int(port))
    return _HOST16.pack(ip.packed, int(port))


# packed host -> its text: every decoded record has two hosts, and a store holds few distinct ones
_HOST_TEXTS: Final[dict[bytes, str]] = {}
_HOST_TEXTS_MAX: Final = 4096


def unpack_host(raw: bytes | memoryview) -> str:
    """The inverse of :func:`pack_host`."""
    key = bytes(raw)
    text = _HOST_TEXTS.get(key)
    if text is not None:
        return text
    if len(key) == 8:
        ip4, port = _HOST4.unpack(key)
        text = f"{socket.inet_ntoa(ip4)}:{port}"  # stay off ipaddress where it is common
    else:
        ip6, port = _HOST16.unpack(key)
        text = f"[{ipaddress.IPv6Address(ip6)}]:{port}"
    if len(_HOST_TEXTS) >= _HOST_TEXTS_MAX:
        _HOST_TEXTS.clear()
    _HOST_TEXTS[key] = text
    return text


def host_flags(born_host: bytes, store_host: bytes) -> int:
    """Sysflag bits that describe the host sizes of a record."""
    flags = 0
    if len(born_host) == 20:
        flags |= BORNHOST_V6_FLAG
    if len(store_host) == 20:
        flags |= STOREHOST_V6_FLAG
    return flags


def head_size(sys_flag: int) -> int:
    """Bytes of a record before its body: the fixed fields, whose hosts take 8 or 20 bytes each."""
    born = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & STOREHOST_V6_FLAG else 8
    return 48 + born + 8 + store + 16


def record_length(sys_flag: int, body_len: int, topic_len: int, props_len: int) -> int:
    """Total record size for the given part sizes (v1 topic length byte, v2 when the topic is longer)."""
    topic_field = 1 if topic_len <= MAX_TOPIC_BYTES else 2
    return head_size(sys_flag) + body_len + topic_field + topic_len + 2 + props_len


def encode_record(
    *,
    topic: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: bytes,
    properties: bytes,
    crc: int | None = None,
) -> bytes:
    """Encode one stored record. ``topic`` and ``properties`` are UTF-8 bytes, hosts packed."""
    topic_len = len(topic)
    if topic_len <= MAX_TOPIC_BYTES and len(born_host) == 8 and len(store_host) == 8:
        # the common case in one pack call: IPv4 hosts, one-byte topic length
        return b"".join(
            (
                _HEAD_V4.pack(
                    _FIXED_V4 + len(body) + topic_len + len(properties), MAGIC_V1,
                    body_crc(body) if crc is None else crc, queue_id, flag, queue_offset,
                    physical_offset, sys_flag & ~(BORNHOST_V6_FLAG | STOREHOST_V6_FLAG), born_timestamp,
                    born_host, store_timestamp, store_host, reconsume_times, prepared_transaction_offset,
                    len(body),
                ),
                body,
                _TOPIC_LEN_V1[topic_len],
                topic,
                _I16.pack(len(properties)),
                properties,
            )
        )  # fmt: skip
    sys_flag = (sys_flag & ~(BORNHOST_V6_FLAG | STOREHOST_V6_FLAG)) | host_flags(born_host, store_host)
    v2 = topic_len > MAX_TOPIC_BYTES
    total = record_length(sys_flag, len(body), topic_len, len(properties))
    return b"".join(
        (
            _HEAD.pack(
                total,
                MAGIC_V2 if v2 else MAGIC_V1,
                body_crc(body) if crc is None else crc,
                queue_id,
                flag,
                queue_offset,
                physical_offset,
                sys_flag,
                born_timestamp,
            ),
            born_host,
            _TS.pack(store_timestamp),
            store_host,
            _TAIL.pack(reconsume_times, prepared_transaction_offset, len(body)),
            body,
            _I16.pack(len(topic)) if v2 else bytes((len(topic),)),
            topic,
            _I16.pack(len(properties)),
            properties,
        )
    )


@dataclass(slots=True)
class MessageRecord:
    """A decoded stored message."""

    total_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict[str, str] = field(default_factory=dict)
    store_host_raw: bytes = b""

    @property
    def tags(self) -> str | None:
        return self.properties.get(message_properties.TAGS)

    @property
    def keys(self) -> list[str]:
        return message_properties.split_keys(self.properties.get(message_properties.KEYS))

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(message_properties.UNIQ_KEY)

    @property
    def offset_msg_id(self) -> str:
        """The broker-side MessageId: store host + physical offset in upper-case hex."""
        return (self.store_host_raw + _I64.pack(self.physical_offset)).hex().upper()

    @property
    def msg_id(self) -> str:
        """The id clients show: UNIQ_KEY when present, else the offset id."""
        return self.uniq_key or self.offset_msg_id

    @property
    def transaction_type(self) -> int:
        return self.sys_flag & TRANSACTION_MASK


class RecordLayout(NamedTuple):
    """Where the variable parts of a record sit, found without decoding the strings.

    A NamedTuple rather than a frozen dataclass: a recovery scan builds one per record, and a tuple
    is built several times faster.
    """

    total_size: int
    magic: int
    crc: int
    sys_flag: int
    store_timestamp: int
    body_pos: int
    body_len: int
    topic_pos: int
    topic_len: int
    props_pos: int
    props_len: int


def read_layout(buf: Buffer, pos: int, limit: int) -> RecordLayout:
    """Parse the framing of the record at ``pos`` (not past ``limit``) and check its sizes.

    Raises :class:`RecordError` when the bytes cannot be a record. The blank marker is
    reported through ``magic == BLANK_MAGIC`` with only ``total_size`` meaningful.
    """
    if limit - pos < _FRAME_V4.size:
        if limit - pos < 8:
            raise RecordError("truncated record header")
        total, magic = _SIZE_MAGIC.unpack_from(buf, pos)
        if magic == BLANK_MAGIC:
            return _blank_layout(total)
        crc = sys_flag = store_ts = body_len = 0  # too short for a record: refused below
    else:
        # one unpack reads every fixed field the IPv4 layout needs; IPv6 hosts re-read two of them
        total, magic, crc, sys_flag, store_ts, body_len = _FRAME_V4.unpack_from(buf, pos)
        if magic == BLANK_MAGIC:
            return _blank_layout(total)
    if magic != MAGIC_V1 and magic != MAGIC_V2:
        raise RecordError(f"bad magic code 0x{magic & 0xFFFFFFFF:08X}")
    end = pos + total
    if total < 91 or end > limit:
        raise RecordError(f"record size {total} runs past the end of the written data")
    if sys_flag & (BORNHOST_V6_FLAG | STOREHOST_V6_FLAG):
        wider = 12 * (bool(sys_flag & BORNHOST_V6_FLAG) + bool(sys_flag & STOREHOST_V6_FLAG))
        if total < 91 + wider:  # IPv6 hosts are 12 bytes longer each
            raise RecordError(f"record size {total} is too small for its IPv6 hosts")
        p = pos + POS_BORN_HOST + (20 if sys_flag & BORNHOST_V6_FLAG else 8)
        store_ts = _TS.unpack_from(buf, p)[0]
        p += 8 + (20 if sys_flag & STOREHOST_V6_FLAG else 8) + 12
        body_len = _I32.unpack_from(buf, p)[0]
        body_pos = p + 4
    else:
        body_pos = pos + _FRAME_V4.size
    p = body_pos + body_len
    if body_len < 0 or p + 3 > end:
        raise RecordError(f"body length {body_len} does not fit record")
    if magic == MAGIC_V2:
        topic_len = _I16.unpack_from(buf, p)[0]
        p += 2
    else:
        topic_len = buf[p]
        p += 1
    topic_pos = p
    p += topic_len
    if p + 2 > end:
        raise RecordError(f"topic length {topic_len} does not fit record")
    props_len = _I16.unpack_from(buf, p)[0]
    props_pos = p + 2
    if props_len < 0 or props_pos + props_len != end:
        raise RecordError(f"record size {total} does not match its parts")
    return RecordLayout(
        total, magic, crc, sys_flag, store_ts, body_pos, body_len, topic_pos, topic_len, props_pos, props_len
    )


def _blank_layout(total: int) -> RecordLayout:
    return RecordLayout(total, BLANK_MAGIC, 0, 0, 0, 0, 0, 0, 0, 0, 0)


def check_crc(buf: Buffer, layout: RecordLayout) -> bool:
    """Whether the body matches BODYCRC (a mapped file's body is copied: 1 KiB copies cost less than
    a memoryview, and leave no export that would keep the map from closing)."""
    body_pos = layout.body_pos
    return body_crc(buf[body_pos : body_pos + layout.body_len]) == layout.crc


class RecordHead(NamedTuple):
    """The fixed fields of a record after TOTALSIZE and MAGIC, with its hosts still packed."""

    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    store_timestamp: int
    store_host: bytes
    reconsume_times: int
    prepared_transaction_offset: int


def read_head(buf: Buffer, pos: int = 0) -> RecordHead:
    """The fixed fields of the record at ``pos``, whose framing was checked already (:func:`read_layout`,
    :func:`scan_records`); ``buf`` may end right after them."""
    if len(buf) - pos >= _HEAD_V4.size:  # the common case, IPv4 hosts, in one unpack
        v4 = _HEAD_V4.unpack_from(buf, pos)
        if not v4[7] & (BORNHOST_V6_FLAG | STOREHOST_V6_FLAG):
            return RecordHead._make(v4[2:14])  # BODYCRC .. PREPARED_TRANSACTION_OFFSET
    (_t, _m, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts) = _HEAD.unpack_from(buf, pos)
    p = pos + POS_BORN_HOST
    bl = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    born_host = bytes(buf[p : p + bl])
    p += bl
    store_ts = _TS.unpack_from(buf, p)[0]
    p += 8
    sl = 20 if sys_flag & STOREHOST_V6_FLAG else 8
    store_host = bytes(buf[p : p + sl])
    reconsume, prepared, _bl = _TAIL.unpack_from(buf, p + sl)
    return RecordHead(
        crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_host, store_ts, store_host,
        reconsume, prepared,
    )  # fmt: skip


def _checked_layout(buf: Buffer, pos: int) -> tuple[RecordLayout, str]:
    """The layout and topic of the record at ``pos``, or a :class:`RecordError` that says what is wrong."""
    try:
        layout = read_layout(buf, pos, len(buf))
    except RecordError as exc:
        raise RecordError(f"record at {pos}: {exc}") from None
    if layout.magic == BLANK_MAGIC:
        raise RecordError(f"blank end-of-file marker at {pos}")
    try:
        topic = str(buf[layout.topic_pos : layout.topic_pos + layout.topic_len], "utf-8")
    except UnicodeDecodeError as bad:  # not ``exc``: compiled, a name keeps the type of its first binding
        raise RecordError(f"record at {pos} has text that is not UTF-8: {bad}") from None
    return layout, topic


# What scan_records reads of a record: (where it starts, SYSFLAG, QUEUEOFFSET, body, topic, where its
# properties start, where it ends). read_head at the start gives the other fields; the properties stay
# bytes until asked for. A plain tuple: a pull builds one per message.
ScannedRecord = tuple[int, int, int, bytes, str, int, int]


def _v4_props_at(buf: bytes, pos: int, end: int, magic: int, sys_flag: int, body_len: int) -> int:
    """Where the properties of the record at ``pos`` (ending at ``end``, within ``buf``) start, when it
    is one with IPv4 hosts and a one-byte topic length whose framing holds; -1 for any other."""
    body_pos = pos + _FRAME_V4.size
    p = body_pos + body_len
    # body_pos <= p <= end - 3 also means the record is at least _FIXED_V4 bytes long
    if magic != MAGIC_V1 or sys_flag & (BORNHOST_V6_FLAG | STOREHOST_V6_FLAG) or not body_pos <= p <= end - 3:
        return -1
    props_pos = p + 3 + buf[p]
    if props_pos > end or props_pos + _I16.unpack_from(buf, props_pos - 2)[0] != end:
        return -1
    return props_pos


def scan_records(buf: bytes) -> list[ScannedRecord]:
    """Check the framing of concatenated records (a pull response body) and read the parts every
    consumer needs; raises :class:`RecordError` like :func:`decode_record`, except that properties are
    not decoded here.

    A consumer's hot path: a record with IPv4 hosts and a one-byte topic length is checked from one
    unpack of its fixed fields; any other record, and every invalid one, goes through
    :func:`read_layout`, which says what is wrong.
    """
    records: list[ScannedRecord] = []
    append = records.append
    unpack = _SCAN_V4.unpack_from
    body_at = _FRAME_V4.size
    topic_raw, topic = b"", ""  # the records of one pull share their topic: decode it once
    topic_len = -1
    pos = 0
    n = len(buf)
    last_head = n - body_at
    while pos < n:
        if pos <= last_head:
            total, magic, queue_offset, sys_flag, body_len = unpack(buf, pos)
            end = pos + total
            props_pos = _v4_props_at(buf, pos, end, magic, sys_flag, body_len) if end <= n else -1
            if props_pos >= 0:
                body_pos = pos + body_at
                p = body_pos + body_len
                try:
                    if buf[p] != topic_len or not buf.startswith(topic_raw, p + 1):
                        topic_raw = buf[p + 1 : props_pos - 2]
                        topic = str(topic_raw, "utf-8")
                        topic_len = len(topic_raw)
                except UnicodeDecodeError:
                    pass  # reported by _checked_layout
                else:
                    append((pos, sys_flag, queue_offset, buf[body_pos:p], topic, props_pos, end))
                    pos = end
                    continue
        layout, other_topic = _checked_layout(buf, pos)
        end = pos + layout.total_size
        body = buf[layout.body_pos : layout.body_pos + layout.body_len]
        queue_offset = _I64.unpack_from(buf, pos + POS_QUEUE_OFFSET)[0]
        append((pos, layout.sys_flag, queue_offset, body, other_topic, layout.props_pos, end))
        pos = end
    return records


def read_record(buf: bytes) -> tuple[RecordHead, bytes, str, int]:
    """The one record ``buf`` holds: its fixed fields, body, topic and where its properties start
    (they run to the end); raises :class:`RecordError` like :func:`scan_records`. A consumer's hot path
    for a record read on its own (a gRPC receive): a record with IPv4 hosts is read from one unpack."""
    n = len(buf)
    if n >= _HEAD_V4.size:
        v4 = _HEAD_V4.unpack_from(buf, 0)
        props_pos = _v4_props_at(buf, 0, v4[0], v4[1], v4[7], v4[14]) if v4[0] == n else -1
        if props_pos >= 0:
            p = _FRAME_V4.size + v4[14]
            try:
                topic = str(buf[p + 1 : props_pos - 2], "utf-8")
            except UnicodeDecodeError:
                pass  # reported by scan_records
            else:
                return RecordHead._make(v4[2:14]), buf[_FRAME_V4.size : p], topic, props_pos
    scanned = scan_records(buf)
    if len(scanned) != 1:
        raise RecordError(f"{len(scanned)} records where one was expected")
    _, _, _, body, topic, props_pos, _ = scanned[0]
    return read_head(buf), body, topic, props_pos


def decode_record(buf: Buffer, pos: int = 0, *, verify_crc: bool = False) -> MessageRecord:
    """Decode the record at ``pos``; raises :class:`RecordError` for anything invalid."""
    layout, topic = _checked_layout(buf, pos)
    if verify_crc and not check_crc(buf, layout):
        raise RecordError(f"body CRC mismatch at {pos}")
    head = read_head(buf, pos)
    try:
        props = str(buf[layout.props_pos : layout.props_pos + layout.props_len], "utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"record at {pos} has text that is not UTF-8: {exc}") from None
    return MessageRecord(
        total_size=layout.total_size,
        magic=layout.magic,
        body_crc=head.body_crc,
        queue_id=head.queue_id,
        flag=head.flag,
        queue_offset=head.queue_offset,
        physical_offset=head.physical_offset,
        sys_flag=head.sys_flag,
        born_timestamp=head.born_timestamp,
        born_host=unpack_host(head.born_host),
        store_timestamp=head.store_timestamp,
        store_host=unpack_host(head.store_host),
        reconsume_times=head.reconsume_times,
        prepared_transaction_offset=head.prepared_transaction_offset,
        body=bytes(buf[layout.body_pos : layout.body_pos + layout.body_len]),
        topic=topic,
        properties=decode_properties(props),
        store_host_raw=head.store_host,
    )


def decode_records(buf: Buffer) -> Iterator[MessageRecord]:
    """Decode concatenated records (a pull or query response body)."""
    pos = 0
    while pos < len(buf):
        rec = decode_record(buf, pos)
        yield rec
        pos += rec.total_size


def with_added_property(record: bytes, name: str, value: str) -> bytes:
    """``record`` with ``name=value`` appended to its properties; every other byte stays as it is
    (the caller knows the record lacks ``name``). Raises :class:`RecordError` for a record that is not
    one, or whose properties would outgrow their 2-byte length."""
    layout, _ = _checked_layout(record, 0)
    pair = message_properties.encode_properties({name: value}).encode()
    if layout.props_len and record[-1:] != pair[-1:]:  # a text without its closing separator
        pair = pair[-1:] + pair
    props_len = layout.props_len + len(pair)
    if props_len > MAX_PROPERTIES_BYTES:
        raise RecordError(f"adding {name} would make the properties {props_len} bytes long")
    out = bytearray(record)
    out += pair
    _I32.pack_into(out, POS_TOTAL_SIZE, layout.total_size + len(pair))
    _I16.pack_into(out, layout.props_pos - 2, props_len)
    return bytes(out)


# --- batch send body -----------------------------------------------------------------------

_BATCH_HEAD: Final = struct.Struct(">iiiii")  # TOTALSIZE, MAGIC(0), BODYCRC(0), FLAG, BODYLENGTH


# init=False with a hand-written __init__, compiled by mypyc (not frozen: mypyc compiles no
# __init__ of a frozen class); the generated one would be a Python call per message of a batch
@dataclass(slots=True, init=False)
class BatchItem:
    flag: int
    body: bytes
    properties: str

    def __init__(self, flag: int, body: bytes, properties: str) -> None:
        self.flag = flag
        self.body = body
        self.properties = properties


def encode_batch(items: list[BatchItem]) -> bytes:
    parts: list[bytes] = []
    for item in items:
        props = item.properties.encode("utf-8")
        total = 20 + len(item.body) + 2 + len(props)
        parts += [
            _BATCH_HEAD.pack(total, 0, 0, item.flag, len(item.body)),
            item.body,
            _I16.pack(len(props)),
            props,
        ]
    return b"".join(parts)


def decode_batch(body: bytes) -> list[BatchItem]:
    """Split a SEND_BATCH_MESSAGE body; raises :class:`RecordError` when it is malformed."""
    items: list[BatchItem] = []
    pos = 0
    n = len(body)
    while pos < n:
        if n - pos < 22:
            raise RecordError(f"truncated batch entry at {pos}")
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(body, pos)
        end = pos + total
        if total < 22 or end > n or body_len < 0 or pos + 20 + body_len + 2 > end:
            raise RecordError(f"batch entry at {pos} has inconsistent sizes")
        p = pos + 20
        msg_body = body[p : p + body_len]
        p += body_len
        props_len = _I16.unpack_from(body, p)[0]
        p += 2
        if props_len < 0 or p + props_len != end:
            raise RecordError(f"batch entry at {pos} has inconsistent sizes")
        try:
            props = body[p:end].decode("utf-8")
        except UnicodeDecodeError:
            raise RecordError(f"batch entry at {pos} has properties that are not UTF-8") from None
        items.append(BatchItem(flag, msg_body, props))
        pos = end
    return items
