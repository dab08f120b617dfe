"""Typed custom headers: the extFields of each request and response.

Every header is a keyword-only dataclass whose attribute names are the Java field names, so one
generic codec in :class:`CommandHeader` maps extFields both ways from the type annotations:
``str``, ``int`` (Java int and long), ``bool`` (Java ``Boolean.parseBoolean``) and
:class:`BoundaryType`. Fields declared without a default are the ones Java marks ``@CFNotNull``;
like Java, decoding tolerates their absence (they are left ``None``) and handlers that need them call
:meth:`CommandHeader.check_required` (or decode with :meth:`CommandHeader.parse`). A number that does
not parse is always an error naming the field, so a server can answer with a precise remark.
Unknown extFields are not copied into the object; they stay on the command.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Self

from broker.protocol.codes import RequestCode
from broker.protocol.header_codec import (
    FieldSpec,
    decode_header,
    encode_fields,
    parse_bool,
    parse_int,
    render_bool,
)
from broker.protocol.header_codec import HeaderFieldError as HeaderFieldError  # re-exported: its public home


class BoundaryType(Enum):
    """Which end of a run of equal store timestamps SEARCH_OFFSET_BY_TIMESTAMP answers."""

    LOWER = "LOWER"
    UPPER = "UPPER"

    @classmethod
    def parse(cls, text: str) -> BoundaryType:
        """Java compares with "upper" ignoring case and treats everything else as LOWER."""
        return cls.UPPER if text.lower() == "upper" else cls.LOWER


def _render_enum(value: Enum) -> str:
    return value.name


_PARSERS: dict[Any, Callable[[str], Any]] = {
    str: str,
    int: parse_int,
    bool: parse_bool,
    BoundaryType: BoundaryType.parse,
}
# Java's String.valueOf of each field type (``str`` of a str is the same object: no copy)
_RENDERERS: dict[Any, Callable[[Any], str]] = {
    str: str,
    int: str,
    bool: render_bool,
    BoundaryType: _render_enum,
}


_SPECS: dict[type, tuple[FieldSpec, ...]] = {}


def _field_specs(cls: type) -> tuple[FieldSpec, ...]:
    specs = _SPECS.get(cls)
    if specs is None:
        hints = typing.get_type_hints(cls)
        built = []
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            if isinstance(hint, types.UnionType):  # ``X | None``
                hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
            if f.default_factory is not dataclasses.MISSING:  # decode_header sets plain defaults only
                raise TypeError(f"{cls.__name__}.{f.name}: header fields take a plain default")
            required = f.default is dataclasses.MISSING
            default = None if required else f.default
            built.append(FieldSpec(f.name, _PARSERS[hint], required, _RENDERERS[hint], f.name, default))
        specs = _SPECS[cls] = tuple(built)
    return specs


class CommandHeader:
    """Base of all typed headers: the generic extFields codec."""

    @classmethod
    def from_ext_fields(cls, ext: Mapping[str, str] | None, *, strict: bool = False) -> Self:
        """Lenient decode: absent fields keep their default (required ones become ``None``);
        ``strict`` refuses an absent required field instead."""
        header: Self = decode_header(cls, cls.__name__, _field_specs(cls), ext, strict)
        return header

    @classmethod
    def parse(cls, ext: Mapping[str, str] | None) -> Self:
        """Decode and insist on the required fields: what a server handler normally wants."""
        return cls.from_ext_fields(ext, strict=True)

    def check_required(self) -> Self:
        for spec in _field_specs(type(self)):
            if spec.required and getattr(self, spec.name) is None:
                raise HeaderFieldError(type(self).__name__, spec.name, "is required")
        return self

    def to_ext_fields(self) -> dict[str, str]:
        """Java's ``String.valueOf`` of every non-null field, under the Java field name."""
        return encode_fields(self, _field_specs(type(self)))


@dataclass(kw_only=True, slots=True)
class RpcRequestHeader(CommandHeader):
    """Fields every RPC-style request inherits (namespace, logical broker name, one-way hint)."""

    ns: str | None = None
    nsd: bool | None = None
    bname: str | None = None
    oway: bool | None = None


