"""The message properties string: ``name 0x01 value 0x02`` repeated (reference §3.4)."""

from __future__ import annotations

from collections.abc import Mapping

NAME_VALUE_SEP = "\x01"
PROPERTY_SEP = "\x02"

# Names the client and broker use; user properties may not take them.
TAGS = "TAGS"
KEYS = "KEYS"
WAIT = "WAIT"
DELAY = "DELAY"
RETRY_TOPIC = "RETRY_TOPIC"
REAL_TOPIC = "REAL_TOPIC"
REAL_QID = "REAL_QID"
TRAN_MSG = "TRAN_MSG"
PGROUP = "PGROUP"
UNIQ_KEY = "UNIQ_KEY"
RECONSUME_TIME = "RECONSUME_TIME"
MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
CLUSTER = "CLUSTER"
MSG_REGION = "MSG_REGION"
TRACE_ON = "TRACE_ON"
MIN_OFFSET = "MIN_OFFSET"
MAX_OFFSET = "MAX_OFFSET"
TRANSACTION_ID = "__transactionId__"
TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
TRAN_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
TIMER_DELAY_MS = "TIMER_DELAY_MS"
TIMER_OUT_MS = "TIMER_OUT_MS"
SHARDING_KEY = "__SHARDINGKEY"
DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"
POP_CK = "POP_CK"

KEY_SEPARATOR = " "


def encode_properties(props: Mapping[str, str | None]) -> str:
    """Encode a property map; entries with a None value are skipped as Java does."""
    return "".join(
        f"{name}{NAME_VALUE_SEP}{value}{PROPERTY_SEP}" for name, value in props.items() if value is not None
    )


def decode_properties(text: str) -> dict[str, str]:
    """Decode a properties string, ignoring malformed segments the way Java's parser does."""
    result: dict[str, str] = {}
    if not text:
        return result
    for segment in text.split(PROPERTY_SEP):
        if len(segment) < 3:
            continue
        sep = segment.find(NAME_VALUE_SEP)
        if 0 < sep < len(segment) - 1:
            result[segment[:sep]] = segment[sep + 1 :]
    return result


def split_keys(keys: str | None) -> list[str]:
    """The business keys of a KEYS property (space separated, empty entries dropped)."""
    if not keys:
        return []
    return [k for k in keys.split(KEY_SEPARATOR) if k]
