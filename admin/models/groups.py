"""Consumer groups: listings, connections, configuration, lag, the running state of their clients, and
offset resets and clones."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.protocol.group_bodies import SubscriptionGroupConfig

__all__ = [
    "BrokerProducers",
    "ClientInfo",
    "ClientRunningInfo",
    "GroupChange",
    "GroupClients",
    "GroupConfig",
    "GroupConfigAt",
    "GroupConnections",
    "GroupDeletion",
    "GroupDescription",
    "GroupLag",
    "GroupList",
    "GroupProgress",
    "GroupSpec",
    "GroupSummary",
    "OffsetClone",
    "OffsetReset",
    "OffsetSnapshot",
    "ProblemKind",
    "ProducerInstance",
    "QueueLag",
    "QueueProblem",
    "QueueReset",
    "QueueRuntime",
    "ResetKind",
    "ResetTarget",
    "Subscription",
    "TopicRates",
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
    lag: int  # messages stored and not yet consumed, over every queue the group has offsets on
    lag_ms: int  # how long the oldest of them has waited (now - its store time); 0 when caught up


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
class ProducerInstance:
    """One producer connection as its broker lists it (GET_ALL_PRODUCER_INFO)."""

    client_id: str
    remote_address: str  # as the broker writes it: ``/host:port``
    language: str
    version: int
    last_update: int  # epoch ms of its last heartbeat


@dataclass(frozen=True, slots=True)
class BrokerProducers:
    """The producers connected to one broker, by producer group (GET_ALL_PRODUCER_INFO)."""

    address: str
    groups: dict[str, list[ProducerInstance]]  # in the broker's order


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
class QueueRuntime:
    """One queue a client owns, as the client reports it (timestamps epoch ms, 0 = never)."""

    topic: str
    broker_name: str
    queue_id: int
    commit_offset: int  # the next offset the client will commit; -1 = none yet
    cached_count: int  # pulled, not yet consumed
    cached_size_mib: int
    cached_min_offset: int
    cached_max_offset: int
    consuming_count: int  # orderly: handed to the listener, not yet committed
    consuming_min_offset: int
    consuming_max_offset: int
    locked: bool  # orderly: the client holds the broker's lock on the queue
    try_unlock_times: int
    last_lock_timestamp: int
    dropped: bool
    last_pull_timestamp: int
    last_consume_timestamp: int


class ProblemKind(StrEnum):
    NOT_LOCKED = "not-locked"  # an orderly queue whose broker lock the client has not held for a while
    UNLOCK_FAILED = "unlock-failed"  # a dropped orderly queue the client still fails to unlock
    BLOCKED = "blocked"  # messages are cached but nothing was consumed for over a minute


@dataclass(frozen=True, slots=True)
class QueueProblem:
    """Something wrong with a push consumer's queue, as mqadmin consumerStatus points out."""

    topic: str
    broker_name: str
    queue_id: int
    kind: ProblemKind
    for_ms: int  # not-locked: since the last lock; blocked: since the last consumption; else 0
    unlock_tries: int  # unlock-failed: attempts so far; else 0


@dataclass(frozen=True, slots=True)
class TopicRates:
    """A client's rates on one subscribed topic over the last minute."""

    topic: str
    pull_rt: float  # ms per pull
    pull_tps: float  # messages pulled per second
    consume_rt: float  # ms per listener call
    consume_ok_tps: float
    consume_failed_tps: float
    consume_failed_msgs: int  # in the last hour


@dataclass(frozen=True, slots=True)
class ClientRunningInfo:
    """What one online client answered to GET_CONSUMER_RUNNING_INFO, or why it could not be asked."""

    client_id: str
    address: str
    language: str
    version: int  # RocketMQ's int version code of the connection
    broker: str  # the broker that relayed the question
    error: str | None  # set when the client could not be asked; the fields below are then empty
    client_version: str | None  # the version name the client reports (e.g. V5_3_3)
    consume_type: str | None  # PUSH, PULL or POP
    orderly: bool
    start_timestamp: int  # when the consumer started, epoch ms; 0 = not reported
    namesrv_addr: str | None
    properties: dict[str, str]  # everything the client reported about itself, settings included
    subscriptions: list[Subscription]
    queues: list[QueueRuntime]  # sorted by topic, broker name, queue id
    rates: list[TopicRates]  # sorted by topic
    problems: list[QueueProblem]  # push consumers only, in queue order
    jstack: str | None  # the client's thread dump, when asked for


@dataclass(frozen=True, slots=True)
class GroupClients:
    group: str
    clients: list[ClientRunningInfo]  # sorted by client id
    # False when push consumers running for over two minutes subscribe differently (clients that could
    # not be asked are left out); True otherwise, as mqadmin consumerStatus judges it
    same_subscriptions: bool

    def queue_owner_ips(self) -> dict[tuple[str, str, int], str]:
        """(topic, broker name, queue id) -> the IP part of the client id that owns the queue."""
        return {
            (q.topic, q.broker_name, q.queue_id): c.client_id.partition("@")[0]
            for c in self.clients
            for q in c.queues
        }


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
    lag_ms: int = 0  # now - store time of the first message not consumed; 0 when caught up


@dataclass(frozen=True, slots=True)
class GroupLag:
    group: str
    queues: list[QueueLag]  # sorted by topic, broker name, queue id
    diff_total: int
    inflight_total: int
    consume_tps: float
    lag_ms: int = 0  # the largest of the queues' lag_ms: how long the oldest unconsumed message waited


@dataclass(frozen=True, slots=True)
class GroupProgress:
    """One group's clients and lag, as ``consumerProgress`` lists every group."""

    connections: GroupConnections
    lag: GroupLag


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
    SNAPSHOT = "snapshot"  # back to the offsets saved before the last reset (``group offsets undo``)


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
class OffsetSnapshot:
    """A group's offsets as they were before a reset or skip moved them: what undo goes back to."""

    group: str
    taken_ms: int  # when, epoch ms
    reason: str  # what moved them, e.g. "reset to earliest"
    queues: list[QueueReset]  # ``current``: the offset saved; ``target``: the same (where undo moves it)

    def to_kv(self) -> str:
        """The NameServer KV value it is kept as."""
        import json

        rows = [[q.topic, q.broker_name, q.queue_id, q.current] for q in self.queues]
        return json.dumps(
            {"taken": self.taken_ms, "reason": self.reason, "queues": rows}, separators=(",", ":")
        )

    @classmethod
    def from_kv(cls, group: str, text: str) -> OffsetSnapshot:
        import json

        doc = json.loads(text)
        queues = [QueueReset(str(t), str(b), int(q), int(o), int(o)) for t, b, q, o in doc["queues"]]
        return cls(group, int(doc["taken"]), str(doc["reason"]), queues)


@dataclass(frozen=True, slots=True)
class OffsetClone:
    source: str
    destination: str
    topic: str | None
    addresses: list[str]


@dataclass(frozen=True, slots=True)
class GroupConfigAt:
    """A subscription group's configuration on one broker."""

    cluster: str | None
    broker_name: str
    config: SubscriptionGroupConfig