@dataclass(kw_only=True, slots=True)
class TopicRequestHeader(RpcRequestHeader):
    lo: bool | None = None  # logical (static) topic


# ---------------------------------------------------------------------------------------------
# send


@dataclass(kw_only=True, slots=True)
class SendMessageRequestHeader(TopicRequestHeader):
    """SEND_MESSAGE (10); also the decoded form of V2. ``bname`` carries V2's ``n`` (brokerName)."""

    producerGroup: str
    topic: str
    defaultTopic: str
    defaultTopicQueueNums: int
    queueId: int
    sysFlag: int
    bornTimestamp: int
    flag: int
    properties: str | None = None
    reconsumeTimes: int | None = None
    unitMode: bool | None = None
    batch: bool | None = None
    maxReconsumeTimes: int | None = None


@dataclass(kw_only=True, slots=True)
class SendMessageRequestHeaderV2(TopicRequestHeader):
    """SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320): one-letter names to keep headers small."""

    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: int  # defaultTopicQueueNums
    e: int  # queueId
    f: int  # sysFlag
    g: int  # bornTimestamp
    h: int  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool | None = None  # unitMode
    l: int | None = None  # noqa: E741  maxReconsumeTimes
    m: bool | None = None  # batch
    n: str | None = None  # brokerName

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(**{v1: getattr(self, v2) for v2, v1 in _V2_TO_V1.items()})

    @classmethod
    def parse_v1(cls, ext: Mapping[str, str] | None) -> SendMessageRequestHeader:
        """``parse(ext).to_v1()`` in one step (a send's header is decoded this way on every send);
        an error names the one-letter field that was sent."""
        header: SendMessageRequestHeader = decode_header(
            SendMessageRequestHeader, cls.__name__, _V2_AS_V1_SPECS, ext, True
        )
        return header

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        return cls(**{v2: getattr(v1, name) for v2, name in _V2_TO_V1.items()})


# V2's one-letter fields and the v1 fields they stand for (V2's own ``bname`` gives way to ``n``)
_V2_TO_V1 = {
    "a": "producerGroup",
    "b": "topic",
    "c": "defaultTopic",
    "d": "defaultTopicQueueNums",
    "e": "queueId",
    "f": "sysFlag",
    "g": "bornTimestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsumeTimes",
    "k": "unitMode",
    "l": "maxReconsumeTimes",
    "m": "batch",
    "n": "bname",
    "ns": "ns",
    "nsd": "nsd",
    "oway": "oway",
    "lo": "lo",
}


def _v2_as_v1_specs() -> tuple[FieldSpec, ...]:
    """V2's specs filling the v1 header's attributes (with the v1 defaults)."""
    v1_specs = {spec.name: spec for spec in _field_specs(SendMessageRequestHeader)}
    return tuple(
        spec._replace(attr=_V2_TO_V1[spec.name], default=v1_specs[_V2_TO_V1[spec.name]].default)
        for spec in _field_specs(SendMessageRequestHeaderV2)
        if spec.name in _V2_TO_V1
    )


_V2_AS_V1_SPECS = _v2_as_v1_specs()

_V2_SEND_CODES = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)


def decode_send_message_header(code: int, ext: Mapping[str, str] | None) -> SendMessageRequestHeader:
    """The v1 view of any send request, whichever header form its code implies (lenient)."""
    if code in _V2_SEND_CODES:
        return SendMessageRequestHeaderV2.from_ext_fields(ext).to_v1()
    return SendMessageRequestHeader.from_ext_fields(ext)


@dataclass(kw_only=True, slots=True)
class SendMessageResponseHeader(CommandHeader):
    msgId: str
    queueId: int
    queueOffset: int
    transactionId: str | None = None
    batchUniqId: str | None = None
    recallHandle: str | None = None


@dataclass(kw_only=True, slots=True)
class RecallMessageRequestHeader(TopicRequestHeader):
    """RECALL_MESSAGE (370): the handle a send answered; the topic must be the handle's."""

    topic: str
    recallHandle: str
    producerGroup: str | None = None


