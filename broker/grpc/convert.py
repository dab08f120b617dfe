"""Between v2 ``Message`` protobufs and the broker's records and properties (what the proxy's
GrpcConverter does in RocketMQ). Pure functions; no IO."""

from __future__ import annotations

import contextlib
import hashlib
import time
import zlib
from typing import Final

from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from broker.grpc.schema import PB, Code, GrpcError
from broker.protocol import properties as P
from broker.protocol.message import COMPRESSED_FLAG, read_record, unpack_host
from broker.protocol.msgid import create_offset_msg_id
from broker.protocol.properties import decode_properties

# Property names that belong to the system: not shown as user properties, not settable by users.
SYSTEM_PROPERTIES: Final = frozenset(
    {
        P.TAGS, P.KEYS, P.WAIT, P.DELAY, P.RETRY_TOPIC, P.REAL_TOPIC, P.REAL_QID, P.TRAN_MSG, P.PGROUP,
        P.UNIQ_KEY, P.RECONSUME_TIME, P.MAX_RECONSUME_TIMES, P.ORIGIN_MESSAGE_ID, P.CLUSTER,
        P.MSG_REGION, P.TRACE_ON, P.MIN_OFFSET, P.MAX_OFFSET, P.TRANSACTION_ID, P.TRANSACTION_CHECK_TIMES,
        P.CHECK_IMMUNITY_TIME_IN_SECONDS, P.TRAN_PREPARED_QUEUE_OFFSET, P.TIMER_DELIVER_MS,
        P.TIMER_DELAY_SEC, P.TIMER_DELAY_MS, P.TIMER_OUT_MS, P.SHARDING_KEY, P.DLQ_ORIGIN_TOPIC,
        P.DLQ_ORIGIN_MESSAGE_ID, P.POP_CK, "CONSUME_START_TIME", "BORN_HOST", "TRACE_CONTEXT",
        "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET", "__STARTDELIVERTIME", "TIMER_ENQUEUE_MS",
        "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "MSG_TYPE", "REPLY_TO_CLIENT", "CORRELATION_ID",
        "TTL", "ARRIVE_TIME", "EXTEND_UNIQ_INFO", "POP_CK_OFFSET", "1ST_POP_TIME",
    }
)  # fmt: skip
TRACE_CONTEXT: Final = "TRACE_CONTEXT"

MS_AS_SECONDS_THRESHOLD: Final = 100_000_000_000
MAX_DELAY_MS: Final = 40 * 24 * 3600 * 1000
MT_NORMAL: Final = PB.MessageType.NORMAL
MT_FIFO: Final = PB.MessageType.FIFO
MT_DELAY: Final = PB.MessageType.DELAY
MT_TRANSACTION: Final = PB.MessageType.TRANSACTION
DIGEST_MD5: Final = PB.DigestType.MD5  # read once: the enum wrapper's lookups are Python-level calls


def md5_hex(body: bytes) -> str:
    return hashlib.md5(body).hexdigest().upper()


def timestamp(ms: int) -> Timestamp:
    ts = Timestamp()
    ts.FromMilliseconds(ms)
    return ts


def timestamp_ms(ts: Timestamp) -> int:
    """A Timestamp in ms, leniently: rocketmq-python-client 5.1.2 puts milliseconds into
    ``seconds``, so a ``seconds`` beyond the year 5000 is read as milliseconds."""
    seconds = int(ts.seconds)
    if abs(seconds) > MS_AS_SECONDS_THRESHOLD:
        return seconds
    return seconds * 1000 + int(ts.nanos) // 1_000_000


def duration_ms(duration: Duration) -> int:
    return int(duration.seconds) * 1000 + int(duration.nanos) // 1_000_000


def duration(ms: int) -> Duration:
    d = Duration()
    d.FromMilliseconds(ms)
    return d


def message_type_of(props: dict[str, str]) -> PB.MessageType.ValueType:
    if props.get(P.TRAN_MSG) == "true":
        return MT_TRANSACTION
    if props.get(P.SHARDING_KEY):
        return MT_FIFO
    if props.get(P.TIMER_DELIVER_MS) or props.get(P.DELAY) or props.get(P.TIMER_DELAY_SEC):
        return MT_DELAY
    return MT_NORMAL


