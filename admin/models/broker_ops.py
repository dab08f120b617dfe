"""Per-broker operations: how a group reads a topic (PULL or POP, set with setConsumeMode) and the
CommitLog read-ahead mode."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConsumeMode", "ConsumeModes", "ReadAheadChange", "ReadAheadChanges"]


@dataclass(frozen=True, slots=True)
class ConsumeMode:
    """How ``group`` reads ``topic`` on one broker, as QUERY_ASSIGNMENT hands it to consumers."""

    broker_name: str
    address: str
    mode: str  # PULL or POP
    pop_share_queue_num: int  # POP: also the queues of this many consumers after each one
    stored: bool  # False: nothing set on this broker, its default (PULL) applies


@dataclass(frozen=True, slots=True)
class ConsumeModes:
    topic: str
    group: str
    brokers: list[ConsumeMode]


@dataclass(frozen=True, slots=True)
class ReadAheadChange:
    """One broker's answer to SET_COMMITLOG_READ_MODE."""

    address: str
    master: str | None  # the master a slave replicates; None for a master or a broker named with -b
    remark: str


@dataclass(frozen=True, slots=True)
class ReadAheadChanges:
    random: bool  # True: read-ahead off (MADV_RANDOM); False: the kernel's default (MADV_NORMAL)
    brokers: list[ReadAheadChange]
