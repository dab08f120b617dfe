"""Messages: lookups, reads, sends, retry and dead-letter topics, consumption tracks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.protocol.message import MessageRecord

__all__ = [
    "DirectDelivery",
    "MessageRange",
    "MessageTracks",
    "Messages",
    "OutgoingMessage",
    "SendReceipt",
    "SpecialTopic",
    "SpecialTopics",
    "TrackInfo",
]


@dataclass(frozen=True, slots=True)
class Messages:
    """Messages found, read or consumed; JSON uses the message object of docs/cli-json.md."""

    messages: list[MessageRecord]

    def to_dict(self) -> dict[str, Any]:
        from admin.store_tools import message_to_dict

        return {"messages": [message_to_dict(m) for m in self.messages]}


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    topic: str
    body: bytes
    tags: str | None = None
    keys: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    delay_level: int = 0
    broker_name: str | None = None
    queue_id: int | None = None


@dataclass(frozen=True, slots=True)
class DirectDelivery:
    """One stored message handed to one client's listener (consumeMessageDirectly) and its answer."""

    msg_id: str  # offset MessageId of the message
    topic: str
    group: str
    client_id: str
    result: str  # CR_SUCCESS, CR_LATER, CR_THROW_EXCEPTION, ... as RocketMQ's CMResult names it
    remark: str | None  # what the client added (the listener's status, or its exception)
    spent_ms: int  # how long the listener took

    @property
    def ok(self) -> bool:
        return self.result == "CR_SUCCESS"


@dataclass(frozen=True, slots=True)
class SendReceipt:
    topic: str
    broker_name: str
    queue_id: int
    queue_offset: int
    msg_id: str  # the broker's offset MessageId
    uniq_key: str  # the client id (UNIQ_KEY)
    status: str  # SEND_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE


@dataclass(frozen=True, slots=True)
class MessageRange:
    """Which messages ``message print`` reads: queue offsets or store times (None = open)."""

    broker_name: str | None = None
    queue_id: int | None = None
    from_offset: int | None = None
    to_offset: int | None = None  # exclusive
    begin_ms: int | None = None
    end_ms: int | None = None
    expression: str = "*"  # tag expression ``a || b``
    limit: int = 100


@dataclass(frozen=True, slots=True)
class SpecialTopic:
    """A group's retry or dead-letter topic and how many messages it holds."""

    group: str
    topic: str
    messages: int
    brokers: list[str]
    last_updated: int


@dataclass(frozen=True, slots=True)
class SpecialTopics:
    topics: list[SpecialTopic]  # sorted by group


@dataclass(frozen=True, slots=True)
class TrackInfo:
    """Whether one consumer group consumed a message (mqadmin's MessageTrack)."""

    group: str
    track_type: str  # CONSUMED, CONSUMED_BUT_FILTERED, PULL, NOT_CONSUME_YET, NOT_ONLINE, ...
    detail: str | None


@dataclass(frozen=True, slots=True)
class MessageTracks:
    message: MessageRecord
    tracks: list[TrackInfo]  # sorted by group
