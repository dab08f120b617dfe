"""Message trace records in RocketMQ's text encoding (the Java client's TraceDataEncoder).

A trace message on ``RMQ_SYS_TRACE_TOPIC`` carries one or more records, each ended by FIELD_SPLITOR
(``\\x02``), their fields separated by CONTENT_SPLITOR (``\\x01``). Each record type has its own field
order:

* ``Pub``: type, timestamp, region, group, topic, msgId, tags, keys, storeHost, bodyLength, costTime,
  msgType (MessageType ordinal), offsetMsgId, success [, clientHost]
* ``SubBefore``: type, timestamp, region, group, requestId, msgId, retryTimes, keys
* ``SubAfter``: type, requestId, msgId, costTime, success, keys [, contextCode [, timestamp, group]]
* ``EndTransaction``: type, timestamp, region, group, topic, msgId, tags, keys, storeHost, msgType,
  transactionId, transactionState, fromTransactionCheck
* ``Recall``: type, timestamp, region, group, topic, msgId, success

The trace message's keys are the traced msgIds and their message keys, so the broker's IndexFile finds
a message's records by its id. Pure functions on strings, shared by the SDK (which writes records) and
the admin tools (which read them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum, IntEnum

from broker.protocol.properties import split_keys

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"  # TopicValidator.RMQ_SYS_TRACE_TOPIC
CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
DEFAULT_REGION = "DefaultRegion"  # MixAll.DEFAULT_TRACE_REGION_ID
TRACE_GROUP_PREFIX = "_INNER_TRACE_PRODUCER"
_NULL = "null"  # how Java's StringBuilder writes an absent tag or key


class TraceFormatError(ValueError):
    """Text that is not a list of trace records."""


class TraceType(Enum):
    """Record types; the value is the name written as a record's first field."""

    Pub = "Pub"
    Recall = "Recall"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(IntEnum):
    """Java's MessageType; a Pub record stores the ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3
    Order_Msg = 4


class ConsumeReturnType(IntEnum):
    """How a listener call ended; a SubAfter record stores the ordinal as its context code."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


