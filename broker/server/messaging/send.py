"""The send path both protocols share: a decoded send checked in RocketMQ's order (answered with its
codes, so clients react the same way: retry another broker, give up, refresh the route), turned into
records and appended on the broker's store-writer thread; under SYNC_FLUSH the answer waits for the
group commit without blocking the event loop.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from broker.protocol import properties as P
from broker.protocol.bodies import TopicConfig, TopicFilterType
from broker.protocol.codes import ResponseCode
from broker.protocol.headers import (
    SendMessageRequestHeader,
)
from broker.protocol.javahash import tags_code
from broker.protocol.message import (
    MAX_TOPIC_BYTES,
    MULTI_TAGS_FLAG,
    RecordError,
    decode_batch,
    pack_host,
)
from broker.protocol.msgid import UniqKeyGenerator
from broker.protocol.names import DLQ_PREFIX, RETRY_PREFIX, dlq_topic
from broker.protocol.properties import decode_properties, encode_properties, encodes_exactly
from broker.server.config import BrokerConfig
from broker.server.dlq import mark_dead_letter
from broker.server.flow_control import page_cache_busy
from broker.server.long_polling import PullHoldService
from broker.server.schedule_service import park_delay_level
from broker.server.stats import BrokerStats
from broker.server.subscription_group import SubscriptionGroupManager
from broker.server.timer_service import PARKING_PROPERTIES, park_timer_message, parked_recall_handle
from broker.server.topic_config import (
    NOT_ALLOWED_SEND_TOPICS,
    PERM_READ,
    PERM_WRITE,
    TopicConfigManager,
    topic_name_problem,
)
from broker.server.transaction_service import is_half_message, to_half_message
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage, PutResult, PutStatus

T = TypeVar("T")

FAQ = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
DLQ_QUEUE_NUMS = 1
_UNKNOWN_HOST = pack_host("127.0.0.1:0")
_PUT_CODES = {
    PutStatus.PUT_OK: ResponseCode.SUCCESS,
    PutStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
    PutStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutStatus.OS_PAGE_CACHE_BUSY: ResponseCode.SYSTEM_BUSY,
}
# Statuses a producer counts as "sent": the answer carries the message ids.
_SENT = (
    PutStatus.PUT_OK,
    PutStatus.FLUSH_DISK_TIMEOUT,
    PutStatus.FLUSH_SLAVE_TIMEOUT,
    PutStatus.SLAVE_NOT_AVAILABLE,
)


class Sender(Protocol):
    """What a send needs of the connection it came on: a remoting channel, or the gRPC client that
    stands in for one (a protocol, so the compiled module checks no concrete class)."""

    @property
    def remote_addr(self) -> str: ...


class SlaveWaits(Protocol):
    """A SYNC_MASTER's wait for its slaves (the HA service)."""

    async def wait_slave(self, result: PutResult) -> None: ...


class FlushWaiter(Protocol):
    """SYNC_FLUSH answers wait for the disk here."""

    async def wait(self, end_offset: int, timeout: float) -> bool: ...


class WriteFence(Protocol):
    """Controller mode: why this master may not take writes now (None: it may)."""

    def write_refusal(self) -> str | None: ...


class SendParts(Protocol):
    """The parts of the broker the send path uses."""

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
    def uniq_keys(self) -> UniqKeyGenerator: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def holds(self) -> PullHoldService: ...

    @property
    def flush_waits(self) -> FlushWaiter: ...

    @property
    def ha_service(self) -> SlaveWaits: ...

    @property
    def replicas(self) -> WriteFence | None: ...

    @property
    def write_queue_size(self) -> int: ...

    async def write(self, fn: Callable[..., T], *args: Any) -> T: ...