@dataclass(kw_only=True, slots=True)
class RecallMessageResponseHeader(CommandHeader):
    msgId: str


# ---------------------------------------------------------------------------------------------
# pull, query, offsets


@dataclass(kw_only=True, slots=True)
class PullMessageRequestHeader(TopicRequestHeader):
    consumerGroup: str
    topic: str
    queueId: int
    queueOffset: int
    maxMsgNums: int
    sysFlag: int
    commitOffset: int
    suspendTimeoutMillis: int
    subVersion: int
    subscription: str | None = None
    expressionType: str | None = None
    maxMsgBytes: int | None = None
    requestSource: int | None = None
    proxyFrowardClientId: str | None = None  # sic, the Java spelling


@dataclass(kw_only=True, slots=True)
class PullMessageResponseHeader(CommandHeader):
    suggestWhichBrokerId: int
    nextBeginOffset: int
    minOffset: int
    maxOffset: int
    offsetDelta: int | None = None
    topicSysFlag: int | None = None
    groupSysFlag: int | None = None
    forbiddenType: int | None = None


@dataclass(kw_only=True, slots=True)
class QueryMessageRequestHeader(TopicRequestHeader):
    topic: str
    key: str
    maxNum: int
    beginTimestamp: int
    endTimestamp: int


@dataclass(kw_only=True, slots=True)
class QueryMessageResponseHeader(CommandHeader):
    indexLastUpdateTimestamp: int
    indexLastUpdatePhyoffset: int


@dataclass(kw_only=True, slots=True)
class ViewMessageRequestHeader(CommandHeader):
    offset: int
    topic: str | None = None


@dataclass(kw_only=True, slots=True)
class QueryConsumerOffsetRequestHeader(TopicRequestHeader):
    consumerGroup: str
    topic: str
    queueId: int
    setZeroIfNotFound: bool | None = None


@dataclass(kw_only=True, slots=True)
class UpdateConsumerOffsetRequestHeader(TopicRequestHeader):
    consumerGroup: str
    topic: str
    queueId: int
    commitOffset: int


