"""PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361)

A pull that finds nothing new and may be suspended is held by :class:`PullHoldService` and then
executed once more without the right to suspend, exactly like RocketMQ's
PullRequestHoldService re-running the request when it wakes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionData
from broker.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.client_registry import ClientRegistry
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.ha.read_policy import ReadPolicyParts, slave_refuses_reads, suggest_broker_id
from broker.server.header_limits import range_problem
from broker.server.message_filter import FilterRejected, RecordFilter, is_tag_type, record_filter_of
from broker.server.messaging.core import SUB_ALL, MessagingCore, PullQuery, tag_filter_of
from broker.server.stats import BrokerStats
from broker.server.store_access import StoreAccess
from broker.server.topic_config import PERM_READ, TopicConfigManager
from broker.store.message_store import GetResult, GetStatus

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4

_STATUS_CODES = {
    GetStatus.FOUND: ResponseCode.SUCCESS,
    GetStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


class PullRejected(Exception):
    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


@dataclass(slots=True, frozen=True)
class _Plan:
    """What the checks resolved: read from here, filter like this."""

    header: PullMessageRequestHeader
    tag_filter: Callable[[int], bool] | None
    record_filter: RecordFilter | None = None


class PullParts(ReadPolicyParts, StoreAccess, Protocol):
    """The parts of the broker a pull uses."""

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def clients(self) -> ClientRegistry: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def messaging(self) -> MessagingCore: ...

    @property
    def stats(self) -> BrokerStats: ...


class PullProcessor:
    def __init__(self, broker: PullParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.PULL_MESSAGE: self.pull, RequestCode.LITE_PULL_MESSAGE: self.pull}

    async def pull(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = PullMessageRequestHeader.parse(request.ext_fields)
        problem = range_problem(header, ("queueId", "maxMsgNums", "sysFlag"), ("queueOffset", "commitOffset"))
        if problem:
            return make_response(request, ResponseCode.INVALID_PARAMETER, problem)
        try:
            plan = self._check(header, channel)
        except PullRejected as exc:
            return make_response(request, exc.code, exc.remark)
        holder = self.broker.clients.holder_id(header.consumerGroup, channel)
        if holder is not None:
            self.broker.messaging.record_holder(header.consumerGroup, header.topic, header.queueId, holder)
        hold = 0.0
        if header.sysFlag & FLAG_SUSPEND:
            cfg = self.broker.config
            timeout_ms = (
                header.suspendTimeoutMillis if cfg.long_polling_enable else cfg.short_polling_time_mills
            )
            hold = max(0, timeout_ms) / 1000
        return await self._execute(request, plan, hold)

    def _check(self, header: PullMessageRequestHeader, channel: RemotingChannel) -> _Plan:
        broker = self.broker
        if not broker.config.broker_permission & PERM_READ:
            raise PullRejected(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] pulling message is forbidden",
            )
        group = broker.groups.find(header.consumerGroup)
        if group is None:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{header.consumerGroup}] does not exist",
            )
        if not group.consumeEnable:
            raise PullRejected(
                ResponseCode.NO_PERMISSION, f"subscription group no permission, {header.consumerGroup}"
            )
        topic = broker.topics.get(header.topic)
        if topic is None:
            raise PullRejected(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist, apply first please!"
            )
        if not topic.perm & PERM_READ:
            raise PullRejected(
                ResponseCode.NO_PERMISSION, f"the topic[{header.topic}] pulling message is forbidden"
            )
        if not 0 <= header.queueId < topic.readQueueNums:
            raise PullRejected(
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{header.queueId}] is illegal, topic:[{header.topic}] "
                f"topicConfig.readQueueNums:[{topic.readQueueNums}] consumer:[{channel.remote_addr}]",
            )
        sub = self._subscription(header)
        if is_tag_type(sub.expressionType):
            return _Plan(header, tag_filter_of(sub.subString))
        try:
            enabled = broker.config.enable_property_filter
            return _Plan(header, None, record_filter_of(sub.expressionType, sub.subString, enabled=enabled))
        except FilterRejected as exc:
            raise PullRejected(exc.code, exc.remark) from None

    def _subscription(self, header: PullMessageRequestHeader) -> SubscriptionData:
        if header.sysFlag & FLAG_SUBSCRIPTION:
            return SubscriptionData(
                topic=header.topic,
                subString=header.subscription or SUB_ALL,
                expressionType=(header.expressionType or "TAG").upper(),
            )
        group = self.broker.clients.consumer_group(header.consumerGroup)
        if group is None:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's group info not exist, {header.consumerGroup}",
            )
        sub = group.subscriptions.get(header.topic)
        if sub is None:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist, {header.topic}"
            )
        if sub.subVersion < header.subVersion:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_LATEST,
                f"the consumer's subscription not latest, {sub.subString}",
            )
        return sub

    async def _execute(self, request: RemotingCommand, plan: _Plan, hold: float) -> RemotingCommand:
        broker = self.broker
        h = plan.header
        if slave_refuses_reads(broker):
            header = PullMessageResponseHeader(
                suggestWhichBrokerId=0, nextBeginOffset=h.queueOffset, minOffset=0, maxOffset=0
            )
            return make_response(
                request, ResponseCode.PULL_RETRY_IMMEDIATELY, "read from the master", header=header
            )
        moved = await self._reset_answer(request, h)
        if moved is not None:
            return moved
        query = PullQuery(
            h.topic,
            h.queueId,
            h.queueOffset,
            h.maxMsgNums,
            h.maxMsgBytes,
            plan.tag_filter,
            plan.record_filter,
        )
        result = await broker.messaging.pull(
            query, hold, lambda r: self._answer(h, r)[0] == ResponseCode.PULL_NOT_FOUND
        )
        if hold and not result.count:  # held: an operator's reset wakes it (and is answered now)
            moved = await self._reset_answer(request, h)
            if moved is not None:
                return moved
        code, result.next_begin_offset = self._answer(h, result)
        if h.sysFlag & FLAG_COMMIT_OFFSET and h.commitOffset >= 0 and broker.config.broker_role != "SLAVE":
            broker.messaging.commit_offset(h.consumerGroup, h.topic, h.queueId, h.commitOffset)
        broker.messaging.record_pull(h.consumerGroup, h.topic, h.queueId, result.next_begin_offset)
        header = PullMessageResponseHeader(
            suggestWhichBrokerId=suggest_broker_id(broker, h.consumerGroup, result),
            nextBeginOffset=result.next_begin_offset,
            minOffset=result.min_offset,
            maxOffset=result.max_offset,
        )
        body = None
        if code == ResponseCode.SUCCESS:
            body = result.body
            broker.stats.record_get(h.consumerGroup, h.topic, result.count, len(body))
        return make_response(request, code, result.status.value, header=header, body=body)

    async def _reset_answer(
        self, request: RemotingCommand, h: PullMessageRequestHeader
    ) -> RemotingCommand | None:
        """PULL_OFFSET_MOVED to the queue's pending server-side reset, which this answer delivers."""
        broker = self.broker
        reset = broker.offsets.take_reset(h.consumerGroup, h.topic, h.queueId, h.queueOffset)
        if reset is None:
            return None
        lo, hi = await broker.read(_bounds, broker, h.topic, h.queueId)
        header = PullMessageResponseHeader(
            suggestWhichBrokerId=0, nextBeginOffset=reset, minOffset=lo, maxOffset=hi
        )
        return make_response(request, ResponseCode.PULL_OFFSET_MOVED, "OFFSET_RESET", header=header)

    def _answer(self, h: PullMessageRequestHeader, result: GetResult) -> tuple[int, int]:
        """The response code of a read and the next offset to pull from."""
        code = _STATUS_CODES.get(result.status)
        if code is None:  # NO_MESSAGE_IN_QUEUE / NO_MATCHED_LOGIC_QUEUE: the queue is empty
            code = ResponseCode.PULL_OFFSET_MOVED if h.queueOffset != 0 else ResponseCode.PULL_NOT_FOUND
        behind = code == ResponseCode.PULL_OFFSET_MOVED and result.status is not GetStatus.OFFSET_TOO_SMALL
        if behind and self.broker.ha_client is not None and h.queueOffset > 0:  # a slave behind its consumer
            return ResponseCode.PULL_NOT_FOUND, h.queueOffset
        return code, result.next_begin_offset


def _bounds(broker: PullParts, topic: str, queue_id: int) -> tuple[int, int]:
    return broker.store.min_offset(topic, queue_id), broker.store.max_offset(topic, queue_id)
