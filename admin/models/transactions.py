"""Transactional (half) messages: the ones still waiting for their producer's commit or rollback, and the
ones the brokers stopped checking after transactionCheckMax checks."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HalfMessage", "HalfMessages", "HalfTopic", "ResumedHalves"]


@dataclass(frozen=True, slots=True)
class HalfTopic:
    """One topic's unresolved transactions on one broker."""

    topic: str  # the topic the message goes to once committed
    broker_name: str
    waiting: int  # half messages still checked
    oldest_waiting_ms: int  # born time of the oldest waiting one, epoch ms; 0 = none
    most_checks: int  # the most state checks any waiting one has had
    given_up: int  # checked transactionCheckMax times: no longer checked (resume to check again)
    oldest_given_up_ms: int  # born time of the oldest of those; 0 = none


@dataclass(frozen=True, slots=True)
class HalfMessage:
    """A half message the broker gave up checking (kept in TRANS_CHECK_MAX_TIME_TOPIC)."""

    msg_id: str  # its offset MessageId there: what resume names
    topic: str
    broker_name: str
    transaction_id: str
    born_ms: int
    checks: int


@dataclass(frozen=True, slots=True)
class HalfMessages:
    topics: list[HalfTopic]  # sorted by topic, broker
    given_up: list[HalfMessage]  # oldest first


@dataclass(frozen=True, slots=True)
class ResumedHalves:
    resumed: list[HalfMessage]  # back in the half queue, checked again from zero
    failed: dict[str, str]  # msg id -> why not
