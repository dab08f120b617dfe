"""Consumer-side administration: topic stats (202), consume stats (208), connections (203, 204),
every producer by group (328), who consumes a topic (300), offset reset (222, pushing 220), offset
cloning (314) and a consumer's running info (307, asked of the client over its own connection)."""

from __future__ import annotations

import time
from typing import Protocol

from broker.protocol.bodies import GroupList, MessageQueue
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.consume_directly import ConsumeMessageDirectlyResultRequestHeader
from broker.protocol.group_bodies import (
    Connection,
    ConsumerConnection,
    ConsumerConnectionTable,
    ConsumeStats,
    ConsumeStatsList,
    OffsetWrapper,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    ResetOffsetBody,
    TopicOffset,
    TopicStatsTable,
    TopicStatsTables,
)
from broker.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)
from broker.protocol.msgid import MessageIdError, decode_offset_msg_id
from broker.protocol.remoting import RemotingCommand, make_request, make_response
from broker.protocol.running_info import GetConsumerRunningInfoRequestHeader
from broker.remoting.channel import Handler, RemotingChannel
from broker.remoting.errors import RemotingError, RemotingTimeoutError
from broker.server.client_registry import ClientChannelInfo, ClientRegistry, ConsumerGroupInfo
from broker.server.config import BrokerConfig
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.long_polling import PullHoldService
from broker.server.stats import BrokerStats
from broker.server.store_access import StoreAccess
from broker.server.subscription_group import SubscriptionGroupManager
from broker.server.topic_config import TopicConfigManager
from broker.store.consume_queue import Boundary
from broker.store.message_store import MessageStore

# How long a forwarded request waits for the client. Shorter than an admin tool's usual 5 s, so the tool
# hears which client is silent instead of timing out itself.
CLIENT_ANSWER_TIMEOUT = 3.0
TOPICS_STATS_MAX = 1000  # topics one GET_TOPICS_STATS_INFO may ask about (bounded work per request)


class ResetError(Exception):
    """An explicit reset target outside the queue."""


