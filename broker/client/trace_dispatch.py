"""Message tracing off the hot path (the Java client's AsyncTraceDispatcher and its trace hooks).

A traced client hands records to its :class:`Tracer`, which only appends them to a bounded buffer; a
background task sends them, :data:`BATCH_SIZE` records per trace message (sooner once that many wait,
else every :data:`FLUSH_INTERVAL` seconds), through a producer of its own. A full buffer drops records
and a failed send is logged: tracing never fails or holds up the client's own work.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from broker.client.message import Message, MessageExt, MQClientError, SendResult, SendStatus
from broker.client.producer import Producer
from broker.protocol import properties as message_properties
from broker.protocol.msgid import UniqKeyGenerator
from broker.protocol.trace import (
    DEFAULT_REGION,
    TRACE_GROUP_PREFIX,
    TRACE_TOPIC,
    ConsumeReturnType,
    MessageType,
    TraceRecord,
    TraceType,
    encode,
)

if TYPE_CHECKING:
    from broker.client.options import ClientOptions

log = logging.getLogger(__name__)

T = TypeVar("T")

BATCH_SIZE = 10  # records per trace message (Java's traceMsgBatchNum)
FLUSH_INTERVAL = 5.0  # seconds a record may wait for a full batch
MAX_PENDING = 2048  # records buffered; beyond, new ones are dropped
MAX_TRACE_MESSAGE = 128_000  # bytes of one trace message body
SEND_TIMEOUT = 5.0
SHUTDOWN_WAIT = 5.0  # seconds shutdown spends sending what is still buffered
_SUCCESS_STATUSES = ("CONSUME_SUCCESS", "SUCCESS")  # concurrent and orderly listeners' success
_DELAY_PROPERTIES = (
    message_properties.DELAY,
    message_properties.TIMER_DELIVER_MS,
    message_properties.TIMER_DELAY_SEC,
    message_properties.TIMER_DELAY_MS,
    "__STARTDELIVERTIME",
)
_dispatchers = itertools.count(1)


def now_ms() -> int:
    return int(time.time() * 1000)


class TraceDispatcher:
    """Buffers records and sends them to the trace topic in batches from a background task."""

    def __init__(self, producer: Producer, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        self.dropped = 0
        self._pending: collections.deque[TraceRecord] = collections.deque()
        self._full = asyncio.Event()
        self._sending = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._failing = False
        self._closed = False

    def append(self, records: Sequence[TraceRecord]) -> None:
        """Buffer records for sending; never blocks and never raises."""
        if self._closed or not records:
            return
        room = MAX_PENDING - len(self._pending)
        if room < len(records):
            if not self.dropped:
                log.warning("the trace buffer is full (%d records): new records are dropped", MAX_PENDING)
            self.dropped += len(records) - max(room, 0)
            records = records[: max(room, 0)]
        self._pending.extend(records)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"trace to {self.topic}")
        if len(self._pending) >= BATCH_SIZE:
            self._full.set()

    async def _run(self) -> None:
        while True:
            try:
                async with asyncio.timeout(FLUSH_INTERVAL):
                    await self._full.wait()
            except TimeoutError:
                pass
            self._full.clear()
            await self.flush()

    async def flush(self) -> None:
        """Send every buffered record now."""
        async with self._sending:
            while self._pending:
                batch = list(itertools.islice(self._pending, BATCH_SIZE))
                for body, keys in _trace_messages(batch):
                    await self._send(body, keys)
                for _ in batch:  # dropped once sent (or given up): a cancelled send keeps them
                    self._pending.popleft()

    async def _send(self, body: bytes, keys: list[str]) -> None:
        try:
            if not self._started:
                await self.producer.start()
                self._started = True
            await self.producer.send(Message(self.topic, body, keys=keys))
        except Exception as exc:  # whatever goes wrong, tracing carries on with the next batch
            # one warning per run of failures (a missing trace topic would repeat on every batch)
            level = logging.DEBUG if self._failing else logging.WARNING
            log.log(level, "sending traces to %s failed: %s", self.topic, exc)
            self._failing = True
        else:
            self._failing = False

    async def close(self) -> None:
        """Stop the background task, send what is buffered (for at most SHUTDOWN_WAIT seconds),
        stop the trace producer."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        try:
            async with asyncio.timeout(SHUTDOWN_WAIT):
                await self.flush()
        except TimeoutError:
            log.warning("%d trace records were not sent before shutdown", len(self._pending))
        if self._started:
            await self.producer.shutdown()


def _trace_messages(records: Sequence[TraceRecord]) -> list[tuple[bytes, list[str]]]:
    """Bodies of at most MAX_TRACE_MESSAGE bytes, each with the keys of the records it holds."""
    out: list[tuple[bytes, list[str]]] = []
    body = bytearray()
    keys: set[str] = set()
    for record in records:
        line = encode(record).encode()
        if body and len(body) + len(line) > MAX_TRACE_MESSAGE:
            out.append((bytes(body), sorted(keys)))
            body, keys = bytearray(), set()
        body += line
        keys.update(k for k in record.index_keys if k)
    if body:
        out.append((bytes(body), sorted(keys)))
    return out


def _region(properties: Mapping[str, str]) -> str:
    return properties.get(message_properties.MSG_REGION) or DEFAULT_REGION


def _message_type(msg: Message) -> MessageType:
    props = msg.properties
    if any(props.get(name) for name in _DELAY_PROPERTIES):
        return MessageType.Delay_Msg
    if props.get(message_properties.TRAN_MSG) == "true":
        return MessageType.Trans_Msg_Half
    return MessageType.Normal_Msg


