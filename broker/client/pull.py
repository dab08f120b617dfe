"""Subscriptions and PULL_MESSAGE (Java's FilterAPI and PullAPIWrapper): the request, the status mapping,
decoding and the client-side tag re-filter."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache

from broker.client.api import ClientAPI, request
from broker.client.message import MessageExt, MQBrokerError, MQClientError
from broker.protocol import headers
from broker.protocol import properties as message_properties
from broker.protocol.bodies import MessageQueue
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionData
from broker.protocol.javahash import java_hash
from broker.protocol.message import scan_records

SUB_ALL = "*"
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4


def build_subscription(topic: str, expression: str | None) -> SubscriptionData:
    """``"a || b"`` to a TAG subscription; empty or ``*`` subscribes to everything."""
    text = (expression or "").strip()
    if not text or text == SUB_ALL:
        return SubscriptionData(topic=topic, subString=SUB_ALL)
    tags = [t.strip() for t in text.split("||") if t.strip()]
    return SubscriptionData(topic=topic, subString=text, tagsSet=tags, codeSet=[java_hash(t) for t in tags])


class PullStatus(Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(slots=True)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_broker_id: int = 0  # suggestWhichBrokerId: where the next pull of this queue should go


@dataclass(slots=True)
class PullRequest:
    group: str
    mq: MessageQueue
    subscription: SubscriptionData
    offset: int
    max_nums: int = 32
    commit_offset: int = 0
    suspend_ms: int = 15000
    timeout: float = 30.0

    def to_ext_fields(self) -> dict[str, str]:
        """The PULL_MESSAGE header's extFields (a PullRequest is the request's header)."""
        sys_flag = FLAG_SUSPEND | FLAG_SUBSCRIPTION | (FLAG_COMMIT_OFFSET if self.commit_offset > 0 else 0)
        sub = self.subscription
        fields = dict(
            _fixed_fields(
                self.group, self.mq.topic, self.mq.queueId, self.mq.brokerName, self.max_nums, sys_flag,
                self.suspend_ms, sub.subString, sub.subVersion, sub.expressionType,
            )
        )  # fmt: skip
        fields["queueOffset"] = str(self.offset)
        fields["commitOffset"] = str(self.commit_offset)
        return fields


@lru_cache(maxsize=1024)
def _fixed_fields(
    group: str, topic: str, queue_id: int, broker_name: str, max_nums: int, sys_flag: int, suspend_ms: int,
    subscription: str, sub_version: int, expression_type: str,
) -> dict[str, str]:  # fmt: skip
    """What a queue's pulls share, rendered once (copied, never changed, by the caller)."""
    return headers.PullMessageRequestHeader(
        consumerGroup=group,
        topic=topic,
        queueId=queue_id,
        queueOffset=0,
        maxMsgNums=max_nums,
        sysFlag=sys_flag,
        commitOffset=0,
        suspendTimeoutMillis=suspend_ms,
        subscription=subscription,
        subVersion=sub_version,
        expressionType=expression_type,
        bname=broker_name,
    ).to_ext_fields()


async def pull(api: ClientAPI, addr: str, req: PullRequest) -> PullResult:
    """One PULL_MESSAGE with long polling; found messages are decoded and re-filtered by tag."""
    response = await api.remoting.invoke(addr, request(RequestCode.PULL_MESSAGE, req), req.timeout)
    status = _STATUS.get(response.code)
    if status is None:
        raise MQBrokerError(response.code, response.remark)
    answer = headers.PullMessageResponseHeader.from_ext_fields(response.ext_fields)
    result = PullResult(
        status,
        answer.nextBeginOffset or 0,
        answer.minOffset or 0,
        answer.maxOffset or 0,
        suggest_broker_id=answer.suggestWhichBrokerId or 0,
    )
    if status is PullStatus.FOUND and response.body:
        try:
            result.messages = _decode(req, response.body, result)
        except (ValueError, zlib.error) as exc:  # RecordError, ProtocolError
            raise MQClientError(f"undecodable pull answer from {req.mq}: {exc}") from exc
    return result


def _decode(req: PullRequest, body: bytes, result: PullResult) -> list[MessageExt]:
    """The found messages, built lazily (see :meth:`MessageExt.received`), with the queue's offset
    bounds as properties the way Java's client adds them."""
    bounds = {
        message_properties.MIN_OFFSET: str(result.min_offset),
        message_properties.MAX_OFFSET: str(result.max_offset),
    }
    messages = MessageExt.received(body, scan_records(body), req.mq.brokerName, bounds)
    tags = req.subscription.tagsSet
    if tags:
        wanted = set(tags)
        messages = [msg for msg in messages if msg.tags in wanted]
    return messages
