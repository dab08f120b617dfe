"""Between v2 ``Message`` protobufs and the broker's records and properties (what the proxy's
GrpcConverter does in RocketMQ). Pure functions; no IO."""

from __future__ import annotations

import hashlib
import time
import zlib
from typing import Any

from broker.grpc.schema import PB, Code, GrpcError
from broker.protocol import properties as P
from broker.protocol.message import COMPRESSED_FLAG, MessageRecord

# Property names that belong to the system: not shown as user properties, not settable by users.
SYSTEM_PROPERTIES = frozenset(
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
TRACE_CONTEXT = "TRACE_CONTEXT"

MS_AS_SECONDS_THRESHOLD = 100_000_000_000
MAX_DELAY_MS = 40 * 24 * 3600 * 1000
MT_NORMAL = 1
MT_FIFO = 2
MT_DELAY = 3
MT_TRANSACTION = 4


def md5_hex(body: bytes) -> str:
    return hashlib.md5(body).hexdigest().upper()


def timestamp(ms: int) -> Any:
    ts = PB.Timestamp()
    ts.FromMilliseconds(ms)
    return ts


def timestamp_ms(ts: Any) -> int:
    """A Timestamp in ms, leniently: rocketmq-python-client 5.1.2 puts milliseconds into
    ``seconds``, so a ``seconds`` beyond the year 5000 is read as milliseconds."""
    seconds = int(ts.seconds)
    if abs(seconds) > MS_AS_SECONDS_THRESHOLD:
        return seconds
    return seconds * 1000 + int(ts.nanos) // 1_000_000


def duration_ms(duration: Any) -> int:
    return int(duration.seconds) * 1000 + int(duration.nanos) // 1_000_000


def duration(ms: int) -> Any:
    d = PB.Duration()
    d.FromMilliseconds(ms)
    return d


def message_type_of(props: dict[str, str], sys_flag: int = 0) -> int:
    if props.get(P.TRAN_MSG) == "true":
        return MT_TRANSACTION
    if props.get(P.SHARDING_KEY):
        return MT_FIFO
    if props.get(P.TIMER_DELIVER_MS) or props.get(P.DELAY) or props.get(P.TIMER_DELAY_SEC):
        return MT_DELAY
    return MT_NORMAL


def body_of(record: MessageRecord) -> bytes:
    if record.sys_flag & COMPRESSED_FLAG:
        try:
            return zlib.decompress(record.body)
        except zlib.error:
            return record.body
    return record.body


def fill_message(
    msg: Any,
    record: MessageRecord,
    *,
    receipt_handle: str | None = None,
    invisible_ms: int | None = None,
    delivery_attempt: int | None = None,
    topic: str | None = None,
) -> None:
    """Write a stored record into ``msg``, the (empty) v2 Message a consumer receives, in place:
    a response's own message field, so no copy (MD5 digest, upper-case hex)."""
    props = record.properties
    body = body_of(record)
    msg.topic.name = topic or record.topic
    user = msg.user_properties
    for key, value in props.items():
        if key not in SYSTEM_PROPERTIES:
            user[key] = value
    sp = msg.system_properties
    tag = props.get(P.TAGS)
    if tag:
        sp.tag = tag
    keys = props.get(P.KEYS)
    if keys:
        sp.keys.extend(P.split_keys(keys))
    sp.message_id = record.msg_id
    sp.body_digest.type = 2  # MD5
    sp.body_digest.checksum = md5_hex(body)
    sp.body_encoding = 1  # IDENTITY
    sp.message_type = message_type_of(props, record.sys_flag)
    sp.born_timestamp.FromMilliseconds(record.born_timestamp)
    sp.born_host = record.born_host.rsplit(":", 1)[0]
    sp.store_timestamp.FromMilliseconds(record.store_timestamp)
    sp.store_host = record.store_host
    deliver = props.get(P.TIMER_DELIVER_MS)
    if deliver and deliver.lstrip("-").isdigit():
        sp.delivery_timestamp.FromMilliseconds(int(deliver))
    if receipt_handle is not None:
        sp.receipt_handle = receipt_handle
    sp.queue_id = record.queue_id
    sp.queue_offset = record.queue_offset
    if invisible_ms is not None:
        sp.invisible_duration.FromMilliseconds(invisible_ms)
    sp.delivery_attempt = delivery_attempt if delivery_attempt is not None else record.reconsume_times + 1
    group = props.get(P.SHARDING_KEY)
    if group:
        sp.message_group = group
    trace = props.get(TRACE_CONTEXT)
    if trace:
        sp.trace_context = trace
    msg.body = body


def properties_of(msg: Any, body: bytes, max_body: int) -> dict[str, str]:
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
        if digest.type == 2 and digest.checksum and digest.checksum.upper() != md5_hex(body):
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
