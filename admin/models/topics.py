"""Topics as ``rmq topic list`` shows them, and what a delete of a topic or group removed."""

from __future__ import annotations

from dataclasses import dataclass

from admin.models.names import TopicKind

__all__ = ["Deletion", "TopicList", "TopicSummary", "perm_text"]


def perm_text(perm: int) -> str:
    """RocketMQ's PermName.perm2String: ``RW-``, ``R--`` ... (read, write, inherit)."""
    return ("R" if perm & 4 else "-") + ("W" if perm & 2 else "-") + ("X" if perm & 1 else "-")


@dataclass(frozen=True, slots=True)
class TopicSummary:
    name: str
    kind: TopicKind
    clusters: list[str]
    brokers: list[str]  # broker names holding the topic
    read_queues: int  # summed over brokers
    write_queues: int
    perm: int | None  # of the first broker; None when no broker reported the topic
    order: bool


@dataclass(frozen=True, slots=True)
class TopicList:
    topics: list[TopicSummary]  # sorted by name


@dataclass(frozen=True, slots=True)
class Deletion:
    """What a delete removed: a topic or group from brokers (and a topic from NameServers)."""

    name: str
    brokers: list[str]
    namesrvs: list[str]
