"""Producers: plain (sync-style, one-way, ordered via a queue selector, batches) and transactional."""

from __future__ import annotations

import logging
import re
import time
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Self, Unpack

from broker.client.api import request
from broker.client.callbacks import call_user
from broker.client.fault import QueueSelector
from broker.client.instance import ClientInstance
from broker.client.message import (
    SEND_STATUS_BY_CODE,
    ZLIB_COMPRESSION_FLAG,
    Message,
    MessageExt,
    MQBrokerError,
    MQClientError,
    SendResult,
    SendStatus,
)
from broker.client.options import ClientKeywords, ClientOptions
from broker.client.route import DEFAULT_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS
from broker.protocol import headers
from broker.protocol import properties as message_properties
from broker.protocol.bodies import MessageQueue
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import HeartbeatData, ProducerData
from broker.protocol.javahash import java_hash
from broker.protocol.message import (
    COMPRESSED_FLAG,
    TRANSACTION_PREPARED_TYPE,
    BatchItem,
    decode_record,
    encode_batch,
)
from broker.protocol.msgid import UniqKeyGenerator, decode_offset_msg_id
from broker.protocol.names import RETRY_PREFIX
from broker.protocol.recall import RecallHandle
from broker.protocol.remoting import RemotingCommand
from broker.remoting.channel import RemotingChannel
from broker.remoting.errors import RemotingError

if TYPE_CHECKING:
    from broker.client.trace_dispatch import Tracer

log = logging.getLogger(__name__)

MAX_MESSAGE_SIZE = 4 * 1024 * 1024
_TOPIC_RE = re.compile(r"^[%|a-zA-Z0-9_-]+$")
_BATCH_ITEM_OVERHEAD = 22  # TOTALSIZE, MAGIC, BODYCRC, FLAG, BODYLENGTH, PROPERTIESLENGTH
# Broker answers after which Java tries again (DefaultMQProducer.retryResponseCodes).
RETRY_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)

MessageQueueSelector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]