class SendRejected(Exception):
    """A check failed; carries the response code and remark."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


class _Target:
    """Where a send goes (a plain class: mypyc compiles its __init__, not a dataclass's)."""

    def __init__(self, topic: str, queue_id: int, config: TopicConfig) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.config = config


def born_host_of(channel: Sender) -> bytes:
    return _packed_host(channel.remote_addr)


@functools.lru_cache(maxsize=4096)
def _packed_host(addr: str) -> bytes:
    """Packed once per client address: parsing it on every send costs more than the lookup."""
    try:
        return pack_host(addr)
    except ValueError:
        return _UNKNOWN_HOST


class Sent:
    """What a send came to: the answer's ``code`` and ``remark``; with ``result`` the messages went to
    the store (``queue_id`` is the queue the producer addressed)."""

    def __init__(
        self,
        code: int,
        remark: str,
        result: PutResult | None = None,
        msgs: list[PutMessage] | None = None,
        queue_id: int = 0,
    ) -> None:
        self.code = code
        self.remark = remark
        self.result = result
        self.msgs: list[PutMessage] = [] if msgs is None else msgs
        self.queue_id = queue_id


class SendAppends:
    """The sends' appends, run on the store-writer thread. The appends of one burst go to the store
    together (``MessageStore.append_all``: one lock, one CommitLog write, one dispatch); each is first
    held to flow control (waited longer than waitTimeMillsInSendQueue: None, answered SYSTEM_BUSY)."""

    def __init__(self, broker: SendParts) -> None:
        self.broker = broker

    def __call__(self, msgs: list[PutMessage], arrived: float) -> PutResult | None:
        return self.run_all([(msgs, arrived)])[0]

    def run_all(self, calls: Sequence[tuple[list[PutMessage], float]]) -> list[PutResult | None]:
        limit = self.broker.config.wait_time_mills_in_send_queue / 1000
        now = time.monotonic()
        fresh = [i for i, (_msgs, arrived) in enumerate(calls) if now - arrived <= limit]
        results: list[PutResult | None] = [None] * len(calls)
        stored = self.broker.store.append_all([calls[i][0] for i in fresh])
        for i, result in zip(fresh, stored, strict=True):
            results[i] = result
        return results


class SendService:
    def __init__(self, broker: SendParts) -> None:
        self.broker = broker
        self._appends = SendAppends(broker)

    async def put(
        self,
        header: SendMessageRequestHeader,
        body: bytes,
        batch: bool,
        channel: Sender,
        arrived: float,
        props: dict[str, str] | None = None,
    ) -> Sent:
        """A send whose header is decoded and its numbers in Java's ranges, up to what the store made
        of it; remoting's SEND_MESSAGE codes and gRPC's SendMessage (which builds the header from a
        SendMessageRequest) both answer from this. A
        caller that encoded ``header.properties`` from a map passes the map as ``props`` (the message
        takes it over), so it is not decoded again."""
        try:
            target = self._target(header, channel, batch)
            msgs = self._build(header, body, target, born_host_of(channel), batch, props)
        except SendRejected as exc:
            return Sent(exc.code, exc.remark)
        busy = page_cache_busy(self.broker.store, self.broker.store_config)
        if busy is not None:
            return Sent(ResponseCode.SYSTEM_BUSY, busy)
        result = await self.broker.write(self._appends, msgs, arrived)
        if result is None:
            waited = int((time.monotonic() - arrived) * 1000)
            return Sent(
                ResponseCode.SYSTEM_BUSY,
                f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "
                f"{waited}ms, size of queue: {self.broker.write_queue_size}",
            )
        if result.ok:
            self._after_put(msgs, result)
            if self.broker.store_config.sync_flush and msgs[0].properties.get(P.WAIT) != "false":
                await self._wait_flush(result)
            if self.broker.config.broker_role == "SYNC_MASTER" and msgs[0].properties.get(P.WAIT) != "false":
                await self.broker.ha_service.wait_slave(result)
        # PutStatus hashes in Python (Enum.__hash__): the common answer skips the lookup
        ok = result.status is PutStatus.PUT_OK
        code = ResponseCode.SUCCESS if ok else _PUT_CODES.get(result.status, ResponseCode.SYSTEM_ERROR)
        if not ok and result.status not in _SENT:
            return Sent(code, result.remark or result.status.value)
        return Sent(code, result.remark, result, msgs, target.queue_id)

    # == checks ================================================================================
    def send_topic(self, topic: str, default_topic: str, default_queue_nums: int) -> TopicConfig | None:
        """The topic a producer writes to: its config; else one auto-created from ``default_topic``
        when the broker allows it; else, for a group's retry topic, one created on first use."""
        topics = self.broker.topics
        config = topics.table.get(topic) or topics.create_from_template(
            topic, default_topic, default_queue_nums
        )
        if config is None and topic.startswith(RETRY_PREFIX):
            group = self.broker.groups.find(topic[len(RETRY_PREFIX) :])
            if group is not None:
                config = topics.ensure(topic, group.retryQueueNums)
        return config

    def _target(self, header: SendMessageRequestHeader, channel: Sender, batch: bool) -> _Target:
        """Where the message goes, after the send checks."""
        cfg = self.broker.config
        if cfg.broker_role == "SLAVE":
            raise SendRejected(
                ResponseCode.SYSTEM_BUSY, "[REJECTREQUEST]system busy, start flow control for a while"
            )
        replicas = self.broker.replicas
        fenced = replicas.write_refusal() if replicas is not None else None
        if fenced is not None:  # controller mode: a master whose role the controller no longer confirms
            raise SendRejected(ResponseCode.SERVICE_NOT_AVAILABLE, fenced)
        if not cfg.broker_permission & PERM_WRITE:
            raise SendRejected(
                ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] sending message is forbidden"
            )
        topic = header.topic
        problem = topic_name_problem(topic)
        if problem:
            raise SendRejected(ResponseCode.INVALID_PARAMETER, problem)
        if topic in NOT_ALLOWED_SEND_TOPICS:
            raise SendRejected(ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        if batch and (topic.startswith(RETRY_PREFIX) or len(topic.encode()) > MAX_TOPIC_BYTES):
            raise SendRejected(
                ResponseCode.MESSAGE_ILLEGAL,
                f"batch request does not support retry group or long topic {topic}",
            )
        config = self.send_topic(topic, header.defaultTopic, header.defaultTopicQueueNums)
        if config is None:
            raise SendRejected(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{FAQ}"
            )
        if not config.perm & PERM_WRITE:
            raise SendRejected(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        queues = max(config.readQueueNums, config.writeQueueNums)
        queue_id = header.queueId
        if queue_id >= queues:
            raise SendRejected(
                ResponseCode.INVALID_PARAMETER,
                f"request queueId[{queue_id}] is illegal, topic {topic} has {queues} queues, "
                f"producer: {channel.remote_addr}",
            )
        if queue_id < 0:
            queue_id = random.randrange(max(1, config.writeQueueNums))
        if topic.startswith(RETRY_PREFIX):
            return self._retry_or_dlq(header, _Target(topic, queue_id, config))
        return _Target(topic, queue_id, config)

    def _retry_or_dlq(self, header: SendMessageRequestHeader, target: _Target) -> _Target:
        """A client's own resend to %RETRY%<group> goes to %DLQ%<group> once it retried too often."""
        group_name = target.topic[len(RETRY_PREFIX) :]
        group = self.broker.groups.find(group_name)
        if group is None:
            raise SendRejected(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group_name}{FAQ}"
            )
        limit = header.maxReconsumeTimes if header.maxReconsumeTimes is not None else group.retryMaxTimes
        if (header.reconsumeTimes or 0) <= limit:
            return target
        dlq = dlq_topic(group_name)
        return _Target(dlq, 0, self.broker.topics.ensure(dlq, DLQ_QUEUE_NUMS, PERM_READ | PERM_WRITE))

    # == building ==============================================================================
    def _build(
        self,
        header: SendMessageRequestHeader,
        body: bytes,
        target: _Target,
        born_host: bytes,
        batch: bool,
        decoded: dict[str, str] | None,
    ) -> list[PutMessage]:
        sys_flag = header.sysFlag
        if target.config.topicFilterType == TopicFilterType.MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        if batch:
            try:
                items = [(item.flag, item.body, item.properties) for item in decode_batch(body)]
            except RecordError as exc:
                raise SendRejected(
                    ResponseCode.MESSAGE_ILLEGAL, f"the batch body is malformed: {exc}"
                ) from None
            if not items:
                raise SendRejected(ResponseCode.MESSAGE_ILLEGAL, "the batch holds no message")
        else:
            items = [(header.flag, body, header.properties or "")]
        # what every message of the request shares, looked up once
        cfg = self.broker.config
        cluster = cfg.broker_cluster_name
        region = cfg.region_id
        trace_on = "true" if cfg.trace_on else "false"
        uniq_keys = self.broker.uniq_keys
        topic = target.topic
        queue_id = target.queue_id
        dead_letter = topic.startswith(DLQ_PREFIX)
        keyed = topic in self.broker.topics.compaction_topics  # COMPACTION topics need a key
        born_timestamp = header.bornTimestamp
        reconsume_times = header.reconsumeTimes or 0
        cluster_text = encode_properties({P.CLUSTER: cluster})
        region_text = encode_properties({P.MSG_REGION: region})
        trace_text = encode_properties({P.TRACE_ON: trace_on})
        msgs: list[PutMessage] = []
        for flag, msg_body, text in items:
            props = decode_properties(text) if decoded is None or batch else decoded
            if keyed and not props.get(P.KEYS, "").strip():
                raise SendRejected(ResponseCode.MESSAGE_ILLEGAL, "Required message key is missing")
            prepared = props.get(P.TRAN_MSG) == "true"
            if prepared and cfg.reject_transaction_message:
                raise SendRejected(
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{cfg.broker_ip1}] sending transaction message is forbidden",
                )
            # The properties the broker adds (SendMessageProcessor + CommitLog in RocketMQ). Where
            # it only appends to a canonical text (as every RocketMQ client sends), the record takes
            # that text and the appended pairs, and the map is not encoded again.
            reusable = (
                P.CLUSTER not in props
                and P.POP_CK not in props
                and (props is decoded or encodes_exactly(text, props))
            )
            props.pop(P.POP_CK, None)
            if P.UNIQ_KEY not in props:  # decoding drops empty values: present means non-empty
                uniq = props[P.UNIQ_KEY] = uniq_keys.next()
                text += encode_properties({P.UNIQ_KEY: uniq})
            props[P.CLUSTER] = cluster
            text += cluster_text
            if P.MSG_REGION not in props:
                props[P.MSG_REGION] = region
                text += region_text
            if P.TRACE_ON not in props:
                props[P.TRACE_ON] = trace_on
                text += trace_text
            msg = PutMessage(
                topic, queue_id, msg_body, props, flag, sys_flag, born_timestamp, born_host, reconsume_times
            )
            if dead_letter:
                mark_dead_letter(props, header.topic)
            if prepared and is_half_message(msg):
                to_half_message(msg)
            elif not PARKING_PROPERTIES.isdisjoint(props):
                self._apply_delay(msg)
            elif reusable and not dead_letter:
                msg.properties_text = text
            msgs.append(msg)
        return msgs

    def _apply_delay(self, msg: PutMessage) -> None:
        """A timer or a delay level parks the message until it is due."""
        problem = park_timer_message(msg, self.broker.store_config)
        if problem is not None:
            raise SendRejected(ResponseCode.MESSAGE_ILLEGAL, problem)
        if P.DELAY in msg.properties:  # the level count is looked up only for delayed messages
            park_delay_level(msg, len(self.broker.store_config.delay_levels_ms))

    # == after storing =========================================================================
    def _after_put(self, msgs: list[PutMessage], result: PutResult) -> None:
        msg = msgs[0]
        self.broker.stats.record_put(msg.topic, len(msgs), sum(result.sizes))
        # hashed once per distinct tag: a batch's messages mostly share theirs
        codes = {tags_code(tags) for tags in {m.properties.get(P.TAGS) for m in msgs}}
        self.broker.holds.notify(msg.topic, msg.queue_id, result.queue_offsets[-1] + 1, codes)

    async def _wait_flush(self, result: PutResult) -> None:
        timeout_ms = self.broker.store_config.sync_flush_timeout_ms
        if not await self.broker.flush_waits.wait(result.end_offset, timeout_ms / 1000):
            result.status = PutStatus.FLUSH_DISK_TIMEOUT
            result.remark = f"flush to disk took longer than {timeout_ms} ms"

    def recall_handle(self, msgs: list[PutMessage]) -> str | None:
        """A single message parked in the timer can be recalled before it is due (not batches)."""
        if len(msgs) != 1:
            return None
        handle = parked_recall_handle(msgs[0], self.broker.config.broker_name)
        return None if handle is None else handle.encode()
