"""Topics as ``rmq topic list`` shows them, and what a topic delete removed."""

from __future__ import annotations

from dataclasses import dataclass, field

from admin.models.names import TopicKind

__all__ = ["TopicDeletion", "TopicList", "TopicSummary", "perm_text"]


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
    attributes: dict[str, str] = field(default_factory=dict)  # of the first broker, as ``perm``


@dataclass(frozen=True, slots=True)
class TopicList:
    topics: list[TopicSummary]  # sorted by name


@dataclass(frozen=True, slots=True)
class TopicDeletion:
    """What ``topic delete`` removed; named as ``topic create`` names what it wrote."""

    topic: str
    addresses: list[str]  # brokers (masters and slaves) it was deleted from
    namesrvs: list[str]  # NameServers it was deleted from