TRANSACTION_STATES = ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW")


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One record: what happened to one message. Fields a type does not encode keep their defaults
    (a SubBefore has no topic, a SubAfter no region); ``tags``/``keys``/``transaction_id`` are None
    when absent (written as ``null``, as Java writes them)."""

    type: TraceType
    msg_id: str
    timestamp: int = 0  # epoch ms: when the send or the consumption started (SubAfter: ended)
    region_id: str = DEFAULT_REGION
    group: str = ""
    request_id: str = ""  # pairs a SubBefore with its SubAfter
    topic: str = ""
    tags: str | None = None
    keys: str | None = None  # the KEYS property: keys separated by spaces
    store_host: str = ""  # the broker address the message was sent to
    client_host: str = ""  # only in Pub records of some writers
    body_length: int = 0
    cost_ms: int = 0
    msg_type: MessageType = MessageType.Normal_Msg
    offset_msg_id: str = ""
    success: bool = True
    retry_times: int = 0
    context_code: int = 0  # ConsumeReturnType ordinal
    transaction_id: str | None = None
    transaction_state: str = ""  # one of TRANSACTION_STATES
    from_transaction_check: bool = False

    @property
    def index_keys(self) -> list[str]:
        """What the trace message carrying this record is indexed by: its msgId and message keys."""
        return [self.msg_id, *split_keys(self.keys)]


# -- encoding ---------------------------------------------------------------------------------------
def _text(value: str) -> str:
    """A field as written: separators inside it become spaces, so one odd key cannot break the
    records sharing its trace message."""
    if CONTENT_SPLITOR in value or FIELD_SPLITOR in value:
        return value.replace(CONTENT_SPLITOR, " ").replace(FIELD_SPLITOR, " ")
    return value


def _optional(value: str | None) -> str:
    """An optional field as written: ``null`` when absent (Java's decoders need the field there)."""
    return _text(value) if value else _NULL


def _flag(value: bool) -> str:
    return "true" if value else "false"


def encode(record: TraceRecord) -> str:
    """One record, FIELD_SPLITOR-terminated."""
    r, t, o = record, _text, _optional
    match r.type:
        case TraceType.Pub:
            fields = [
                r.type.value, str(r.timestamp), t(r.region_id), t(r.group), t(r.topic), t(r.msg_id),
                o(r.tags), o(r.keys), t(r.store_host), str(r.body_length), str(r.cost_ms),
                str(int(r.msg_type)), t(r.offset_msg_id), _flag(r.success),
            ]  # fmt: skip
        case TraceType.SubBefore:
            fields = [
                r.type.value, str(r.timestamp), t(r.region_id), t(r.group), t(r.request_id),
                t(r.msg_id), str(r.retry_times), o(r.keys),
            ]  # fmt: skip
        case TraceType.SubAfter:
            fields = [
                r.type.value, t(r.request_id), t(r.msg_id), str(r.cost_ms), _flag(r.success),
                o(r.keys), str(r.context_code), str(r.timestamp), t(r.group),
            ]  # fmt: skip
        case TraceType.EndTransaction:
            fields = [
                r.type.value, str(r.timestamp), t(r.region_id), t(r.group), t(r.topic), t(r.msg_id),
                o(r.tags), o(r.keys), t(r.store_host), str(int(r.msg_type)), o(r.transaction_id),
                t(r.transaction_state), _flag(r.from_transaction_check),
            ]  # fmt: skip
        case TraceType.Recall:
            fields = [
                r.type.value, str(r.timestamp), t(r.region_id), t(r.group), t(r.topic), t(r.msg_id),
                _flag(r.success),
            ]  # fmt: skip
    return CONTENT_SPLITOR.join(fields) + FIELD_SPLITOR


def encode_all(records: Iterable[TraceRecord]) -> str:
    return "".join(encode(r) for r in records)


# -- decoding ---------------------------------------------------------------------------------------
_MIN_FIELDS = {
    TraceType.Pub: 13,
    TraceType.SubBefore: 8,
    TraceType.SubAfter: 6,
    TraceType.EndTransaction: 13,
    TraceType.Recall: 7,
}


class _Fields:
    """The fields of one record, read with errors that name the record and the field."""

    def __init__(self, kind: TraceType, number: int, values: list[str]) -> None:
        self.kind, self.number, self.values = kind, number, values

    def fail(self, what: str) -> TraceFormatError:
        return TraceFormatError(f"{self.kind.value} record #{self.number}: {what}")

    def text(self, i: int) -> str:
        return self.values[i]

    def optional(self, i: int) -> str | None:
        value = self.values[i]
        return None if value in ("", _NULL) else value

    def integer(self, i: int, name: str) -> int:
        value = self.values[i]
        try:
            return int(value)
        except ValueError:
            raise self.fail(f"{name} {value!r} is not a number") from None

    def flag(self, i: int) -> bool:
        return self.values[i].lower() == "true"  # Boolean.parseBoolean

    def msg_type(self, i: int) -> MessageType:
        value = self.integer(i, "message type")
        try:
            return MessageType(value)
        except ValueError:
            raise self.fail(f"message type {value} is not one of 0..{len(MessageType) - 1}") from None


def _decode_one(kind: TraceType, f: _Fields) -> TraceRecord:
    n = len(f.values)
    match kind:
        case TraceType.Pub:
            # 13 fields: before offsetMsgId was written; 15: with the client host
            offset_id = f.text(12) if n >= 14 else ""
            return TraceRecord(
                kind, f.text(5), f.integer(1, "timestamp"), f.text(2), f.text(3),
                topic=f.text(4), tags=f.optional(6), keys=f.optional(7), store_host=f.text(8),
                body_length=f.integer(9, "body length"), cost_ms=f.integer(10, "cost time"),
                msg_type=f.msg_type(11), offset_msg_id=offset_id, success=f.flag(13 if n >= 14 else 12),
                client_host=f.text(14) if n >= 15 else "",
            )  # fmt: skip
        case TraceType.SubBefore:
            return TraceRecord(
                kind, f.text(5), f.integer(1, "timestamp"), f.text(2), f.text(3), f.text(4),
                retry_times=f.integer(6, "retry times"), keys=f.optional(7),
            )  # fmt: skip
        case TraceType.SubAfter:
            return TraceRecord(
                kind, f.text(2), f.integer(7, "timestamp") if n >= 9 else 0, "",
                f.text(8) if n >= 9 else "", f.text(1), cost_ms=f.integer(3, "cost time"),
                success=f.flag(4), keys=f.optional(5),
                context_code=f.integer(6, "context code") if n >= 7 and f.text(6) else 0,
            )  # fmt: skip
        case TraceType.EndTransaction:
            state = f.text(11)
            if state not in TRANSACTION_STATES:
                raise f.fail(f"transaction state {state!r} is not one of {', '.join(TRANSACTION_STATES)}")
            return TraceRecord(
                kind, f.text(5), f.integer(1, "timestamp"), f.text(2), f.text(3),
                topic=f.text(4), tags=f.optional(6), keys=f.optional(7), store_host=f.text(8),
                msg_type=f.msg_type(9), transaction_id=f.optional(10), transaction_state=state,
                from_transaction_check=f.flag(12),
            )  # fmt: skip
        case TraceType.Recall:
            return TraceRecord(
                kind, f.text(5), f.integer(1, "timestamp"), f.text(2), f.text(3),
                topic=f.text(4), success=f.flag(6),
            )  # fmt: skip


def decode(text: str) -> list[TraceRecord]:
    """The records of a trace message body; :class:`TraceFormatError` names the first bad one (an
    unknown type, too few fields, a number that is not one). Empty text holds no record."""
    records = []
    for number, line in enumerate((c for c in text.split(FIELD_SPLITOR) if c), start=1):
        values = line.split(CONTENT_SPLITOR)
        try:
            kind = TraceType(values[0])
        except ValueError:
            shown = values[0] if len(values[0]) <= 40 else values[0][:40] + "…"
            raise TraceFormatError(f"record #{number}: unknown trace type {shown!r}") from None
        fields = _Fields(kind, number, values)
        if len(values) < _MIN_FIELDS[kind]:
            raise fields.fail(f"{len(values)} fields, at least {_MIN_FIELDS[kind]} expected")
        records.append(_decode_one(kind, fields))
    return records