@dataclass(kw_only=True, slots=True)
class OffsetResponseHeader(CommandHeader):
    """``offset`` answer of QUERY_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int


QueryConsumerOffsetResponseHeader = OffsetResponseHeader
GetMaxOffsetResponseHeader = OffsetResponseHeader
GetMinOffsetResponseHeader = OffsetResponseHeader
SearchOffsetResponseHeader = OffsetResponseHeader


@dataclass(kw_only=True, slots=True)
class GetMaxOffsetRequestHeader(TopicRequestHeader):
    topic: str
    queueId: int
    committed: bool = True


@dataclass(kw_only=True, slots=True)
class QueueRequestHeader(TopicRequestHeader):
    """GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME: just a queue."""

    topic: str
    queueId: int


GetMinOffsetRequestHeader = QueueRequestHeader
GetEarliestMsgStoretimeRequestHeader = QueueRequestHeader


@dataclass(kw_only=True, slots=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    timestamp: int


@dataclass(kw_only=True, slots=True)
class SearchOffsetRequestHeader(TopicRequestHeader):
    topic: str
    queueId: int
    timestamp: int
    boundaryType: BoundaryType | None = None  # absent means LOWER


# ---------------------------------------------------------------------------------------------
# clients, consumers, transactions


@dataclass(kw_only=True, slots=True)
class UnregisterClientRequestHeader(RpcRequestHeader):
    clientID: str
    producerGroup: str | None = None
    consumerGroup: str | None = None


@dataclass(kw_only=True, slots=True)
class ConsumerGroupRequestHeader(RpcRequestHeader):
    """Requests naming only a consumer group."""

    consumerGroup: str


GetConsumerListByGroupRequestHeader = ConsumerGroupRequestHeader
NotifyConsumerIdsChangedRequestHeader = ConsumerGroupRequestHeader
GetConsumerConnectionListRequestHeader = ConsumerGroupRequestHeader


@dataclass(kw_only=True, slots=True)
class GetProducerConnectionListRequestHeader(RpcRequestHeader):
    producerGroup: str


@dataclass(kw_only=True, slots=True)
class ConsumerSendMsgBackRequestHeader(RpcRequestHeader):
    offset: int
    group: str
    delayLevel: int
    originMsgId: str | None = None
    originTopic: str | None = None
    unitMode: bool = False
    maxReconsumeTimes: int | None = None


@dataclass(kw_only=True, slots=True)
class ConsumeMessageDirectlyResultRequestHeader(TopicRequestHeader):
    consumerGroup: str
    clientId: str | None = None
    msgId: str | None = None  # the offset MessageId of the stored message
    brokerName: str | None = None  # set by the broker that forwards it
    topic: str | None = None
    topicSysFlag: int | None = None
    groupSysFlag: int | None = None


@dataclass(kw_only=True, slots=True)
class ResumeCheckHalfMessageRequestHeader(RpcRequestHeader):
    """RESUME_CHECK_HALF_MESSAGE (323): put a half message that hit the check limit back to be checked."""

    msgId: str  # its offset MessageId in TRANS_CHECK_MAX_TIME_TOPIC


@dataclass(kw_only=True, slots=True)
class EndTransactionRequestHeader(RpcRequestHeader):
    producerGroup: str
    tranStateTableOffset: int
    commitLogOffset: int
    commitOrRollback: int  # sysflag transaction type: 0 unknown, 8 commit, 12 rollback
    msgId: str
    topic: str | None = None
    fromTransactionCheck: bool | None = False
    transactionId: str | None = None


@dataclass(kw_only=True, slots=True)
class CheckTransactionStateRequestHeader(RpcRequestHeader):
    tranStateTableOffset: int
    commitLogOffset: int
    topic: str | None = None
    msgId: str | None = None
    transactionId: str | None = None
    offsetMsgId: str | None = None


# ---------------------------------------------------------------------------------------------
# broker admin


@dataclass(kw_only=True, slots=True)
class CreateTopicRequestHeader(TopicRequestHeader):
    topic: str
    defaultTopic: str
    readQueueNums: int
    writeQueueNums: int
    perm: int
    topicFilterType: str
    topicSysFlag: int | None = None
    order: bool | None = False
    attributes: str | None = None  # "+k=v,+k2=v2,-k3"
    force: bool | None = False


@dataclass(kw_only=True, slots=True)
class TopicOnlyRequestHeader(TopicRequestHeader):
    """Requests naming only a topic."""

    topic: str


DeleteTopicRequestHeader = TopicOnlyRequestHeader
GetTopicStatsInfoRequestHeader = TopicOnlyRequestHeader
QueryTopicConsumeByWhoRequestHeader = TopicOnlyRequestHeader
RegisterTopicRequestHeader = TopicOnlyRequestHeader
GetTopicConfigRequestHeader = TopicOnlyRequestHeader


@dataclass(kw_only=True, slots=True)
class GetSubscriptionGroupConfigRequestHeader(RpcRequestHeader):
    group: str


@dataclass(kw_only=True, slots=True)
class QueryConsumeQueueRequestHeader(TopicRequestHeader):
    """QUERY_CONSUME_QUEUE (321): ``count`` units of one queue from ``index``; with ``consumerGroup``
    the answer also carries that group's subscription of the topic."""

    topic: str
    queueId: int
    index: int
    count: int
    consumerGroup: str | None = None


@dataclass(kw_only=True, slots=True)
class DeleteSubscriptionGroupRequestHeader(RpcRequestHeader):
    groupName: str
    cleanOffset: bool = False
    removeOffset: bool = False  # the pre-5.0 name of cleanOffset, still sent by old tools

    @property
    def clean_offsets(self) -> bool:
        return self.cleanOffset or self.removeOffset


@dataclass(kw_only=True, slots=True)
class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS (317): every group's consume stats on one broker, in one answer."""

    isOrder: bool = False  # only the ordered topics


