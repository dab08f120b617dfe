"""Messages: look up by id or key, read ranges, send, consume; retry and dead-letter topics."""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound, OperationFailed
from admin.models.names import DLQ_PREFIX, RETRY_PREFIX, TOOLS_GROUP
from admin.service.base import Progress, ServiceBase, admin_call, gather
from broker.client.admin_api import RemoteError
from broker.client.remoting_client import RemotingError
from broker.protocol.bodies import TopicRouteData
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.msgid import MessageIdError, UniqKeyGenerator, decode_offset_msg_id

if TYPE_CHECKING:
    from admin.models.messages import (
        DirectDelivery,
        MessageRange,
        Messages,
        MessageTracks,
        OutgoingMessage,
        SendReceipt,
        SpecialTopics,
    )
    from broker.protocol.group_bodies import TopicStatsTable
    from broker.protocol.message import MessageRecord

MAX_TIMESTAMP = (1 << 63) - 1
PRODUCER_GROUP = "rmq_cli_producer"
_PULL_BATCH = 32
_STATS_PER_REQUEST = 1000  # the broker's limit for one GET_TOPICS_STATS_INFO
_FLAG_SUBSCRIPTION = 0x4
_PULL_OK = (
    ResponseCode.SUCCESS,
    ResponseCode.PULL_NOT_FOUND,
    ResponseCode.PULL_RETRY_IMMEDIATELY,
    ResponseCode.PULL_OFFSET_MOVED,
)
_SEND_STATUS = {
    ResponseCode.SUCCESS: "SEND_OK",
    ResponseCode.FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT",
    ResponseCode.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
    ResponseCode.SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE",
}


@functools.cache
def _uniq_keys() -> UniqKeyGenerator:
    """One generator per process: two made in the same millisecond would hand out the same keys."""
    return UniqKeyGenerator()


@dataclass(slots=True)
class _QueuePlan:
    """One queue to read: from ``start`` up to ``end`` (exclusive)."""

    broker_name: str
    address: str
    queue_id: int
    start: int
    end: int


def _tag_filter(expression: str) -> frozenset[str] | None:
    tags = frozenset(t.strip() for t in expression.split("||") if t.strip())
    return None if not tags or "*" in tags else tags