# Field numbers of messaging.proto that encode_message writes (tests/broker/grpc pins them to the schema).
# Final: the compiled module inlines them instead of looking them up on every use.
_RESOURCE_NAME_KEY: Final = b"\x12"  # Resource.name (2), length-delimited
_MESSAGE_TOPIC: Final = 1
_MESSAGE_USER_PROPERTIES: Final = 2
_MESSAGE_SYSTEM_PROPERTIES: Final = 3
_MESSAGE_BODY: Final = 4
_SP_TAG: Final = 1
_SP_KEYS: Final = 2
_SP_MESSAGE_ID: Final = 3
_SP_BODY_DIGEST: Final = 4
_SP_BODY_ENCODING: Final = 5
_SP_MESSAGE_TYPE: Final = 6
_SP_BORN_TIMESTAMP: Final = 7
_SP_BORN_HOST: Final = 8
_SP_STORE_TIMESTAMP: Final = 9
_SP_STORE_HOST: Final = 10
_SP_DELIVERY_TIMESTAMP: Final = 11
_SP_RECEIPT_HANDLE: Final = 12
_SP_QUEUE_ID: Final = 13
_SP_QUEUE_OFFSET: Final = 14
_SP_INVISIBLE_DURATION: Final = 15
_SP_DELIVERY_ATTEMPT: Final = 16
_SP_MESSAGE_GROUP: Final = 17
_SP_TRACE_CONTEXT: Final = 18
_RESPONSE_MESSAGE_KEY: Final = b"\x12"  # ReceiveMessageResponse.message, PullMessageResponse.message (2)
_DIGEST_MD5_TYPE: Final = b"\x08\x02"  # Digest.type (1) = MD5 (2)
_DIGEST_CHECKSUM_KEY: Final = b"\x12"  # Digest.checksum (2), length-delimited
_ENCODING_IDENTITY: Final = 1
_STATUS_CODE: Final = 1
_STATUS_MESSAGE: Final = 2
_ACK_RESPONSE_STATUS: Final = 1
_ACK_RESPONSE_ENTRIES: Final = 2
_ACK_ENTRY_MESSAGE_ID: Final = 1
_ACK_ENTRY_RECEIPT_HANDLE: Final = 2
_ACK_ENTRY_STATUS: Final = 3
_OK: Final = int(Code.OK)
_ONE_BYTE: Final = [bytes((n,)) for n in range(0x80)]
_SECONDS_KEY: Final = b"\x08"  # Timestamp.seconds, Duration.seconds (1), varint
_NANOS_KEY: Final = b"\x10"  # Timestamp.nanos, Duration.nanos (2), varint


def _varint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    if n < 0:
        n += 1 << 64  # negative int32/int64 values take ten bytes, as protobuf writes them
    groups: list[int] = []
    while n > 0x7F:
        groups.append(n & 0x7F | 0x80)
        n >>= 7
    groups.append(n)
    return bytes(groups)


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _add_bytes(parts: list[bytes], number: int, data: bytes) -> None:
    """Appends a length-delimited field (key, length, data) to ``parts``, joined once at the end."""
    parts.append(_key(number, 2))
    parts.append(_varint(len(data)))
    parts.append(data)


def _add_str(parts: list[bytes], number: int, text: str) -> None:
    _add_bytes(parts, number, text.encode("utf-8"))


def _add_int(parts: list[bytes], number: int, n: int) -> None:
    parts.append(_key(number, 0))
    parts.append(_varint(n))


def _add_ms(parts: list[bytes], number: int, ms: int) -> None:
    """A Timestamp or Duration (both: seconds = 1, nanos = 2) of ``ms`` milliseconds."""
    seconds = ms // 1000
    rest = ms - seconds * 1000
    inner = _SECONDS_KEY + _varint(seconds) if seconds else b""
    if rest:
        inner += _NANOS_KEY + _varint(rest * 1_000_000)
    _add_bytes(parts, number, inner)


