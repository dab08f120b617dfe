"""Topic names RocketMQ derives from a consumer group (its retry topic and its dead-letter topic), and
the internal topics where the broker parks other topics' messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from broker.protocol.properties import REAL_TOPIC

RETRY_PREFIX: Final = "%RETRY%"
DLQ_PREFIX: Final = "%DLQ%"

# Messages waiting for their time (delay levels, timers) or for their transaction's end are stored in
# these topics, with their own topic in the REAL_TOPIC property.
SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
TIMER_TOPIC: Final = "rmq_sys_wheel_timer"
TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
PARKING_TOPICS: Final = frozenset({SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC})


def retry_topic(group: str) -> str:
    """Where the group's messages wait for their next delivery."""
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    """Where the group's messages go once they have used up their deliveries."""
    return DLQ_PREFIX + group


def is_group_topic(topic: str) -> bool:
    """A retry or dead-letter topic (their names may be longer than other topics')."""
    return topic.startswith((RETRY_PREFIX, DLQ_PREFIX))


def real_topic(topic: str, properties: Mapping[str, str]) -> str:
    """The topic a stored message belongs to: its REAL_TOPIC while it is parked, else where it is."""
    if topic in PARKING_TOPICS:
        return properties.get(REAL_TOPIC) or topic
    return topic