class MessageOps(ServiceBase):
    # -- lookups ----------------------------------------------------------------------------------
    @admin_call
    async def message_get(self, msg_id: str, topic: str | None = None) -> Messages:
        """As mqadmin queryMsgById: an offset MessageId is viewed on the broker it
        names; failing that (or for a UNIQ_KEY) the id is looked up as a unique key on every broker
        of ``topic``'s route."""
        from admin.models.messages import Messages

        failure: Exception | None = None
        try:
            oid = decode_offset_msg_id(msg_id.strip())
            if not 0 < oid.port < 65536:  # a UNIQ_KEY's pid and hash bytes, not a port
                raise MessageIdError(f"{msg_id} is not an offset MessageId")
        except MessageIdError as exc:
            failure = exc
        else:
            try:
                record = await self.api.view_message(oid.address, oid.offset)
            except (RemotingError, RemoteError) as exc:
                failure = exc
            else:
                if topic is None or record.topic == topic:
                    return Messages([record])
        if topic is None:
            if isinstance(failure, MessageIdError):
                raise BadInput(f"{failure}; a UNIQ_KEY needs the topic")
            raise failure if failure is not None else NotFound(f"message {msg_id} not found")
        found = await self._query(topic, msg_id.strip(), unique=True, begin=0, end=MAX_TIMESTAMP, max_num=32)
        if not found:
            raise NotFound(f"message {msg_id} not found in topic {topic}")
        return Messages(found[:1])

    @admin_call
    async def message_deliver(
        self, msg_id: str, group: str, client_id: str, topic: str | None = None
    ) -> DirectDelivery:
        """Hand one message (found as :meth:`message_get` finds it) to one online client of ``group``
        and return what its listener answered; nothing is committed (consumeMessageDirectly)."""
        from admin.models.messages import DirectDelivery

        record = (await self.message_get(msg_id, topic)).messages[0]
        where = decode_offset_msg_id(record.offset_msg_id)
        answer = await self.api.consume_message_directly(
            where.address, group, client_id, record.offset_msg_id, record.topic
        )
        result = answer.consumeResult.name if answer.consumeResult is not None else "CR_RETURN_NULL"
        return DirectDelivery(
            record.offset_msg_id, record.topic, group, client_id, result, answer.remark, answer.spentTimeMills
        )

    @admin_call
    async def message_track(self, msg_id: str, topic: str | None = None) -> MessageTracks:
        """A message (as :meth:`message_get` finds it) and whether each group consuming its topic
        consumed it."""
        from admin.models.messages import MessageTracks, TrackInfo
        from broker.client.message_track import message_tracks

        record = (await self.message_get(msg_id, topic)).messages[0]
        tracks = await message_tracks(self.api, self.namesrv, record)
        return MessageTracks(
            record,
            sorted(
                (TrackInfo(t.consumer_group, t.track_type.value, t.exception_desc) for t in tracks),
                key=lambda t: t.group,
            ),
        )

    async def _query(
        self, topic: str, key: str, *, unique: bool, begin: int, end: int, max_num: int
    ) -> list[MessageRecord]:
        route = await self._route(topic)
        answers = await gather(
            self.api.query_message(a, topic, key, max_num=max_num, begin=begin, end=end, unique=unique)
            for a in self._route_masters(route).values()
        )
        found = sorted((m for ms in answers for m in ms), key=lambda m: m.store_timestamp, reverse=True)
        return found[:max_num]

    @admin_call
    async def message_query(
        self,
        topic: str,
        key: str | None = None,
        unique_key: str | None = None,
        begin: int = 0,
        end: int = MAX_TIMESTAMP,
        max_num: int = 64,
    ) -> Messages:
        """Messages of ``topic`` with a key (or a unique key), stored within [begin, end], newest first."""
        from admin.models.messages import Messages

        if (key is None) == (unique_key is None):
            raise BadInput("give exactly one of a key or a unique key")
        if max_num <= 0:
            raise BadInput("the maximum number of messages must be positive")
        wanted = unique_key or key or ""
        unique = unique_key is not None
        found = await self._query(topic, wanted, unique=unique, begin=begin, end=end, max_num=max_num)
        if not found:
            raise NotFound(f"no message of topic {topic} has {'unique key' if unique else 'key'} {wanted}")
        return Messages(found)

    # -- reading ranges ---------------------------------------------------------------------------
    async def _pull(
        self, plan: _QueuePlan, topic: str, offset: int, group: str, expression: str
    ) -> tuple[list[MessageRecord], int, bool]:
        """One PULL: (records, next offset, whether more may follow)."""
        from broker.protocol import headers
        from broker.protocol.message import decode_records

        header = headers.PullMessageRequestHeader(
            consumerGroup=group,
            topic=topic,
            queueId=plan.queue_id,
            queueOffset=offset,
            maxMsgNums=min(_PULL_BATCH, plan.end - offset),
            sysFlag=_FLAG_SUBSCRIPTION,
            commitOffset=0,
            suspendTimeoutMillis=0,
            subVersion=0,
            subscription=expression,
            expressionType="TAG",
        )
        r = await self.api.call(plan.address, RequestCode.PULL_MESSAGE, header, ok=_PULL_OK)
        nxt = headers.PullMessageResponseHeader.from_ext_fields(r.ext_fields).nextBeginOffset
        if r.code == ResponseCode.SUCCESS:
            return list(decode_records(r.body or b"")), nxt, True
        return [], nxt, r.code == ResponseCode.PULL_RETRY_IMMEDIATELY and nxt > offset

    async def _read(
        self,
        topic: str,
        plans: list[_QueuePlan],
        limit: int,
        expression: str,
        end_ms: int | None,
        group: str,
        progress: Progress | None,
    ) -> tuple[list[MessageRecord], dict[int, int]]:
        """Read the planned queues in order until ``limit`` messages; returns the messages and, per
        plan index, the offset after the last message read."""
        tags = _tag_filter(expression)
        out: list[MessageRecord] = []
        reached: dict[int, int] = {}
        for n, plan in enumerate(plans):
            offset = plan.start
            while offset < plan.end and len(out) < limit:
                records, nxt, more = await self._pull(plan, topic, offset, group, expression)
                for rec in records:
                    if end_ms is not None and rec.store_timestamp > end_ms:
                        more, nxt = False, rec.queue_offset
                        break
                    if rec.queue_offset >= plan.end or len(out) >= limit:
                        nxt = rec.queue_offset
                        break
                    if tags is None or rec.tags in tags:
                        out.append(rec)
                    nxt = rec.queue_offset + 1
                if not more or nxt <= offset:
                    offset = max(offset, nxt)
                    break
                offset = nxt
            reached[n] = offset
            if progress is not None:
                progress(f"reading {topic}", n + 1, len(plans))
            if len(out) >= limit:
                break
        return out, reached

    async def _plans(
        self, topic: str, route: TopicRouteData, broker_name: str | None, queue_id: int | None
    ) -> list[_QueuePlan]:
        """Every readable queue of the route (or the one named), from min to max offset."""
        masters = self._route_masters(route)
        if broker_name is not None:
            if broker_name not in masters:
                raise NotFound(f"topic {topic} has no broker {broker_name}")
            masters = {broker_name: masters[broker_name]}
        tables = await gather(self.api.topic_stats(a, topic) for a in masters.values())
        plans = [
            _QueuePlan(mq.brokerName, addr, mq.queueId, o.minOffset, o.maxOffset)
            for addr, table in zip(masters.values(), tables, strict=True)
            for mq, o in sorted(table.offsetTable.items())
            if queue_id is None or mq.queueId == queue_id
        ]
        if not plans:
            raise NotFound(f"topic {topic} has no queue {queue_id}")
        return plans

    @admin_call
    async def message_print(
        self, topic: str, rng: MessageRange, progress: Progress | None = None
    ) -> Messages:
        """Messages of a topic in queue order within a range of queue offsets or store times,
        read with PULL as the tools group (nothing is committed)."""
        from admin.models.messages import Messages

        if rng.limit <= 0:
            raise BadInput("the limit must be positive")
        plans = await self._plans(topic, await self._route(topic), rng.broker_name, rng.queue_id)
        if rng.begin_ms is not None:
            starts = await gather(
                self.api.search_offset(p.address, topic, p.queue_id, rng.begin_ms) for p in plans
            )
            for p, s in zip(plans, starts, strict=True):
                p.start = max(p.start, s)
        for p in plans:
            if rng.from_offset is not None:
                p.start = max(p.start, rng.from_offset)
            if rng.to_offset is not None:
                p.end = min(p.end, rng.to_offset)
        records, _ = await self._read(
            topic, plans, rng.limit, rng.expression, rng.end_ms, TOOLS_GROUP, progress
        )
        return Messages(records)

    @admin_call
    async def message_consume(
        self, topic: str, count: int, group: str | None = None, expression: str = "*"
    ) -> Messages:
        """Pull up to ``count`` messages. With ``group`` reading starts at the group's committed
        offsets and the new offsets are committed; without it, it starts at each queue's first
        message and commits nothing."""
        from admin.models.messages import Messages

        if count <= 0:
            raise BadInput("the count must be positive")
        plans = await self._plans(topic, await self._route(topic), None, None)
        if group is not None:
            committed = await gather(self._committed(p, topic, group) for p in plans)
            for p, c in zip(plans, committed, strict=True):
                p.start = min(max(p.start, c), p.end) if c >= 0 else p.start
        records, reached = await self._read(topic, plans, count, expression, None, group or TOOLS_GROUP, None)
        if group is not None:
            await gather(self._commit(plans[n], topic, group, off) for n, off in reached.items())
        return Messages(records)

    @admin_call
    async def message_pop(
        self,
        topic: str,
        group: str,
        count: int,
        expression: str = "*",
        invisible_s: float = 30.0,
        ack: bool = True,
        wait_s: float = 0.0,
    ) -> Messages:
        """POP up to ``count`` messages as ``group`` (the way a SimpleConsumer consumes), from each
        broker of the topic in turn, and ack them unless ``ack`` is off: then they stay invisible to
        the group for ``invisible_s`` seconds and come back after that. Waits up to ``wait_s`` seconds
        for the first message."""
        from admin.models.messages import Messages
        from broker.client.pull import build_subscription
        from broker.protocol import properties as message_properties
        from broker.protocol.message import decode_records
        from broker.protocol.pop import (
            MAX_INVISIBLE_MS,
            MAX_POP_NUMS,
            PopMessageRequestHeader,
            PopMessageResponseHeader,
            Receipt,
            add_receipts,
            tag_strays,
        )

        if count <= 0:
            raise BadInput("the count must be positive")
        invisible_ms = int(invisible_s * 1000)
        if not 0 < invisible_ms <= MAX_INVISIBLE_MS:
            raise BadInput(f"the invisible time {invisible_s:g} s is not within 1 ms..12 h")
        tags = set(build_subscription(topic, expression).tagsSet)
        masters = self._route_masters(await self._route(topic))
        ok = (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.POLLING_TIMEOUT)
        records: list[MessageRecord] = []
        deadline = time.monotonic() + max(0.0, wait_s)
        while True:
            for name, addr in masters.items():
                while len(records) < count:
                    header = PopMessageRequestHeader(
                        consumerGroup=group, topic=topic, queueId=-1,
                        maxMsgNums=min(MAX_POP_NUMS, count - len(records)), invisibleTime=invisible_ms,
                        pollTime=0, bornTime=int(time.time() * 1000), initMode=0, expType="TAG",
                        exp=expression, bname=name,
                    )  # fmt: skip
                    r = await self.api.call(addr, RequestCode.POP_MESSAGE, header, ok=ok)
                    if r.code != ResponseCode.SUCCESS or not r.body:
                        break
                    try:  # records, header and receipts: RecordError, HeaderFieldError, ValueError
                        popped = list(decode_records(r.body))
                        add_receipts(popped, PopMessageResponseHeader.parse(r.ext_fields), name)
                        for rec in popped:  # every receipt readable before any is used
                            Receipt.decode(rec.properties[message_properties.POP_CK])
                    except ValueError as exc:
                        raise OperationFailed(f"broker {name} answered a POP unreadably: {exc}") from None
                    popped, strays = tag_strays(popped, tags)
                    await gather(self._ack(addr, group, rec) for rec in (popped + strays if ack else strays))
                    records += popped
            if records or time.monotonic() >= deadline:
                return Messages(records)
            await asyncio.sleep(0.1)

    async def _ack(self, addr: str, group: str, record: MessageRecord) -> None:
        from broker.protocol import properties as message_properties
        from broker.protocol.pop import Receipt

        header = Receipt.decode(record.properties[message_properties.POP_CK]).ack_header(group, record.topic)
        await self.api.call(addr, RequestCode.ACK_MESSAGE, header)

    async def _committed(self, plan: _QueuePlan, topic: str, group: str) -> int:
        from broker.protocol import headers

        header = headers.QueryConsumerOffsetRequestHeader(
            consumerGroup=group, topic=topic, queueId=plan.queue_id
        )
        ok = (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
        r = await self.api.call(plan.address, RequestCode.QUERY_CONSUMER_OFFSET, header, ok=ok)
        if r.code != ResponseCode.SUCCESS:
            return -1
        return headers.OffsetResponseHeader.from_ext_fields(r.ext_fields).offset or 0

    async def _commit(self, plan: _QueuePlan, topic: str, group: str, offset: int) -> None:
        from broker.protocol import headers

        header = headers.UpdateConsumerOffsetRequestHeader(
            consumerGroup=group, topic=topic, queueId=plan.queue_id, commitOffset=offset
        )
        await self.api.call(plan.address, RequestCode.UPDATE_CONSUMER_OFFSET, header)

    # -- sending ----------------------------------------------------------------------------------
    @admin_call
    async def message_send(self, msg: OutgoingMessage, trace: bool = False) -> SendReceipt:
        """Send one message with SEND_MESSAGE_V2 to a writable queue (random, or the one named); with
        ``trace``, through a traced SDK producer, so a Pub trace record follows it."""
        import random

        from admin.models.messages import SendReceipt
        from broker.protocol import headers
        from broker.protocol import properties as message_properties

        route = await self._route(msg.topic)
        masters = self._route_masters(route)
        queues = [
            (q.brokerName or "", qid)
            for q in sorted(route.queueDatas, key=lambda q: q.brokerName or "")
            if q.perm & 2 and q.brokerName in masters
            for qid in range(q.writeQueueNums)
            if (msg.broker_name is None or q.brokerName == msg.broker_name)
            and (msg.queue_id is None or qid == msg.queue_id)
        ]
        if not queues:
            raise OperationFailed(f"topic {msg.topic} has no writable queue matching the request")
        broker_name, queue_id = random.choice(queues)
        if trace:
            return await self._send_traced(msg, broker_name, queue_id)
        uniq = _uniq_keys().next()
        props = dict(msg.properties)
        props[message_properties.UNIQ_KEY] = uniq
        props[message_properties.WAIT] = "true"
        if msg.tags:
            props[message_properties.TAGS] = msg.tags
        if msg.keys:
            props[message_properties.KEYS] = " ".join(msg.keys)
        if msg.delay_level > 0:
            props[message_properties.DELAY] = str(msg.delay_level)
        v1 = headers.SendMessageRequestHeader(
            producerGroup=PRODUCER_GROUP,
            topic=msg.topic,
            defaultTopic="TBW102",
            defaultTopicQueueNums=4,
            queueId=queue_id,
            sysFlag=0,
            bornTimestamp=int(time.time() * 1000),
            flag=0,
            properties=message_properties.encode_properties(props),
        )
        r = await self.api.call(
            masters[broker_name],
            RequestCode.SEND_MESSAGE_V2,
            headers.SendMessageRequestHeaderV2.from_v1(v1),
            body=msg.body,
            ok=tuple(_SEND_STATUS),
        )
        answer = headers.SendMessageResponseHeader.from_ext_fields(r.ext_fields)
        return SendReceipt(
            topic=msg.topic,
            broker_name=broker_name,
            queue_id=answer.queueId,
            queue_offset=answer.queueOffset,
            msg_id=answer.msgId,
            uniq_key=uniq,
            status=_SEND_STATUS[ResponseCode(r.code)],
        )

    async def _send_traced(self, msg: OutgoingMessage, broker_name: str, queue_id: int) -> SendReceipt:
        from admin.models.messages import SendReceipt
        from broker.client.message import Message
        from broker.protocol.bodies import MessageQueue

        outgoing = Message(
            msg.topic, msg.body, tags=msg.tags, keys=msg.keys or None, properties=msg.properties,
            delay_time_level=msg.delay_level,
        )  # fmt: skip
        async with self._producer(PRODUCER_GROUP, trace=True) as producer:  # leaving sends the trace
            result = await producer.send(outgoing, queue=MessageQueue(msg.topic, broker_name, queue_id))
        return SendReceipt(
            topic=msg.topic,
            broker_name=broker_name,
            queue_id=result.message_queue.queueId,
            queue_offset=result.queue_offset,
            msg_id=result.offset_msg_id,
            uniq_key=result.msg_id,
            status=result.status.name,
        )

    # -- retry and dead-letter topics ---------------------------------------------------------------
    async def _special(self, *prefixes: str) -> list[SpecialTopics]:
        """Per prefix, the topics named with it and what they hold (each broker's topic table asked
        once for all prefixes)."""
        from admin.models.messages import SpecialTopic, SpecialTopics

        masters = self._masters(await self._cluster())
        tables = await gather(self.api.all_topic_config(a) for a in masters.values())
        held = [
            sorted(topic for topic in table if topic.startswith(prefixes))
            for table in tables  # in masters' order
        ]
        per_broker = await gather(
            self._topics_stats(addr, topics) for addr, topics in zip(masters.values(), held, strict=True)
        )
        merged: dict[str, tuple[int, list[str], int]] = {}
        for name, topics, stats in zip(masters, held, per_broker, strict=True):
            for topic in topics:
                st = stats.get(topic)
                if st is None:
                    continue  # deleted since the table was read
                count, brokers, last = merged.get(topic, (0, [], 0))
                count += sum(o.maxOffset - o.minOffset for o in st.offsetTable.values())
                last = max([last, *(o.lastUpdateTimestamp for o in st.offsetTable.values())])
                merged[topic] = (count, [*brokers, name], last)
        return [
            SpecialTopics(
                [
                    SpecialTopic(topic[len(prefix) :], topic, count, brokers, last)
                    for topic, (count, brokers, last) in sorted(merged.items())
                    if topic.startswith(prefix)
                ]
            )
            for prefix in prefixes
        ]

    async def _topics_stats(self, addr: str, topics: list[str]) -> dict[str, TopicStatsTable]:
        """The offsets of ``topics`` on one broker: GET_TOPICS_STATS_INFO a thousand at a time; a
        broker that does not serve it (Apache RocketMQ) is asked topic by topic."""
        try:
            parts = await gather(
                self.api.topics_stats(addr, topics[i : i + _STATS_PER_REQUEST])
                for i in range(0, len(topics), _STATS_PER_REQUEST)
            )
        except RemoteError as exc:
            if exc.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                raise
            each = await gather(self.api.topic_stats(addr, t) for t in topics)
            return dict(zip(topics, each, strict=True))
        return {topic: stats for part in parts for topic, stats in part.items()}

    @admin_call
    async def dlq_list(self) -> SpecialTopics:
        """Every group's dead-letter topic (%DLQ%group) and how many messages it holds."""
        return (await self._special(DLQ_PREFIX))[0]

    @admin_call
    async def retry_list(self) -> SpecialTopics:
        """Every group's retry topic (%RETRY%group) and how many messages it holds."""
        return (await self._special(RETRY_PREFIX))[0]

    @admin_call
    async def retry_and_dlq_list(self) -> tuple[SpecialTopics, SpecialTopics]:
        """:meth:`retry_list` and :meth:`dlq_list` together, at the cost of one."""
        retry, dlq = await self._special(RETRY_PREFIX, DLQ_PREFIX)
        return retry, dlq

    async def dlq_browse(self, group: str, rng: MessageRange, progress: Progress | None = None) -> Messages:
        return await self.message_print(DLQ_PREFIX + group, rng, progress)

    async def retry_browse(self, group: str, rng: MessageRange, progress: Progress | None = None) -> Messages:
        return await self.message_print(RETRY_PREFIX + group, rng, progress)

    @admin_call
    async def message_resend(
        self, msg_id: str, topic: str | None = None, to_topic: str | None = None
    ) -> SendReceipt:
        """Send a copy of a message (found as :meth:`message_get` finds it) to its own topic or to
        ``to_topic``: same body, tags, keys and user properties, a fresh send with a new UNIQ_KEY."""
        from admin.models.messages import OutgoingMessage
        from broker.client.dlq_ops import resend_properties
        from broker.protocol import properties as message_properties

        record = (await self.message_get(msg_id, topic)).messages[0]
        props = {
            k: v
            for k, v in resend_properties(record).items()
            if k not in (message_properties.TAGS, message_properties.KEYS, message_properties.UNIQ_KEY)
        }
        return await self.message_send(
            OutgoingMessage(to_topic or record.topic, record.body, record.tags, record.keys, props)
        )