def encode_message(
    record: bytes,
    *,
    receipt_handle: str | None = None,
    invisible_ms: int | None = None,
    delivery_attempt: int | None = None,
    topic: str | None = None,
    tags: frozenset[str] | None = None,
) -> bytes | None:
    """The serialized v2 Message a consumer receives for a stored record, written straight from the
    record's bytes (decoding the record and filling protobuf objects costs about 45 % more).
    None when ``tags`` is given and the record's tag is not among them (a tag hash collision). Raises
    :class:`RecordError` for bytes that are not one record."""
    head, body, stored_topic, props_at = read_record(record)
    props = decode_properties(str(record[props_at:], "utf-8", "replace"))
    tag = props.get(P.TAGS)
    if tags is not None and tag not in tags:
        return None
    if head.sys_flag & COMPRESSED_FLAG:
        with contextlib.suppress(zlib.error):
            body = zlib.decompress(body)
    sp: list[bytes] = []
    if tag:
        _add_str(sp, _SP_TAG, tag)
    for key in P.split_keys(props.get(P.KEYS)):
        _add_str(sp, _SP_KEYS, key)
    message_id = props.get(P.UNIQ_KEY) or create_offset_msg_id(head.store_host, head.physical_offset)
    _add_str(sp, _SP_MESSAGE_ID, message_id)
    digest = md5_hex(body).encode()
    _add_bytes(sp, _SP_BODY_DIGEST, _DIGEST_MD5_TYPE + _DIGEST_CHECKSUM_KEY + _varint(len(digest)) + digest)
    _add_int(sp, _SP_BODY_ENCODING, _ENCODING_IDENTITY)
    _add_int(sp, _SP_MESSAGE_TYPE, message_type_of(props))
    _add_ms(sp, _SP_BORN_TIMESTAMP, head.born_timestamp)
    _add_str(sp, _SP_BORN_HOST, unpack_host(head.born_host).rsplit(":", 1)[0])
    _add_ms(sp, _SP_STORE_TIMESTAMP, head.store_timestamp)
    _add_str(sp, _SP_STORE_HOST, unpack_host(head.store_host))
    deliver = props.get(P.TIMER_DELIVER_MS)
    if deliver and deliver.lstrip("-").isdigit():
        _add_ms(sp, _SP_DELIVERY_TIMESTAMP, int(deliver))
    if receipt_handle is not None:
        _add_str(sp, _SP_RECEIPT_HANDLE, receipt_handle)
    if head.queue_id:
        _add_int(sp, _SP_QUEUE_ID, head.queue_id)
    _add_int(sp, _SP_QUEUE_OFFSET, head.queue_offset)
    if invisible_ms is not None:
        _add_ms(sp, _SP_INVISIBLE_DURATION, invisible_ms)
    attempt = delivery_attempt if delivery_attempt is not None else head.reconsume_times + 1
    _add_int(sp, _SP_DELIVERY_ATTEMPT, attempt)
    group = props.get(P.SHARDING_KEY)
    if group:
        _add_str(sp, _SP_MESSAGE_GROUP, group)
    trace = props.get(TRACE_CONTEXT)
    if trace:
        _add_str(sp, _SP_TRACE_CONTEXT, trace)
    out: list[bytes] = []
    name = (topic or stored_topic).encode("utf-8")
    _add_bytes(out, _MESSAGE_TOPIC, _RESOURCE_NAME_KEY + _varint(len(name)) + name)
    for key, value in props.items():
        if key not in SYSTEM_PROPERTIES:
            entry: list[bytes] = []
            _add_str(entry, 1, key)
            _add_str(entry, 2, value)
            _add_bytes(out, _MESSAGE_USER_PROPERTIES, b"".join(entry))
    _add_bytes(out, _MESSAGE_SYSTEM_PROPERTIES, b"".join(sp))
    if body:
        _add_bytes(out, _MESSAGE_BODY, body)
    return b"".join(out)


def message_response(message: bytes) -> bytes:
    """A serialized ReceiveMessageResponse or PullMessageResponse holding an encoded Message."""
    return _RESPONSE_MESSAGE_KEY + _varint(len(message)) + message


def _encode_status(code: int, message: str) -> bytes:
    parts: list[bytes] = []
    _add_int(parts, _STATUS_CODE, code)
    if message:
        _add_str(parts, _STATUS_MESSAGE, message)
    return b"".join(parts)


_STATUS_OK: Final = _encode_status(_OK, "OK")


def _status(code: int, message: str) -> bytes:
    """An encoded Status; the one of nearly every answer is made once."""
    if code == _OK and message == "OK":
        return _STATUS_OK
    return _encode_status(code, message)


# What an AckMessage answers for one entry: its message id and receipt handle, a code and a message.
AckOutcome = tuple[str, str, int, str]


def ack_response(code: int, message: str, entries: list[AckOutcome]) -> bytes:
    """A serialized AckMessageResponse (one per acked message: a protobuf object costs four times as
    much to fill and serialize)."""
    out: list[bytes] = []
    _add_bytes(out, _ACK_RESPONSE_STATUS, _status(code, message))
    for message_id, handle, entry_code, entry_message in entries:
        entry: list[bytes] = []
        if message_id:
            _add_str(entry, _ACK_ENTRY_MESSAGE_ID, message_id)
        if handle:
            _add_str(entry, _ACK_ENTRY_RECEIPT_HANDLE, handle)
        _add_bytes(entry, _ACK_ENTRY_STATUS, _status(entry_code, entry_message))
        _add_bytes(out, _ACK_RESPONSE_ENTRIES, b"".join(entry))
    return b"".join(out)