@dataclass(kw_only=True, slots=True)
class GetConsumeStatsRequestHeader(TopicRequestHeader):
    consumerGroup: str
    topic: str | None = None
    topicList: str | None = None  # ';'-separated

    @property
    def topics(self) -> list[str]:
        """The topics asked about, ``topic`` first; empty means all of the group's topics."""
        names = [self.topic] if self.topic else []
        names += [t for t in (self.topicList or "").split(";") if t and t not in names]
        return names


@dataclass(kw_only=True, slots=True)
class ResetOffsetRequestHeader(TopicRequestHeader):
    group: str
    topic: str
    queueId: int = -1  # all queues
    offset: int | None = None  # explicit target; None or -1 means "search by timestamp"
    timestamp: int = 0
    isForce: bool = False


@dataclass(kw_only=True, slots=True)
class CloneGroupOffsetRequestHeader(RpcRequestHeader):
    srcGroup: str
    destGroup: str
    topic: str | None = None
    offline: bool = False


# ---------------------------------------------------------------------------------------------
# NameServer


@dataclass(kw_only=True, slots=True)
class BrokerIdentityHeader(CommandHeader):
    """UNREGISTER_BROKER and QUERY_DATA_VERSION: which broker is speaking."""

    brokerName: str
    brokerAddr: str
    clusterName: str
    brokerId: int


UnRegisterBrokerRequestHeader = BrokerIdentityHeader
QueryDataVersionRequestHeader = BrokerIdentityHeader


@dataclass(kw_only=True, slots=True)
class RegisterBrokerRequestHeader(CommandHeader):
    brokerName: str
    brokerAddr: str
    clusterName: str
    haServerAddr: str
    brokerId: int
    heartbeatTimeoutMillis: int | None = None
    enableActingMaster: bool | None = None
    compressed: bool = False
    bodyCrc32: int = 0  # CRC32(body) & 0x7FFFFFFF; 0 means unchecked


@dataclass(kw_only=True, slots=True)
class RegisterBrokerResponseHeader(CommandHeader):
    haServerAddr: str | None = None
    masterAddr: str | None = None


@dataclass(kw_only=True, slots=True)
class GetRouteInfoRequestHeader(TopicRequestHeader):
    topic: str
    acceptStandardJsonOnly: bool | None = None


@dataclass(kw_only=True, slots=True)
class DeleteTopicFromNamesrvRequestHeader(TopicRequestHeader):
    topic: str
    clusterName: str | None = None


@dataclass(kw_only=True, slots=True)
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str
    value: str


@dataclass(kw_only=True, slots=True)
class KVConfigKeyRequestHeader(CommandHeader):
    """GET_KV_CONFIG and DELETE_KV_CONFIG."""

    namespace: str
    key: str


GetKVConfigRequestHeader = KVConfigKeyRequestHeader
DeleteKVConfigRequestHeader = KVConfigKeyRequestHeader


@dataclass(kw_only=True, slots=True)
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = None


