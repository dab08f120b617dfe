"""GET_CONSUMER_RUNNING_INFO (307): the request header and the ConsumerRunningInfo body a consumer
client answers with (its settings, subscriptions, one ProcessQueueInfo per owned queue and its pull and
consume rates per topic).

An admin sends the request to a broker, which forwards it over the client's own connection and relays
the answer. The body goes through the generic codec of :mod:`broker.protocol.bodies`: ``mqTable`` and
``mqPopTable`` are keyed by MessageQueue objects, written and read fastjson style as JSON object keys;
``properties`` is a java.util.Properties, whose values Java clients send as strings or numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.protocol.bodies import JsonBody, MessageQueue
from broker.protocol.group_bodies import SubscriptionData
from broker.protocol.headers import RpcRequestHeader

__all__ = [
    "CLIENT_VERSION_NAME",
    "PROP_CLIENT_VERSION",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_CONSUME_ORDERLY",
    "PROP_CONSUME_TYPE",
    "PROP_NAMESERVER_ADDR",
    "PROP_THREADPOOL_CORE_SIZE",
    "ConsumeStatus",
    "ConsumerRunningInfo",
    "GetConsumerRunningInfoRequestHeader",
    "PopProcessQueueInfo",
    "ProcessQueueInfo",
]

# keys of ConsumerRunningInfo.properties that the tools read (the rest are the consumer's settings)
PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"  # a ConsumeType name: CONSUME_PASSIVELY is a push consumer
PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"  # a version name such as V5_3_3
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"  # epoch ms

CLIENT_VERSION_NAME = "V5_3_3"  # what our clients report in PROP_CLIENT_VERSION: codes.CURRENT_VERSION's name


@dataclass(kw_only=True, slots=True)
class GetConsumerRunningInfoRequestHeader(RpcRequestHeader):
    consumerGroup: str
    clientId: str
    jstackEnable: bool = False  # also dump the client's threads (Java: every thread's stack)


@dataclass(slots=True)
class ProcessQueueInfo(JsonBody):
    """One owned queue as the client sees it; timestamps are epoch ms, 0 = never."""

    commitOffset: int = 0
    cachedMsgMinOffset: int = 0
    cachedMsgMaxOffset: int = 0
    cachedMsgCount: int = 0
    cachedMsgSizeInMiB: int = 0
    transactionMsgMinOffset: int = 0  # orderly: messages handed to the listener, not yet committed
    transactionMsgMaxOffset: int = 0
    transactionMsgCount: int = 0
    locked: bool = False
    tryUnlockTimes: int = 0
    lastLockTimestamp: int = 0
    droped: bool = False  # sic: the Java field name
    lastPullTimestamp: int = 0
    lastConsumeTimestamp: int = 0


@dataclass(slots=True)
class PopProcessQueueInfo(JsonBody):
    waitAckCount: int = 0
    droped: bool = False
    lastPopTimestamp: int = 0


@dataclass(slots=True)
class ConsumeStatus(JsonBody):
    """A topic's rates over the last minute: RT in ms, TPS in messages per second."""

    pullRT: float = 0.0
    pullTPS: float = 0.0
    consumeRT: float = 0.0
    consumeOKTPS: float = 0.0
    consumeFailedTPS: float = 0.0
    consumeFailedMsgs: int = 0  # in the last hour


@dataclass(slots=True)
class ConsumerRunningInfo(JsonBody):
    properties: dict[str, str] = field(default_factory=dict)
    subscriptionSet: list[SubscriptionData] = field(default_factory=list)
    mqTable: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    mqPopTable: dict[MessageQueue, PopProcessQueueInfo] = field(default_factory=dict)
    statusTable: dict[str, ConsumeStatus] = field(default_factory=dict)
    userConsumerInfo: dict[str, str] = field(default_factory=dict)
    jstack: str | None = None
