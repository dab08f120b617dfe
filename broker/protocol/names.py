"""Topic names RocketMQ derives from a consumer group: its retry topic and its dead-letter topic."""

from __future__ import annotations

from typing import Final

RETRY_PREFIX: Final = "%RETRY%"
DLQ_PREFIX: Final = "%DLQ%"


def retry_topic(group: str) -> str:
    """Where the group's messages wait for their next delivery."""
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    """Where the group's messages go once they have used up their deliveries."""
    return DLQ_PREFIX + group


def is_group_topic(topic: str) -> bool:
    """A retry or dead-letter topic (their names may be longer than other topics')."""
    return topic.startswith((RETRY_PREFIX, DLQ_PREFIX))