def serialized(response: Message | bytes) -> bytes:
    """The serializer of the service's responses: bytes are encoded already, anything else is a
    protobuf."""
    if isinstance(response, bytes):
        return response
    return response.SerializeToString()


def properties_of(msg: PB.Message, body: bytes, max_body: int) -> dict[str, str]:
    """The record properties of a message a producer sends (``body`` is its body, read once);
    GrpcError for what RocketMQ refuses. They encode exactly (no empty value, no separator inside a
    name or value), so the send processor stores them as they are. Every field is read once: each
    read of a protobuf field builds a new Python object."""
    sp = msg.system_properties
    if len(body) > max_body:
        raise GrpcError(
            Code.MESSAGE_BODY_TOO_LARGE, f"message body size {len(body)} exceeds {max_body} bytes"
        )
    if sp.HasField("body_digest"):
        digest = sp.body_digest
        if digest.type == DIGEST_MD5 and digest.checksum and digest.checksum.upper() != md5_hex(body):
            raise GrpcError(Code.MESSAGE_CORRUPTED, "message body MD5 digest does not match the body")
    props: dict[str, str] = {}
    user = msg.user_properties
    if user:
        for key, value in user.items():
            if not key or key in SYSTEM_PROPERTIES:
                raise GrpcError(
                    Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property key {key!r} is reserved or blank"
                )
            if "\x01" in key + value or "\x02" in key + value:
                raise GrpcError(
                    Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property {key!r} contains control characters"
                )
            if value:  # an empty value is no property, as the record's text decodes
                props[key] = value
    if sp.HasField("tag"):
        tag = sp.tag
        if not tag.strip() or "|" in tag or "\x01" in tag or "\x02" in tag:
            raise GrpcError(Code.ILLEGAL_MESSAGE_TAG, f"tag {tag!r} is blank or contains '|'")
        props[P.TAGS] = tag
    keys = sp.keys
    if keys:
        listed = list(keys)
        for key in listed:
            if not key.strip() or " " in key or "\x01" in key or "\x02" in key:
                raise GrpcError(Code.ILLEGAL_MESSAGE_KEY, f"key {key!r} is blank or contains whitespace")
        props[P.KEYS] = P.KEY_SEPARATOR.join(listed)
    message_id = sp.message_id
    if not message_id:
        raise GrpcError(Code.ILLEGAL_MESSAGE_ID, "message_id is empty")
    if "\x01" in message_id or "\x02" in message_id or len(message_id) > 128:
        raise GrpcError(Code.ILLEGAL_MESSAGE_ID, "message_id is malformed")
    props[P.UNIQ_KEY] = message_id
    kinds = 0  # FIFO, delayed and transactional exclude each other
    if sp.HasField("message_group"):
        kinds += 1
        group = sp.message_group
        if not group.strip() or len(group) > 64 or "\x01" in group or "\x02" in group:
            raise GrpcError(Code.ILLEGAL_MESSAGE_GROUP, f"message group {group!r} is blank or too long")
        props[P.SHARDING_KEY] = group
    if sp.HasField("delivery_timestamp"):
        kinds += 1
        deliver_ms = timestamp_ms(sp.delivery_timestamp)
        if deliver_ms <= 0 or deliver_ms - int(time.time() * 1000) > MAX_DELAY_MS:
            raise GrpcError(
                Code.ILLEGAL_DELIVERY_TIME, f"delivery timestamp {deliver_ms} is not within the next 40 days"
            )
        props[P.TIMER_DELIVER_MS] = str(deliver_ms)
    if sp.message_type == MT_TRANSACTION:
        kinds += 1
        props[P.TRAN_MSG] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            seconds = duration_ms(sp.orphaned_transaction_recovery_duration) // 1000
            props[P.CHECK_IMMUNITY_TIME_IN_SECONDS] = str(max(0, seconds))
    if sp.HasField("trace_context"):
        trace = sp.trace_context
        if trace and "\x01" not in trace and "\x02" not in trace:  # advisory: a broken one is dropped
            props[TRACE_CONTEXT] = trace
    if kinds > 1:
        raise GrpcError(
            Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            "a message can be FIFO (message group), delayed or transactional, but only one of them",
        )
    return props
