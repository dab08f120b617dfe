"""CONSUMER_SEND_MSG_BACK (36): a consumer failed a message; retry it later or dead-letter it.

The original is looked up by CommitLog offset (the C++ client sends only offset, group and
delayLevel), copied with reconsumeTimes+1, RETRY_TOPIC and ORIGIN_MESSAGE_ID, and stored through the
delay path to ``%RETRY%<group>``; after the last retry, or for a negative delay level, it goes to
``%DLQ%<group>`` instead.
"""

from __future__ import annotations

import random
from typing import Protocol

from broker.protocol import properties as P
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import ConsumerSendMsgBackRequestHeader
from broker.protocol.javahash import tags_code
from broker.protocol.message import pack_host
from broker.protocol.names import dlq_topic, real_topic, retry_topic
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.config import BrokerConfig
from broker.server.dlq import ensure_dlq, mark_dead_letter
from broker.server.long_polling import PullHoldService
from broker.server.schedule_service import park_delay_level
from broker.server.stats import BrokerStats
from broker.server.store_access import StoreAccess
from broker.server.subscription_group import SubscriptionGroupManager
from broker.server.topic_config import PERM_WRITE, TopicConfigManager
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage

FAQ = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
V3_4_9 = 121  # MQVersion.Version.V3_4_9.ordinal(): from here on the header's maxReconsumeTimes counts


class SendBackParts(StoreAccess, Protocol):
    """The parts of the broker a send-back uses."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def holds(self) -> PullHoldService: ...

    def topic_refusal(
        self, request: RemotingCommand, remote_addr: str, topic: str, *, publish: bool = False
    ) -> str | None: ...


class SendBackProcessor:
    def __init__(self, broker: SendBackParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.CONSUMER_SEND_MSG_BACK: self.send_back}

    async def send_back(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = ConsumerSendMsgBackRequestHeader.parse(request.ext_fields)
        broker = self.broker
        group = broker.groups.find(h.group)
        if group is None:
            return make_response(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {h.group}{FAQ}",
            )
        if not broker.config.broker_permission & PERM_WRITE:
            return make_response(
                request,
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
            )
        if group.retryQueueNums <= 0:
            return make_response(request)
        topic = retry_topic(h.group)
        config = broker.topics.ensure(topic, group.retryQueueNums)
        if not config.perm & PERM_WRITE:
            return make_response(
                request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
            )
        rec = await broker.read(broker.store.message_at, h.offset) if h.offset >= 0 else None
        if rec is None:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}"
            )
        # the offset may point anywhere: copying a message needs the right to read it
        refused = broker.topic_refusal(request, channel.remote_addr, real_topic(rec.topic, rec.properties))
        if refused is not None:
            return make_response(request, ResponseCode.NO_PERMISSION, refused)
        props = dict(rec.properties)
        props.setdefault(P.RETRY_TOPIC, rec.topic)
        props[P.ORIGIN_MESSAGE_ID] = props.get(P.ORIGIN_MESSAGE_ID) or rec.offset_msg_id
        max_times = group.retryMaxTimes
        if request.version >= V3_4_9 and h.maxReconsumeTimes is not None:
            max_times = h.maxReconsumeTimes
        msg = PutMessage(
            topic=topic,
            queue_id=random.randrange(group.retryQueueNums),
            body=rec.body,
            properties=props,
            flag=rec.flag,
            sys_flag=rec.sys_flag,
            born_timestamp=rec.born_timestamp,
            born_host=pack_host(rec.born_host),
            reconsume_times=rec.reconsume_times + 1,
        )
        if rec.reconsume_times >= max_times or h.delayLevel < 0:
            msg.topic, msg.queue_id = dlq_topic(h.group), 0
            ensure_dlq(broker.topics, h.group)
            mark_dead_letter(props, rec.topic, rec.offset_msg_id)
        else:
            props[P.DELAY] = str(h.delayLevel or 3 + rec.reconsume_times)
            park_delay_level(msg, len(broker.store_config.delay_levels_ms))
        result = await broker.write(broker.store.append, [msg])
        if not result.ok:
            return make_response(request, ResponseCode.SYSTEM_ERROR, result.remark or result.status.value)
        broker.stats.record_put(msg.topic, 1, result.sizes[0])
        broker.holds.notify(
            msg.topic, msg.queue_id, result.queue_offsets[0] + 1, {tags_code(props.get(P.TAGS))}
        )
        return make_response(request)