@dataclass(kw_only=True, slots=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str


@dataclass(kw_only=True, slots=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str


@dataclass(kw_only=True, slots=True)
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool


@dataclass(kw_only=True, slots=True)
class BrokerHeartbeatRequestHeader(CommandHeader):
    clusterName: str
    brokerAddr: str
    brokerName: str
    brokerId: int | None = None
    epoch: int | None = None
    maxOffset: int | None = None
    confirmOffset: int | None = None
    heartbeatTimeoutMills: int | None = None
    electionPriority: int | None = None


@dataclass(kw_only=True, slots=True)
class BrokerNameRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER."""

    brokerName: str


WipeWritePermOfBrokerRequestHeader = BrokerNameRequestHeader
AddWritePermOfBrokerRequestHeader = BrokerNameRequestHeader


@dataclass(kw_only=True, slots=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipeTopicCount: int


@dataclass(kw_only=True, slots=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    addTopicCount: int


@dataclass(kw_only=True, slots=True)
class SetCommitLogReadModeRequestHeader(CommandHeader):
    """SET_COMMITLOG_READ_MODE: 0 reads ahead (MADV_NORMAL), 1 does not (MADV_RANDOM)."""

    READ_AHEAD_MODE: int


# The request header of each code the broker and NameServer serve (send codes: see
# decode_send_message_header; codes without own fields are absent).
REQUEST_HEADERS: dict[int, type[CommandHeader]] = {
    RequestCode.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResultRequestHeader,
    RequestCode.RESUME_CHECK_HALF_MESSAGE: ResumeCheckHalfMessageRequestHeader,
    RequestCode.SEND_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageRequestHeaderV2,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageRequestHeaderV2,
    RequestCode.PULL_MESSAGE: PullMessageRequestHeader,
    RequestCode.LITE_PULL_MESSAGE: PullMessageRequestHeader,
    RequestCode.QUERY_MESSAGE: QueryMessageRequestHeader,
    RequestCode.VIEW_MESSAGE_BY_ID: ViewMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    RequestCode.GET_MAX_OFFSET: GetMaxOffsetRequestHeader,
    RequestCode.GET_MIN_OFFSET: GetMinOffsetRequestHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeRequestHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetRequestHeader,
    RequestCode.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
    RequestCode.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBackRequestHeader,
    RequestCode.END_TRANSACTION: EndTransactionRequestHeader,
    RequestCode.CHECK_TRANSACTION_STATE: CheckTransactionStateRequestHeader,
    RequestCode.UPDATE_AND_CREATE_TOPIC: CreateTopicRequestHeader,
    RequestCode.DELETE_TOPIC_IN_BROKER: DeleteTopicRequestHeader,
    RequestCode.DELETE_SUBSCRIPTIONGROUP: DeleteSubscriptionGroupRequestHeader,
    RequestCode.GET_CONSUME_STATS: GetConsumeStatsRequestHeader,
    RequestCode.GET_BROKER_CONSUME_STATS: GetConsumeStatsInBrokerHeader,
    RequestCode.GET_TOPIC_STATS_INFO: GetTopicStatsInfoRequestHeader,
    RequestCode.GET_CONSUMER_CONNECTION_LIST: GetConsumerConnectionListRequestHeader,
    RequestCode.GET_PRODUCER_CONNECTION_LIST: GetProducerConnectionListRequestHeader,
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: QueryTopicConsumeByWhoRequestHeader,
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetRequestHeader,
    RequestCode.RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetRequestHeader,
    RequestCode.CLONE_GROUP_OFFSET: CloneGroupOffsetRequestHeader,
    RequestCode.REGISTER_BROKER: RegisterBrokerRequestHeader,
    RequestCode.UNREGISTER_BROKER: UnRegisterBrokerRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: DeleteTopicFromNamesrvRequestHeader,
    RequestCode.PUT_KV_CONFIG: PutKVConfigRequestHeader,
    RequestCode.GET_KV_CONFIG: GetKVConfigRequestHeader,
    RequestCode.DELETE_KV_CONFIG: DeleteKVConfigRequestHeader,
    RequestCode.GET_KVLIST_BY_NAMESPACE: GetKVListByNamespaceRequestHeader,
    RequestCode.GET_TOPICS_BY_CLUSTER: GetTopicsByClusterRequestHeader,
    RequestCode.QUERY_DATA_VERSION: QueryDataVersionRequestHeader,
    RequestCode.BROKER_HEARTBEAT: BrokerHeartbeatRequestHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerRequestHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerRequestHeader,
    RequestCode.REGISTER_TOPIC_IN_NAMESRV: RegisterTopicRequestHeader,
    RequestCode.GET_TOPIC_CONFIG: GetTopicConfigRequestHeader,
    RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: GetSubscriptionGroupConfigRequestHeader,
    RequestCode.QUERY_CONSUME_QUEUE: QueryConsumeQueueRequestHeader,
    RequestCode.SET_COMMITLOG_READ_MODE: SetCommitLogReadModeRequestHeader,
}
