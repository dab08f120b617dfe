"""Pending timer messages, as ``rmq timer list`` and ``rmq timer cancel`` show them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TimerCancelReport", "TimerEntry", "TimerList"]


@dataclass(frozen=True, slots=True)
class TimerEntry:
    broker: str
    topic: str
    queue_id: int
    msg_id: str
    keys: str
    tags: str
    deliver_timestamp: int  # delivered at this time or soon after (the end of its timer slot)
    store_timestamp: int
    body_size: int


@dataclass(frozen=True, slots=True)
class TimerList:
    timers: list[TimerEntry]  # by due time
    more: bool  # a broker had more than it answered (the limit, or its scan budget)
    not_yet_listed: int  # stored timer messages the brokers have not yet put on their wheels


@dataclass(frozen=True, slots=True)
class TimerCancelReport:
    topic: str
    cancelled: list[TimerEntry]
