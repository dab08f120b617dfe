"""What the admin service takes and returns: plain dataclasses, the same for every front end.

Front ends only lay these out (rpk-style tables, JSON, later mqadmin's text layouts), so every figure
a view shows is computed here or in the service, never in a renderer. JSON writers turn field names
into camelCase (docs/cli-json.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.protocol.message import MessageRecord

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
TOOLS_GROUP = "TOOLS_CONSUMER"  # mqadmin's MixAll.TOOLS_CONSUMER_GROUP
# Topics RocketMQ creates for itself (TopicValidator.SYSTEM_TOPIC_SET and the rmq_sys_ prefix); a
# broker's own name and its cluster's name are system topics too (brokerTopicEnable, clusterTopicEnable).
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "rmq_sys_wheel_timer",
    }
)
SYSTEM_TOPIC_PREFIXES = ("rmq_sys_", "RMQ_SYS_")


# Groups brokers create for themselves and for tools (MixAll's system consumer groups)
SYSTEM_GROUPS = frozenset(
    {
        TOOLS_GROUP,
        "FILTERSRV_CONSUMER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
    }
)
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(SYSTEM_GROUP_PREFIX)


class TopicKind(StrEnum):
    NORMAL = "normal"
    RETRY = "retry"
    DLQ = "dlq"
    SYSTEM = "system"


def topic_kind(topic: str, system_names: frozenset[str] = frozenset()) -> TopicKind:
    """Classify a topic by name; ``system_names`` adds broker and cluster names."""
    if topic.startswith(RETRY_PREFIX):
        return TopicKind.RETRY
    if topic.startswith(DLQ_PREFIX):
        return TopicKind.DLQ
    if topic in SYSTEM_TOPICS or topic in system_names or topic.startswith(SYSTEM_TOPIC_PREFIXES):
        return TopicKind.SYSTEM
    return TopicKind.NORMAL


def perm_text(perm: int) -> str:
    """RocketMQ's PermName.perm2String: ``RW-``, ``R--`` ... (read, write, inherit)."""
    return ("R" if perm & 4 else "-") + ("W" if perm & 2 else "-") + ("X" if perm & 1 else "-")


# == cluster and brokers ===========================================================================
@dataclass(frozen=True, slots=True)
class HAStatus:
    """Replication as one broker sees it (GET_BROKER_HA_STATUS)."""

    master: bool
    commitlog_max_offset: int
    replicated_offset: int | None  # slave: its CommitLog end; master: the least a connected slave holds
    lag_bytes: int | None  # how far that slave is behind its master (None: unknown)
    slaves: int  # master: slaves connected
    in_sync_slaves: int
    master_ha_address: str | None  # slave: where it replicates from
    master_alive: bool | None  # slave: connected to its master and hearing from it
    truncated_bytes: int  # slave: bytes cut to match its master (reconcile)
    last_truncate: str | None


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """One broker of a cluster with its runtime figures; ``error`` says why it did not answer."""

    cluster: str
    broker_name: str
    broker_id: int
    address: str
    role: str  # MASTER or SLAVE (by broker id)
    reachable: bool
    error: str | None
    version: str | None
    put_tps: float
    get_tps: float
    disk_ratio: float | None
    commitlog_min_offset: int | None
    commitlog_max_offset: int | None
    runtime: dict[str, str]  # every GET_BROKER_RUNTIME_INFO key, for layouts that show more
    ha: HAStatus | None = None  # None: the broker does not answer GET_BROKER_HA_STATUS


@dataclass(frozen=True, slots=True)
class ClusterList:
    brokers: list[BrokerInfo]  # sorted by cluster, broker name, broker id


@dataclass(frozen=True, slots=True)
class NamesrvState:
    address: str
    reachable: bool
    error: str | None


@dataclass(frozen=True, slots=True)
class ClusterSummary:
    name: str
    brokers: int
    masters: int
    unreachable: int
    put_tps: float
    get_tps: float
    max_disk_ratio: float | None


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    namesrvs: list[NamesrvState]
    clusters: list[ClusterSummary]
    brokers: list[BrokerInfo]


@dataclass(frozen=True, slots=True)
class BrokerRuntime:
    address: str
    values: dict[str, str]  # sorted by key


@dataclass(frozen=True, slots=True)
class ConfigValues:
    """A server's configuration (broker or NameServer)."""

    address: str
    values: dict[str, str]  # sorted by key


@dataclass(frozen=True, slots=True)
class ConfigChange:
    addresses: list[str]  # servers changed
    values: dict[str, str]


# == topics ========================================================================================
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
class TopicStatus:
    topic: str
    queues: list[QueueStatus]  # sorted by broker name, queue id
    total_messages: int
    put_tps: float


@dataclass(frozen=True, slots=True)
class TopicDescription:
    topic: str
    kind: TopicKind
    route: TopicRoute
    status: TopicStatus
    groups: list[str]  # consuming groups, sorted


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


@dataclass(frozen=True, slots=True)
class Deletion:
    """What a delete removed: a topic or group from brokers (and a topic from NameServers)."""

    name: str
    brokers: list[str]
    namesrvs: list[str]


# == groups ========================================================================================
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


# == messages ======================================================================================
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


# == NameServer ====================================================================================
@dataclass(frozen=True, slots=True)
class KvEntries:
    namespace: str
    entries: dict[str, str]  # sorted by key


@dataclass(frozen=True, slots=True)
class KvChange:
    namespace: str
    key: str
    value: str | None  # None for a delete
    namesrvs: list[str]


# == readiness =====================================================================================
@dataclass(frozen=True, slots=True)
class Readiness:
    ready: bool
    method: str  # "http" or "remoting"
    target: str  # the URL or NameServer polled
    detail: str  # why it is (not) ready
    waited_ms: int


@dataclass(frozen=True, slots=True)
class ServerConfigs:
    """The configuration of each NameServer."""

    servers: list[ConfigValues]