def hash_selector(queues: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """Java's SelectMessageQueueByHash: ``abs(arg.hashCode() % n)`` with Java's String/Integer hashes."""
    h = java_hash(arg) if isinstance(arg, str) else arg if isinstance(arg, int) else hash(arg)
    return queues[abs(h) % len(queues)]


def check_message(msg: Message, max_size: int) -> None:
    """Java's Validators.checkMessage: a legal topic and a non-empty body within the size limit."""
    if not msg.topic or len(msg.topic) > 127 or not _TOPIC_RE.match(msg.topic):
        raise MQClientError(f"topic {msg.topic!r} is not a legal topic name")
    if not msg.body:
        raise MQClientError("the message body is empty")
    if len(msg.body) > max_size:
        raise MQClientError(f"the message body size {len(msg.body)} exceeds the maximum {max_size}")


def batch_item_size(msg: Message) -> int:
    """Bytes one message takes in a batch body (its properties as they will be sent)."""
    props = message_properties.encode_properties(msg.properties)
    return _BATCH_ITEM_OVERHEAD + len(msg.body) + len(props.encode("utf-8"))


def split_batch(messages: Sequence[Message], max_size: int = MAX_MESSAGE_SIZE) -> list[list[Message]]:
    """Consecutive groups whose batch bodies stay within ``max_size`` bytes each."""
    groups: list[list[Message]] = []
    size = 0
    for msg in messages:
        item = batch_item_size(msg)
        if item > max_size:
            raise MQClientError(f"a message of {item} bytes cannot fit in a batch of at most {max_size}")
        if not groups or size + item > max_size:
            groups.append([])
            size = 0
        groups[-1].append(msg)
        size += item
    return groups


@dataclass(slots=True)
class _Payload:
    """One send request's content, prepared once and reused by every retry."""

    topic: str
    body: bytes
    properties: str
    sys_flag: int
    flag: int
    msg_id: str
    batch: bool = False
    reconsume_times: int | None = None
    max_reconsume_times: int | None = None
    traced: Sequence[Message] = ()  # what a Pub trace record describes (set only when tracing)


class Producer:
    """Sends messages of one producer group; ``await start()`` before, ``await shutdown()`` after."""

    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        send_timeout: float = 3.0,
        retry_times: int = 2,
        compress_over: int = 4096,
        compress_level: int = 5,
        max_message_size: int = MAX_MESSAGE_SIZE,
        send_latency_fault_enable: bool = False,
        options: ClientOptions | None = None,
        **client: Unpack[ClientKeywords],
    ) -> None:
        self.group = group
        self.options = ClientOptions.of(options, client)
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.compress_over = compress_over
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.instance = ClientInstance(namesrv_addr, self._heartbeat_data, self.options)
        self.selector = QueueSelector(send_latency_fault_enable)
        self._ids = UniqKeyGenerator()
        self._tracer: Tracer | None = None
        if self.options.trace or self.options.trace_topic is not None:
            from broker.client.trace_dispatch import tracer_for  # it imports this module

            self._tracer = tracer_for(self.options, group, "PRODUCE", namesrv_addr)

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    def _heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(clientID=self.client_id, producerDataSet=[ProducerData(groupName=self.group)])

    async def start(self) -> None:
        await self.instance.start()

    async def shutdown(self) -> None:
        if self._tracer is not None:
            await self._tracer.close()
        await self.instance.close(producer_group=self.group)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # ---- public send API

    async def send(
        self,
        msg: Message,
        *,
        timeout: float | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """Send and wait for the broker's answer.

        With ``selector`` (ordered messages) the queue is ``selector(queues, msg, arg)``, ``arg``
        defaulting to the message's sharding key, and there is no retry, as in Java; ``queue`` sends
        to that queue exactly.
        """
        check_message(msg, self.max_message_size)
        payload = self._prepare(msg)
        result = await self._send(payload, timeout, selector, msg, arg, queue, oneway=False)
        assert result is not None
        return result

    async def send_oneway(
        self, msg: Message, *, selector: MessageQueueSelector | None = None, arg: Any = None
    ) -> None:
        """Fire and forget: one attempt, no answer awaited."""
        check_message(msg, self.max_message_size)
        await self._send(self._prepare(msg), None, selector, msg, arg, None, oneway=True)

    async def send_batch(
        self, messages: Sequence[Message], *, timeout: float | None = None
    ) -> list[SendResult]:
        """Send messages of one topic as SEND_BATCH_MESSAGE requests, split to respect the size limit."""
        if not messages:
            raise MQClientError("no message to send")
        topic = messages[0].topic
        for msg in messages:
            check_message(msg, self.max_message_size)
            if msg.topic != topic:
                raise MQClientError("all messages of a batch must have the same topic")
            if msg.delay_time_level > 0:
                raise MQClientError("batch messages do not support a delay level")
            if topic.startswith(RETRY_PREFIX):
                raise MQClientError("batch messages cannot go to a retry topic")
            if message_properties.UNIQ_KEY not in msg.properties:
                msg.properties[message_properties.UNIQ_KEY] = self._ids.next()
            msg.properties.setdefault(message_properties.WAIT, "true")
        results = []
        for group in split_batch(messages, self.max_message_size):
            body = encode_batch(
                [BatchItem(m.flag, m.body, message_properties.encode_properties(m.properties)) for m in group]
            )
            payload = _Payload(
                topic=topic,
                body=body,
                properties=message_properties.encode_properties({message_properties.WAIT: "true"}),
                sys_flag=0,
                flag=0,
                msg_id=",".join(m.properties[message_properties.UNIQ_KEY] for m in group),
                batch=True,
                traced=group if self._tracer is not None else (),
            )
            result = await self._send(payload, timeout, None, None, None, None, oneway=False)
            assert result is not None
            results.append(result)
        return results

    async def recall(self, topic: str, recall_handle: str) -> str:
        """Cancel a message parked for a delay before its time (RECALL_MESSAGE, RocketMQ 5.3), using
        the ``recall_handle`` its :class:`SendResult` carried; returns its UNIQ_KEY. The broker must
        have ``recallMessageEnable`` on; a refusal raises :class:`MQBrokerError`."""
        try:
            handle = RecallHandle.decode(recall_handle)
        except ValueError as exc:
            raise MQClientError(f"bad recall handle: {exc}") from None
        addr = await self.instance.broker_addr(MessageQueue(topic, handle.broker_name, 0))
        header = headers.RecallMessageRequestHeader(
            producerGroup=self.group, topic=topic, recallHandle=recall_handle, bname=handle.broker_name
        )
        return await self.instance.api.recall(addr, header)

    # ---- internals

    def _prepare(self, msg: Message) -> _Payload:
        if message_properties.UNIQ_KEY not in msg.properties:
            msg.properties[message_properties.UNIQ_KEY] = self._ids.next()
        props = dict(msg.properties)
        props.setdefault(message_properties.WAIT, "true")
        body, sys_flag = msg.body, 0
        if len(body) >= self.compress_over:
            body = zlib.compress(body, self.compress_level)
            sys_flag |= COMPRESSED_FLAG | ZLIB_COMPRESSION_FLAG
        if props.get(message_properties.TRAN_MSG) == "true":
            sys_flag |= TRANSACTION_PREPARED_TYPE
        payload = _Payload(msg.topic, body, "", sys_flag, msg.flag, props[message_properties.UNIQ_KEY])
        if self._tracer is not None:
            payload.traced = (msg,)
        if msg.topic.startswith(RETRY_PREFIX):
            reconsume = props.pop(message_properties.RECONSUME_TIME, None)
            max_reconsume = props.pop(message_properties.MAX_RECONSUME_TIMES, None)
            payload.reconsume_times = int(reconsume) if reconsume else None
            payload.max_reconsume_times = int(max_reconsume) if max_reconsume else None
        payload.properties = message_properties.encode_properties(props)
        return payload

    async def _send(
        self,
        payload: _Payload,
        timeout: float | None,
        selector: MessageQueueSelector | None,
        msg: Message | None,
        arg: Any,
        queue: MessageQueue | None,
        *,
        oneway: bool,
    ) -> SendResult | None:
        budget = self.send_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        info = await self.instance.routes.publish_info(payload.topic)
        single = oneway or selector is not None or queue is not None
        attempts = 1 if single else 1 + self.retry_times
        failed_broker: str | None = None
        last_error: Exception | None = None
        for attempt in range(attempts):
            if queue is not None:
                mq = queue
            elif selector is not None:
                assert msg is not None
                mq = selector(info.queues, msg, msg.sharding_key if arg is None else arg)
            else:
                mq = self.selector.select(info.queues, failed_broker)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            began = time.monotonic()
            try:
                result = await self._send_to(payload, mq, remaining, oneway)
            except (RemotingError, MQBrokerError, MQClientError) as exc:
                self.selector.record(mq.brokerName, int((time.monotonic() - began) * 1000), failed=True)
                if single or (isinstance(exc, MQBrokerError) and exc.code not in RETRY_CODES):
                    raise
                log.info("send to %s failed (attempt %d): %s", mq, attempt + 1, exc)
                await self.instance.routes.refresh_after_failure(payload.topic)
                failed_broker, last_error = mq.brokerName, exc
                continue
            self.selector.record(mq.brokerName, int((time.monotonic() - began) * 1000), failed=False)
            return result
        raise MQClientError(
            f"send to {payload.topic} failed within {budget:g} s after {attempts} attempt(s): {last_error}"
        ) from last_error

    async def _send_to(
        self, payload: _Payload, mq: MessageQueue, timeout: float, oneway: bool
    ) -> SendResult | None:
        addr = await self.instance.broker_addr(mq)
        header = headers.SendMessageRequestHeaderV2(
            a=self.group,
            b=payload.topic,
            c=DEFAULT_TOPIC,
            d=DEFAULT_TOPIC_QUEUE_NUMS,
            e=mq.queueId,
            f=payload.sys_flag,
            g=int(time.time() * 1000),
            h=payload.flag,
            i=payload.properties,
            j=payload.reconsume_times or 0,
            k=False,
            l=payload.max_reconsume_times,
            m=payload.batch,
            n=mq.brokerName,
        )
        code = RequestCode.SEND_BATCH_MESSAGE if payload.batch else RequestCode.SEND_MESSAGE_V2
        cmd = request(code, header, payload.body, oneway=oneway)
        if oneway:
            await self.instance.api.oneway(addr, cmd)
            return None
        response = await self.instance.remoting.invoke(addr, cmd, timeout)
        status = SEND_STATUS_BY_CODE.get(response.code)
        if status is None:
            raise MQBrokerError(response.code, response.remark)
        answer = headers.SendMessageResponseHeader.parse(response.ext_fields)
        sent_to = mq  # the queue asked for, unless the broker stored elsewhere
        if answer.queueId != mq.queueId or mq.topic != payload.topic:
            sent_to = MessageQueue(payload.topic, mq.brokerName, answer.queueId)
        result = SendResult(
            status=status,
            msg_id=payload.msg_id,
            offset_msg_id=answer.msgId,
            message_queue=sent_to,
            queue_offset=answer.queueOffset,
            transaction_id=answer.transactionId,
            recall_handle=answer.recallHandle,
        )
        if self._tracer is not None and payload.traced:
            self._tracer.published(payload.traced, result, addr, response.ext_fields, header.g)
        return result


class LocalTransactionState(IntEnum):
    """What a local transaction decided; the values are END_TRANSACTION's commitOrRollback."""

    UNKNOW = 0
    COMMIT_MESSAGE = 8
    ROLLBACK_MESSAGE = 12


TransactionCallable = Callable[[Message], LocalTransactionState | Awaitable[LocalTransactionState]]
TransactionChecker = Callable[[MessageExt], LocalTransactionState | Awaitable[LocalTransactionState]]


@dataclass(slots=True, frozen=True)
class TransactionSendResult:
    send_result: SendResult
    local_state: LocalTransactionState


async def _call(fn: Callable[[Any], Any], arg: Any) -> LocalTransactionState:
    """Run a transaction callback; an exception means UNKNOW."""
    try:
        return LocalTransactionState(await call_user(fn, arg))
    except Exception:
        log.exception("transaction callback %r failed; state is UNKNOW", fn)
        return LocalTransactionState.UNKNOW


class TransactionProducer(Producer):
    """Half message, local transaction, END_TRANSACTION; ``checker`` answers the broker's state checks."""

    def __init__(self, group: str, namesrv_addr: str, checker: TransactionChecker, **kwargs: Any) -> None:
        super().__init__(group, namesrv_addr, **kwargs)
        self.checker = checker
        self.instance.remoting.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check)

    async def send_message_in_transaction(
        self, msg: Message, local_transaction: TransactionCallable
    ) -> TransactionSendResult:
        msg.delay_time_level = 0
        msg.properties[message_properties.TRAN_MSG] = "true"
        msg.properties[message_properties.PGROUP] = self.group
        result = await self.send(msg)
        if result.status is SendStatus.SEND_OK:
            if result.transaction_id:
                msg.properties[message_properties.TRANSACTION_ID] = result.transaction_id
            state = await _call(local_transaction, msg)
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        addr = await self._end(result, state)
        if self._tracer is not None:
            transaction_id = result.transaction_id or result.msg_id
            self._tracer.transaction_ended(msg, result.msg_id, addr, state.name, transaction_id, False)
        return TransactionSendResult(result, state)

    async def _end(self, result: SendResult, state: LocalTransactionState) -> str:
        """END_TRANSACTION for a half message; the broker address it went to."""
        header = headers.EndTransactionRequestHeader(
            producerGroup=self.group,
            tranStateTableOffset=result.queue_offset,
            commitLogOffset=decode_offset_msg_id(result.offset_msg_id).offset,
            commitOrRollback=int(state),
            msgId=result.msg_id,
            transactionId=result.transaction_id or result.msg_id,
            topic=result.message_queue.topic,
            fromTransactionCheck=False,
        )
        addr = await self.instance.broker_addr(result.message_queue)
        await self.instance.api.end_transaction(addr, header)
        return addr

    async def _on_check(self, cmd: RemotingCommand, channel: RemotingChannel) -> RemotingCommand | None:
        """CHECK_TRANSACTION_STATE: ask the checker, answer with END_TRANSACTION on the same connection."""
        check = headers.CheckTransactionStateRequestHeader.from_ext_fields(cmd.ext_fields)
        msg = MessageExt(decode_record(cmd.body or b""))
        state = await _call(self.checker, msg)
        header = headers.EndTransactionRequestHeader(
            producerGroup=self.group,
            tranStateTableOffset=check.tranStateTableOffset,
            commitLogOffset=check.commitLogOffset,
            commitOrRollback=int(state),
            msgId=msg.uniq_key or check.msgId or "",
            transactionId=check.transactionId or msg.uniq_key,
            topic=msg.topic,
            fromTransactionCheck=True,
        )
        await channel.invoke_oneway(request(RequestCode.END_TRANSACTION, header, oneway=True))
        if self._tracer is not None:
            self._tracer.transaction_ended(
                msg, header.msgId, channel.remote_addr, state.name, header.transactionId, True
            )
        return None
