"""The message properties string: ``name 0x01 value 0x02`` repeated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

NAME_VALUE_SEP: Final = "\x01"
PROPERTY_SEP: Final = "\x02"

# Names the client and broker use; user properties may not take them.
TAGS: Final = "TAGS"
KEYS: Final = "KEYS"
WAIT: Final = "WAIT"
DELAY: Final = "DELAY"
RETRY_TOPIC: Final = "RETRY_TOPIC"
REAL_TOPIC: Final = "REAL_TOPIC"
REAL_QID: Final = "REAL_QID"
TRAN_MSG: Final = "TRAN_MSG"
PGROUP: Final = "PGROUP"
UNIQ_KEY: Final = "UNIQ_KEY"
RECONSUME_TIME: Final = "RECONSUME_TIME"
MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
CLUSTER: Final = "CLUSTER"
MSG_REGION: Final = "MSG_REGION"
TRACE_ON: Final = "TRACE_ON"
MIN_OFFSET: Final = "MIN_OFFSET"
MAX_OFFSET: Final = "MAX_OFFSET"
TRANSACTION_ID: Final = "__transactionId__"
TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
TRAN_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
TIMER_OUT_MS: Final = "TIMER_OUT_MS"
TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"  # "<topic>+<UNIQ_KEY>": the parked message cancels that one
SHARDING_KEY: Final = "__SHARDINGKEY"
TRANSFER_FLAG: Final = "TRANSFER_FLAG"  # a message moved between brokers
DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
POP_CK: Final = "POP_CK"

KEY_SEPARATOR: Final = " "


def encode_properties(props: Mapping[str, str | None]) -> str:
    """Encode a property map; entries with a None value are skipped as Java does."""
    return "".join(
        [f"{name}{NAME_VALUE_SEP}{value}{PROPERTY_SEP}" for name, value in props.items() if value is not None]
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


def encodes_exactly(text: str, props: Mapping[str, str]) -> bool:
    """Whether ``text`` is exactly ``encode_properties(props)``, given ``props`` was decoded from it.
    Every segment of a text that ends in a separator is a pair of the map unless one was dropped
    (empty or malformed) or a name repeated, and either makes the map's encoding shorter."""
    if text and text[-1] != PROPERTY_SEP:
        return False
    total = 0
    for name, value in props.items():
        total += len(name) + len(value) + 2
    return total == len(text)


def split_keys(keys: str | None) -> list[str]:
    """The business keys of a KEYS property (space separated, empty entries dropped)."""
    if not keys:
        return []
    return [k for k in keys.split(KEY_SEPARATOR) if k]
