"""A topic's route, queue status and description, and what topic create and update take and return."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from admin.models.names import TopicKind

if TYPE_CHECKING:
    from broker.protocol.bodies import TopicConfig

__all__ = [
    "CompactionQueue",
    "ConsumeQueuePage",
    "ConsumeQueueUnit",
    "PermChange",
    "QueueStatus",
    "RouteBroker",
    "RouteQueue",
    "TopicChange",
    "TopicDescription",
    "TopicRoute",
    "TopicSpec",
    "TopicStatus",
]


@dataclass(frozen=True, slots=True)
class RouteBroker:
    cluster: str
    broker_name: str
    addresses: dict[int, str]  # broker id (0 = master) -> address


@dataclass(frozen=True, slots=True)
class RouteQueue:
    broker_name: str
    read_queues: int
    write_queues: int
    perm: int
    topic_sys_flag: int


@dataclass(frozen=True, slots=True)
class TopicRoute:
    topic: str
    brokers: list[RouteBroker]  # sorted by broker name
    queues: list[RouteQueue]
    order_conf: str | None


@dataclass(frozen=True, slots=True)
class QueueStatus:
    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int  # the next offset to be written
    last_updated: int  # store time of the newest message, ms; 0 = none

    @property
    def messages(self) -> int:
        return self.max_offset - self.min_offset


@dataclass(frozen=True, slots=True)
class ConsumeQueueUnit:
    """One 20-byte ConsumeQueue entry: where the message sits in the CommitLog, and its tag hash."""

    index: int  # the message's queue offset
    commitlog_offset: int
    size: int
    tags_code: int


@dataclass(frozen=True, slots=True)
class ConsumeQueuePage:
    """Consecutive units of one ConsumeQueue as its broker stores them."""

    topic: str
    broker_name: str
    address: str
    queue_id: int
    min_offset: int
    max_offset: int  # the next offset to be written
    units: list[ConsumeQueueUnit]


@dataclass(frozen=True, slots=True)
class TopicStatus:
    topic: str
    queues: list[QueueStatus]  # sorted by broker name, queue id
    total_messages: int
    put_tps: float


@dataclass(frozen=True, slots=True)
class CompactionQueue:
    """How far a COMPACTION topic's queue is compacted on one broker."""

    broker_name: str
    queue_id: int
    fed_offset: int  # messages below this queue offset are in the compaction log
    kept: int  # messages the compaction log holds (each key's newest, and the not yet compacted)
    disk_bytes: int  # of its compaction log and queue files
    compacted_offset: int  # the newest queue offset compaction has covered (-1: not yet)
    runs: int  # compactions since the broker started

    @classmethod
    def parse(cls, broker_name: str, key: str, value: str) -> CompactionQueue | None:
        """From a ``compactionProgress_<topic>_<queue>`` runtime entry's queue part and value."""
        parts = value.split(",")
        if not key.isdigit() or len(parts) != 5 or not all(p.lstrip("-").isdigit() for p in parts):
            return None
        fed, kept, disk, compacted, runs = (int(p) for p in parts)
        return cls(broker_name, int(key), fed, kept, disk, compacted, runs)


@dataclass(frozen=True, slots=True)
class TopicDescription:
    topic: str
    kind: TopicKind
    route: TopicRoute
    status: TopicStatus
    groups: list[str]  # consuming groups, sorted
    attributes: dict[str, str] = field(default_factory=dict)  # of the first master holding it
    compaction: list[CompactionQueue] = field(default_factory=list)  # COMPACTION topics only


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic to create, or the changes of an update (None = keep the current value)."""

    name: str
    read_queues: int | None = None
    write_queues: int | None = None
    perm: int | None = None
    order: bool | None = None
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicChange:
    topic: str
    addresses: list[str]  # brokers written to
    read_queues: int
    write_queues: int
    perm: int
    order: bool
    order_conf: str | None  # the ORDER_TOPIC_CONFIG value written to the NameServers
    attributes: dict[str, str] = field(default_factory=dict)  # what the first broker holds afterwards


@dataclass(frozen=True, slots=True)
class PermChange:
    """A topic's permission written to a broker: the permission it had, the configuration it has now."""

    address: str
    old_perm: int
    config: TopicConfig
