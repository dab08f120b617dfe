"""Consumer groups: listings, connections, configuration, lag, and offset resets and clones."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "ClientInfo",
    "GroupChange",
    "GroupConfig",
    "GroupConnections",
    "GroupDeletion",
    "GroupDescription",
    "GroupLag",
    "GroupList",
    "GroupSpec",
    "GroupSummary",
    "OffsetClone",
    "OffsetReset",
    "QueueLag",
    "QueueReset",
    "ResetKind",
    "ResetTarget",
    "Subscription",
]


@dataclass(frozen=True, slots=True)
class GroupSummary:
    name: str
    system: bool  # created by the brokers or for tools
    brokers: list[str]  # broker names with the subscription group
    online: bool
    clients: int
    consume_type: str | None  # PUSH, PULL or POP while online
    message_model: str | None  # CLUSTERING or BROADCASTING while online
    consume_enable: bool
    orderly: bool
    retry_max_times: int


@dataclass(frozen=True, slots=True)
class GroupList:
    groups: list[GroupSummary]  # sorted by name


@dataclass(frozen=True, slots=True)
class ClientInfo:
    client_id: str
    address: str
    language: str
    version: int
    broker: str  # the broker that reported the connection


@dataclass(frozen=True, slots=True)
class Subscription:
    topic: str
    expression: str
    expression_type: str


@dataclass(frozen=True, slots=True)
class GroupConnections:
    group: str
    online: bool
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None
    clients: list[ClientInfo]  # one per client id (the first broker that reported it)
    subscriptions: list[Subscription]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """A subscription group's settings as the brokers hold them (the first broker's copy)."""

    consume_enable: bool
    consume_from_min_enable: bool
    consume_broadcast_enable: bool
    consume_message_orderly: bool
    retry_queue_nums: int
    retry_max_times: int
    broker_id: int
    which_broker_when_consume_slowly: int
    notify_consumer_ids_changed_enable: bool
    group_sys_flag: int
    consume_timeout_minute: int
    attributes: dict[str, str]


@dataclass(frozen=True, slots=True)
class QueueLag:
    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    diff: int
    inflight: int  # pulled but not yet committed
    last_timestamp: int  # store time of the last consumed message, ms; 0 = none


@dataclass(frozen=True, slots=True)
class GroupLag:
    group: str
    queues: list[QueueLag]  # sorted by topic, broker name, queue id
    diff_total: int
    inflight_total: int
    consume_tps: float


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group: str
    brokers: list[str]
    config: GroupConfig | None
    connections: GroupConnections
    lag: GroupLag


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """A group to create, or the changes of an update (None = keep the current value)."""

    name: str
    consume_enable: bool | None = None
    consume_from_min_enable: bool | None = None
    consume_broadcast_enable: bool | None = None
    orderly: bool | None = None
    retry_queue_nums: int | None = None
    retry_max_times: int | None = None


@dataclass(frozen=True, slots=True)
class GroupChange:
    group: str
    addresses: list[str]
    config: GroupConfig


@dataclass(frozen=True, slots=True)
class GroupDeletion:
    """What ``group delete`` removed; named as ``group create`` names what it wrote."""

    group: str
    addresses: list[str]  # brokers it was deleted from


class ResetKind(StrEnum):
    TIME = "time"
    OFFSET = "offset"
    EARLIEST = "earliest"
    LATEST = "latest"


@dataclass(frozen=True, slots=True)
class ResetTarget:
    kind: ResetKind
    value: int = 0  # epoch ms for TIME, the queue offset for OFFSET


@dataclass(frozen=True, slots=True)
class QueueReset:
    topic: str
    broker_name: str
    queue_id: int
    current: int  # consumer offset before; -1 = none committed
    target: int


@dataclass(frozen=True, slots=True)
class OffsetReset:
    group: str
    target: ResetTarget
    dry_run: bool
    queues: list[QueueReset]  # sorted by topic, broker name, queue id


@dataclass(frozen=True, slots=True)
class OffsetClone:
    source: str
    destination: str
    topic: str | None
    addresses: list[str]