class Tracer:
    """The trace hooks of one client: records built from its sends and consumptions."""

    def __init__(self, group: str, dispatcher: TraceDispatcher) -> None:
        self.group = group
        self.dispatcher = dispatcher
        self._request_ids: UniqKeyGenerator | None = None

    # ---- producers

    def published(
        self,
        messages: Sequence[Message],
        result: SendResult,
        store_host: str,
        answer: Mapping[str, str],
        began_ms: int,
    ) -> None:
        """Pub records of one answered send (a batch: one per message, sharing the cost);
        ``answer`` holds the broker's MSG_REGION and TRACE_ON."""
        if answer.get(message_properties.TRACE_ON) == "false" or messages[0].topic.startswith(
            self.dispatcher.topic
        ):
            return
        ids, offset_ids = result.msg_id.split(","), result.offset_msg_id.split(",")
        cost = (now_ms() - began_ms) // len(messages)
        region = _region(answer)
        ok = result.status is SendStatus.SEND_OK
        self.dispatcher.append(
            [
                TraceRecord(
                    TraceType.Pub,
                    msg_id,
                    began_ms,
                    region,
                    self.group,
                    topic=msg.topic,
                    tags=msg.tags,
                    keys=msg.properties.get(message_properties.KEYS),
                    store_host=store_host,
                    body_length=len(msg.body),
                    cost_ms=cost,
                    msg_type=_message_type(msg),
                    offset_msg_id=offset_id,
                    success=ok,
                )
                for msg, msg_id, offset_id in zip(messages, ids, offset_ids, strict=False)
            ]
        )

    def transaction_ended(
        self,
        msg: Message,
        msg_id: str,
        store_host: str,
        state: str,
        transaction_id: str | None,
        from_check: bool,
    ) -> None:
        """The EndTransaction record of a commit, rollback or unknown sent to the broker."""
        if msg.topic.startswith(self.dispatcher.topic):
            return
        record = TraceRecord(
            TraceType.EndTransaction,
            msg_id,
            now_ms(),
            _region(msg.properties),
            self.group,
            topic=msg.topic,
            tags=msg.tags,
            keys=msg.properties.get(message_properties.KEYS),
            store_host=store_host,
            msg_type=MessageType.Trans_msg_Commit,
            transaction_id=transaction_id,
            transaction_state=state,
            from_transaction_check=from_check,
        )
        self.dispatcher.append([record])

    # ---- consumers

    def _before(self, msgs: Sequence[MessageExt]) -> list[TraceRecord]:
        if self._request_ids is None:
            self._request_ids = UniqKeyGenerator()
        request_id, began = self._request_ids.next(), now_ms()
        return [
            TraceRecord(
                TraceType.SubBefore,
                m.msg_id,
                began,
                _region(m.properties),
                self.group,
                request_id,
                retry_times=m.reconsume_times,
                keys=m.properties.get(message_properties.KEYS),
            )
            for m in msgs
            if m.properties.get(message_properties.TRACE_ON) != "false"
        ]

    def _after(self, before: list[TraceRecord], count: int, code: ConsumeReturnType) -> None:
        ended = now_ms()
        cost = (ended - before[0].timestamp) // count
        self.dispatcher.append(
            [
                TraceRecord(
                    TraceType.SubAfter,
                    b.msg_id,
                    ended,
                    b.region_id,
                    self.group,
                    b.request_id,
                    keys=b.keys,
                    cost_ms=cost,
                    success=code is ConsumeReturnType.SUCCESS,
                    context_code=int(code),
                )
                for b in before
            ]
        )

    async def consume(
        self, msgs: list[MessageExt], listener: Callable[[list[MessageExt]], Awaitable[T]]
    ) -> T:
        """Call a push consumer's listener between its SubBefore and SubAfter records."""
        before = self._before(msgs)
        if not before:
            return await listener(msgs)
        self.dispatcher.append(before)
        try:
            status = await listener(msgs)
        except Exception:
            self._after(before, len(msgs), ConsumeReturnType.EXCEPTION)
            raise
        if status is None:
            code = ConsumeReturnType.RETURNNULL
        elif getattr(status, "value", status) in _SUCCESS_STATUSES:
            code = ConsumeReturnType.SUCCESS
        else:
            code = ConsumeReturnType.FAILED
        self._after(before, len(msgs), code)
        return status

    def polled(self, msgs: list[MessageExt]) -> None:
        """A lite pull consumer handed messages to the application: consumed, as Java records it."""
        before = self._before(msgs)
        if before:
            self.dispatcher.append(before)
            self._after(before, len(msgs), ConsumeReturnType.SUCCESS)

    async def close(self) -> None:
        await self.dispatcher.close()


def tracer_for(options: ClientOptions, group: str, kind: str, namesrv_addr: str) -> Tracer | None:
    """The tracer of a client built with ``trace=True`` (None without); ``kind`` is PRODUCE or CONSUME.
    Its records go to ``trace_topic`` (default RMQ_SYS_TRACE_TOPIC) through a producer of its own,
    signed and encrypted as the client is."""
    if not options.trace:
        if options.trace_topic is not None:
            raise MQClientError("trace_topic is used only with trace=True")
        return None
    producer = Producer(
        f"{TRACE_GROUP_PREFIX}-{group}-{kind}-{next(_dispatchers)}",
        namesrv_addr,
        send_timeout=SEND_TIMEOUT,
        max_message_size=MAX_TRACE_MESSAGE,
        credentials=options.credentials,
        ssl_context=options.ssl_context,
    )
    return Tracer(group, TraceDispatcher(producer, options.trace_topic or TRACE_TOPIC))