class ConsumerAdminParts(StoreAccess, Protocol):
    """The parts of the broker consumer administration uses."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def address(self) -> str: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def clients(self) -> ClientRegistry: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def holds(self) -> PullHoldService: ...


class ConsumerAdminProcessor:
    def __init__(self, broker: ConsumerAdminParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.GET_TOPIC_STATS_INFO: self.topic_stats,
            RequestCode.GET_TOPICS_STATS_INFO: self.topics_stats,
            RequestCode.GET_CONSUME_STATS: self.consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.consumer_connections,
            RequestCode.GET_ALL_CONSUMER_CONNECTIONS: self.all_consumer_connections,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.producer_connections,
            RequestCode.GET_ALL_PRODUCER_INFO: self.all_producers,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.consumed_by_who,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.CLONE_GROUP_OFFSET: self.clone_offsets,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_directly,
            RequestCode.GET_BROKER_CONSUME_STATS: self.all_consume_stats,
        }

    def _mq(self, topic: str, queue_id: int) -> MessageQueue:
        return MessageQueue(topic=topic, brokerName=self.broker.config.broker_name, queueId=queue_id)

    # == statistics ============================================================================
    async def topic_stats(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = GetTopicStatsInfoRequestHeader.parse(request.ext_fields)
        config = self.broker.topics.get(h.topic)
        if config is None:
            return make_response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        queues = max(config.readQueueNums, config.writeQueueNums)
        table = await self.broker.read(self._topic_offsets, h.topic, queues)
        body = TopicStatsTable(
            offsetTable=table, topicPutTps=self.broker.stats.topic_put_rates(h.topic).tps60
        )
        return make_response(request, body=body.to_json())

    async def topics_stats(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """GET_TOPIC_STATS_INFO of every topic of extFields ``topicList`` (``;``-separated, at most
        :data:`TOPICS_STATS_MAX`) in one answer; topics the broker does not hold are left out."""
        names = [t for t in (request.ext_fields or {}).get("topicList", "").split(";") if t]
        if len(names) > TOPICS_STATS_MAX:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, f"at most {TOPICS_STATS_MAX} topics per request"
            )
        held = [(t, c) for t in names if (c := self.broker.topics.get(t)) is not None]
        wanted = [(t, max(c.readQueueNums, c.writeQueueNums)) for t, c in held]
        tables = await self.broker.read(lambda: [self._topic_offsets(t, queues) for t, queues in wanted])
        stats = self.broker.stats
        body = TopicStatsTables(
            topicStatsTable={
                t: TopicStatsTable(offsetTable=table, topicPutTps=stats.topic_put_rates(t).tps60)
                for (t, _), table in zip(wanted, tables, strict=True)
            }
        )
        return make_response(request, body=body.to_json())

    def _topic_offsets(self, topic: str, queues: int) -> dict[MessageQueue, TopicOffset]:
        store = self.broker.store
        table: dict[MessageQueue, TopicOffset] = {}
        for qid in range(queues):
            hi = max(0, store.max_offset(topic, qid))
            last = store.store_time_at(topic, qid, hi - 1) if hi > 0 else None
            table[self._mq(topic, qid)] = TopicOffset(store.min_offset(topic, qid), hi, last or 0)
        return table

    async def consume_stats(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = GetConsumeStatsRequestHeader.parse(request.ext_fields)
        broker = self.broker
        group = h.consumerGroup
        topics = h.topics
        if not topics:
            topics = self._group_topics(group)
        wanted = [(t, cfg.writeQueueNums) for t in topics if (cfg := broker.topics.get(t)) is not None]
        table = await broker.read(self._consume_offsets, group, wanted)
        tps = sum(broker.stats.group_get_rates(group, t).tps60 for t, _ in wanted)
        return make_response(request, body=ConsumeStats(offsetTable=table, consumeTps=tps).to_json())

    def _group_topics(self, group: str) -> list[str]:
        """The topics a group has offsets on, less those its online clients no longer subscribe."""
        online = self.broker.clients.consumer_group(group)
        return [
            t
            for t in self.broker.offsets.topics_of_group(group)
            if online is None or not online.subscriptions or t in online.subscriptions
        ]

    async def all_consume_stats(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """Every subscription group's consume stats, one ConsumeStats per topic, in one answer
        (fetchAllConsumeStatsInBroker): the admin's lag overview costs one request per broker."""
        h = GetConsumeStatsInBrokerHeader.parse(request.ext_fields)
        broker = self.broker
        plans = []
        for group in list(broker.groups.table):
            topics = [
                (t, cfg.writeQueueNums)
                for t in self._group_topics(group)
                if (cfg := broker.topics.get(t)) is not None and (cfg.order or not h.isOrder)
            ]
            plans.append((group, topics))
        tables = await broker.read(self._all_offsets, plans)
        body = ConsumeStatsList(brokerAddr=broker.address)
        for (group, topics), per_topic in zip(plans, tables, strict=True):
            stats = [
                ConsumeStats(offsetTable=table, consumeTps=broker.stats.group_get_rates(group, topic).tps60)
                for (topic, _), table in zip(topics, per_topic, strict=True)
            ]
            for s in stats:
                for o in s.offsetTable.values():
                    body.totalDiff += o.brokerOffset - o.consumerOffset
                    body.totalInflightDiff += o.pullOffset - o.consumerOffset
            body.consumeStatsList.append({group: stats})
        return make_response(request, body=body.to_json())

    def _all_offsets(
        self, plans: list[tuple[str, list[tuple[str, int]]]]
    ) -> list[list[dict[MessageQueue, OffsetWrapper]]]:
        """Per group, per topic: its queues' offsets (one pass on the store thread)."""
        return [[self._consume_offsets(group, [topic]) for topic in topics] for group, topics in plans]

    def _consume_offsets(
        self, group: str, topics: list[tuple[str, int]]
    ) -> dict[MessageQueue, OffsetWrapper]:
        store = self.broker.store
        offsets = self.broker.offsets
        table: dict[MessageQueue, OffsetWrapper] = {}
        for topic, queues in topics:
            for qid in range(queues):
                consumer = max(0, offsets.query(group, topic, qid))
                last = store.store_time_at(topic, qid, consumer - 1) if consumer > 0 else None
                table[self._mq(topic, qid)] = OffsetWrapper(
                    brokerOffset=store.max_offset(topic, qid),
                    consumerOffset=consumer,
                    pullOffset=max(consumer, offsets.pulled(group, topic, qid)),
                    lastTimestamp=last or 0,
                )
        return table

    # == connections ===========================================================================
    async def consumer_connections(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        h = GetConsumerConnectionListRequestHeader.parse(request.ext_fields)
        info = self.broker.clients.consumer_group(h.consumerGroup)
        if info is None or not info.channels:
            return make_response(
                request, ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{h.consumerGroup}] not online"
            )
        return make_response(request, body=_consumer_connection(info).to_json())

    async def all_consumer_connections(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        """Every online group's connections in one answer: a list of 2,000 groups asks once, not
        2,000 times."""
        consumers = self.broker.clients.consumers
        table = {group: _consumer_connection(info) for group, info in consumers.items() if info.channels}
        return make_response(request, body=ConsumerConnectionTable(connectionTable=table).to_json())

    async def producer_connections(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        h = GetProducerConnectionListRequestHeader.parse(request.ext_fields)
        channels = self.broker.clients.producers.get(h.producerGroup)
        if not channels:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, f"the producer group[{h.producerGroup}] not exist"
            )
        body = ProducerConnection(connectionSet=[_connection(c) for c in channels.values()])
        return make_response(request, body=body.to_json())

    async def all_producers(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        # the registry stamps heartbeats on the monotonic clock; the body carries wall-clock ms
        wall_minus_mono = time.time() - time.monotonic()
        table = {
            group: [
                ProducerInfo(
                    clientId=c.client_id,
                    remoteIP=f"/{c.channel.remote_addr}",
                    language=c.language,
                    version=c.version,
                    lastUpdateTimestamp=int((c.last_update + wall_minus_mono) * 1000),
                )
                for c in channels.values()
            ]
            for group, channels in self.broker.clients.producers.items()
        }
        return make_response(request, body=ProducerTableInfo(data=table).to_json())

    async def consumed_by_who(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = QueryTopicConsumeByWhoRequestHeader.parse(request.ext_fields)
        groups = set(self.broker.clients.groups_subscribing(h.topic)) | set(
            self.broker.offsets.groups_of_topic(h.topic)
        )
        return make_response(request, body=GroupList(groupList=sorted(groups)).to_json())

    # == offsets ===============================================================================
    async def reset_offset(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """Server-side reset; without it, push RESET_CONSUMER_CLIENT_OFFSET instead."""
        h = ResetOffsetRequestHeader.parse(request.ext_fields)
        broker = self.broker
        config = broker.topics.get(h.topic)
        if config is None:
            return make_response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        if broker.groups.get(h.group) is None:
            return make_response(
                request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.group}"
            )
        online = broker.clients.consumer_group(h.group)
        server_side = broker.config.use_server_side_reset_offset
        if not server_side and (online is None or not online.channels):
            return make_response(
                request,
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {h.group} Topic: {h.topic}",
            )
        queue_ids = [h.queueId] if h.queueId >= 0 else list(range(config.readQueueNums))
        try:
            targets = await broker.read(self._reset_targets, h, queue_ids)
        except ResetError as exc:
            return make_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
        for qid, offset in targets.items():
            if server_side:
                broker.offsets.assign_reset(h.group, h.topic, qid, offset)
                # a held pull answers it now: clients deaf to the push below (ali-ons) move at once
                broker.holds.wake(h.topic, qid)
            else:
                broker.offsets.commit(h.group, h.topic, qid, offset)
        body = ResetOffsetBody(offsetTable={self._mq(h.topic, q): o for q, o in targets.items()}).to_json()
        # online clients are told at once either way, as Broker2Client.resetOffset does: waiting for
        # their held pulls to return would move them only after the long-polling timeout
        if online is not None:
            for client in online.channels:
                broker.clients.push(
                    client, make_request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, h, body=body)
                )
        return make_response(request, body=body)

    def _reset_targets(self, h: ResetOffsetRequestHeader, queue_ids: list[int]) -> dict[int, int]:
        store = self.broker.store
        targets: dict[int, int] = {}
        for qid in queue_ids:
            lo, hi = store.min_offset(h.topic, qid), store.max_offset(h.topic, qid)
            if h.offset is not None and h.offset != -1:
                if not lo <= h.offset <= hi:
                    raise ResetError(f"offset {h.offset} of queue {qid} is outside [{lo}, {hi}]")
                targets[qid] = h.offset
                continue
            found = (
                hi if h.timestamp == -1 else store.offset_by_time(h.topic, qid, h.timestamp, Boundary.LOWER)
            )
            current = self.broker.offsets.query(h.group, h.topic, qid)
            targets[qid] = found if h.isForce or current < 0 or found < current else current
        return targets

    async def clone_offsets(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = CloneGroupOffsetRequestHeader.parse(request.ext_fields)
        broker = self.broker
        topics = [h.topic] if h.topic and h.topic.strip() else broker.offsets.topics_of_group(h.srcGroup)
        for topic in topics:
            if broker.topics.get(topic) is not None:
                broker.offsets.clone(h.srcGroup, h.destGroup, topic)
        return make_response(request)

    # == asking a client ========================================================================
    async def running_info(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = GetConsumerRunningInfoRequestHeader.parse(request.ext_fields)
        return await self._call_consumer(request, h.consumerGroup, h.clientId)

    async def consume_directly(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """Hand one stored message (named by its offset MessageId) to one client's listener, as
        AdminBrokerProcessor.consumeMessageDirectly does: the record travels as the request's body."""
        h = ConsumeMessageDirectlyResultRequestHeader.parse(request.ext_fields)
        try:
            offset = decode_offset_msg_id(h.msgId or "").offset
        except MessageIdError as exc:
            return make_response(request, ResponseCode.SYSTEM_ERROR, f"bad msgId {h.msgId!r}: {exc}")
        record = await self.broker.read(self.broker.store.record_at, offset)
        if record is None:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}"
            )
        extra = {"brokerName": self.broker.config.broker_name}
        return await self._call_consumer(request, h.consumerGroup, h.clientId or "", record, extra)

    async def _call_consumer(
        self,
        request: RemotingCommand,
        group: str,
        client_id: str,
        body: bytes | None = None,
        extra: dict[str, str] | None = None,
    ) -> RemotingCommand:
        """Forward ``request`` (same code, extFields and body, or ``body`` and the ``extra`` fields)
        over the client's connection and answer with the client's code, remark and body."""
        info = self.broker.clients.find_consumer(group, client_id)
        if info is None:
            return make_response(
                request, ResponseCode.CONSUMER_NOT_ONLINE, f"The Consumer <{group}> <{client_id}> not online"
            )
        forwarded = make_request(
            request.code,
            ext_fields={**request.ext_fields, **(extra or {})},
            body=request.body if body is None else body,
        )
        try:
            answer = await info.channel.invoke(forwarded, CLIENT_ANSWER_TIMEOUT)
        except RemotingTimeoutError:
            return make_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"consumer <{group}> <{client_id}> did not answer within {CLIENT_ANSWER_TIMEOUT:g} s",
            )
        except RemotingError as exc:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> failed: {exc}"
            )
        return make_response(request, answer.code, answer.remark, body=answer.body)


def _consumer_connection(info: ConsumerGroupInfo) -> ConsumerConnection:
    return ConsumerConnection(
        connectionSet=[_connection(c) for c in info.channels.values()],
        subscriptionTable=dict(info.subscriptions),
        consumeType=info.consume_type,
        messageModel=info.message_model,
        consumeFromWhere=info.consume_from_where,
    )


def _connection(info: ClientChannelInfo) -> Connection:
    return Connection(
        clientId=info.client_id,
        clientAddr=info.channel.remote_addr,
        language=info.language,
        version=info.version,
    )
