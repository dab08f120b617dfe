"""Bodies about consumer and producer groups: heartbeats, connections and subscriptions, consume and
topic offset statistics, offset resets, queue locks, subscription group configurations, and the
ConsumeQueue query answer (units seen through a group's subscription).

They use the codec of :mod:`broker.protocol.bodies`, which also re-exports them; they live apart so that
a command that sends none of them (``rmq topic list``) does not create their dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.protocol.bodies import (
    ConsumeFromWhere,
    ConsumeType,
    JsonBody,
    MessageModel,
    MessageQueue,
    _now_ms,
)
from broker.protocol.codes import LanguageCode

__all__ = [
    "Connection",
    "ConsumeQueueData",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumerConnection",
    "ConsumerConnectionTable",
    "ConsumerData",
    "GetConsumerListByGroupResponseBody",
    "HeartbeatData",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "OffsetWrapper",
    "ProducerConnection",
    "ProducerData",
    "ProducerInfo",
    "ProducerTableInfo",
    "QueryConsumeQueueResponseBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupList",
    "TopicOffset",
    "TopicStatsTable",
    "TopicStatsTables",
    "UnlockBatchRequestBody",
]


@dataclass(slots=True)
class SubscriptionData(JsonBody):
    topic: str | None = None
    subString: str | None = None
    tagsSet: list[str] = field(default_factory=list)
    codeSet: list[int] = field(default_factory=list)
    subVersion: int = field(default_factory=_now_ms)
    expressionType: str = "TAG"
    classFilterMode: bool = False


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody(JsonBody):
    consumerIdList: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# heartbeat and connections


@dataclass(slots=True)
class ProducerData(JsonBody):
    groupName: str | None = None


@dataclass(slots=True)
class ConsumerData(JsonBody):
    groupName: str | None = None
    consumeType: ConsumeType | None = None
    messageModel: MessageModel | None = None
    consumeFromWhere: ConsumeFromWhere | None = None
    subscriptionDataSet: list[SubscriptionData] = field(default_factory=list)
    unitMode: bool = False


@dataclass(slots=True)
class HeartbeatData(JsonBody):
    clientID: str | None = None
    producerDataSet: list[ProducerData] = field(default_factory=list)
    consumerDataSet: list[ConsumerData] = field(default_factory=list)
    heartbeatFingerprint: int = 0
    withoutSub: bool = False


@dataclass(slots=True)
class Connection(JsonBody):
    clientId: str | None = None
    clientAddr: str | None = None
    language: LanguageCode = LanguageCode.JAVA
    version: int = 0


@dataclass(slots=True)
class ConsumerConnection(JsonBody):
    connectionSet: list[Connection] = field(default_factory=list)
    subscriptionTable: dict[str, SubscriptionData] = field(default_factory=dict)
    consumeType: ConsumeType | None = None
    messageModel: MessageModel | None = None
    consumeFromWhere: ConsumeFromWhere | None = None


@dataclass(slots=True)
class ProducerConnection(JsonBody):
    connectionSet: list[Connection] = field(default_factory=list)


@dataclass(slots=True)
class ProducerInfo(JsonBody):
    """One producer connection in GET_ALL_PRODUCER_INFO (328); ``remoteIP`` is Netty's
    ``remoteAddress().toString()``: ``/host:port``."""

    clientId: str | None = None
    remoteIP: str | None = None
    language: LanguageCode = LanguageCode.JAVA
    version: int = 0
    lastUpdateTimestamp: int = 0


@dataclass(slots=True)
class ProducerTableInfo(JsonBody):
    """GET_ALL_PRODUCER_INFO (328) answer: producer group -> its connections."""

    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)


@dataclass(slots=True)
class ConsumerConnectionTable(JsonBody):
    """GET_ALL_CONSUMER_CONNECTIONS (rmqkit's own 10704) answer: every online group -> what
    GET_CONSUMER_CONNECTION_LIST (203) answers for it."""

    connectionTable: dict[str, ConsumerConnection] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# admin statistics and offsets


@dataclass(slots=True)
class OffsetWrapper(JsonBody):
    brokerOffset: int = 0
    consumerOffset: int = 0
    pullOffset: int = 0
    lastTimestamp: int = 0


@dataclass(slots=True)
class ConsumeStats(JsonBody):
    offsetTable: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consumeTps: float = 0.0


@dataclass(slots=True)
class ConsumeStatsList(JsonBody):
    """GET_BROKER_CONSUME_STATS's answer: per group (one single-key object each, as Java lists them) the
    consume stats of every topic it has offsets on."""

    consumeStatsList: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    brokerAddr: str | None = None
    totalDiff: int = 0
    totalInflightDiff: int = 0


@dataclass(slots=True)
class TopicOffset(JsonBody):
    minOffset: int = 0
    maxOffset: int = 0
    lastUpdateTimestamp: int = 0


@dataclass(slots=True)
class TopicStatsTable(JsonBody):
    offsetTable: dict[MessageQueue, TopicOffset] = field(default_factory=dict)
    topicPutTps: float = 0.0


@dataclass(slots=True)
class TopicStatsTables(JsonBody):
    """GET_TOPICS_STATS_INFO (rmqkit's own 10705) answer: each topic asked that the broker holds ->
    what GET_TOPIC_STATS_INFO (202) answers for it."""

    topicStatsTable: dict[str, TopicStatsTable] = field(default_factory=dict)


@dataclass(slots=True)
class ResetOffsetBody(JsonBody):
    offsetTable: dict[MessageQueue, int] = field(default_factory=dict)


@dataclass(slots=True)
class LockBatchRequestBody(JsonBody):
    """LOCK_BATCH_MQ; UNLOCK_BATCH_MQ has the same shape."""

    consumerGroup: str | None = None
    clientId: str | None = None
    onlyThisBroker: bool = False
    mqSet: list[MessageQueue] = field(default_factory=list)


UnlockBatchRequestBody = LockBatchRequestBody


@dataclass(slots=True)
class LockBatchResponseBody(JsonBody):
    lockOKMQSet: list[MessageQueue] = field(default_factory=list)


@dataclass(slots=True)
class SubscriptionGroupConfig(JsonBody):
    groupName: str | None = None
    consumeEnable: bool = True
    consumeFromMinEnable: bool = True
    consumeBroadcastEnable: bool = True
    consumeMessageOrderly: bool = False
    retryQueueNums: int = 1
    retryMaxTimes: int = 16
    groupRetryPolicy: dict[str, Any] = field(default_factory=lambda: {"type": "CUSTOMIZED"})
    brokerId: int = 0
    whichBrokerWhenConsumeSlowly: int = 1
    notifyConsumerIdsChangedEnable: bool = True
    groupSysFlag: int = 0
    consumeTimeoutMinute: int = 15
    subscriptionDataSet: list[dict[str, Any]] | None = None
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class SubscriptionGroupList(JsonBody):
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225)."""

    groupConfigList: list[SubscriptionGroupConfig] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# QUERY_CONSUME_QUEUE (321)


@dataclass(slots=True)
class ConsumeQueueData(JsonBody):
    """One ConsumeQueue unit; the extension fields stay empty without a ConsumeQueue extension."""

    physicOffset: int = 0
    physicSize: int = 0
    tagsCode: int = 0
    extendDataJson: str | None = None
    bitMap: str | None = None
    eval: bool = False
    msg: str | None = None


@dataclass(slots=True)
class QueryConsumeQueueResponseBody(JsonBody):
    subscriptionData: SubscriptionData | None = None
    filterData: str | None = None
    queueData: list[ConsumeQueueData] | None = None
    maxQueueIndex: int = 0
    minQueueIndex: int = 0
