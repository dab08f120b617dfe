"""The push consumer: rebalanced queues, long-polling pulls, a bounded pool of listener calls, offsets
committed behind consumption, failed messages sent back for retry (at-least-once)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from enum import Enum
from pathlib import Path
from typing import Any, Unpack

from broker.client.callbacks import as_async
from broker.client.consumer_base import FLOW_CONTROL_DELAY, ConsumeFrom, ConsumerBase
from broker.client.message import Message, MessageExt, MQClientError
from broker.client.offset_store import DEFAULT_OFFSET_DIR
from broker.client.options import ClientKeywords, ClientOptions
from broker.client.process_queue import ProcessQueue
from broker.client.producer import Producer
from broker.client.pull import PullStatus
from broker.client.rebalance import REBALANCE_INTERVAL
from broker.protocol import headers, running_info
from broker.protocol import properties as message_properties
from broker.protocol.allocate import AllocateStrategy
from broker.protocol.bodies import ConsumeType, MessageModel, MessageQueue
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import ResetOffsetBody
from broker.protocol.names import retry_topic
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import RemotingChannel
from broker.remoting.errors import RemotingError

log = logging.getLogger(__name__)

RESEND_LATER_DELAY = 5.0
PERSIST_INTERVAL = 5.0
LOCK_RENEW_INTERVAL = 20.0
SHUTDOWN_GRACE = 5.0
INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"


class ConsumeConcurrentlyStatus(Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(Enum):
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


ConcurrentlyListener = Callable[
    [list[MessageExt]], ConsumeConcurrentlyStatus | Awaitable[ConsumeConcurrentlyStatus]
]
OrderlyListener = Callable[[list[MessageExt]], ConsumeOrderlyStatus | Awaitable[ConsumeOrderlyStatus]]
ConsumeBatch = tuple[MessageQueue, ProcessQueue, list[MessageExt]]


class PushConsumer(ConsumerBase):
    """Consumes the subscribed topics of one group and calls a listener; ``await start()`` to run.

    ``max_reconsume_times`` None means Java's default: 16 for concurrent listeners, unlimited for
    orderly ones.
    """

    consume_type = ConsumeType.CONSUME_PASSIVELY
    pull_delay_on_error = 3.0
    pull_timeout_margin = 15.0

    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        allocate: AllocateStrategy | None = None,
        consume_thread_max: int = 20,
        consume_batch_max_size: int = 1,
        pull_batch_size: int = 32,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100 * 1024 * 1024,
        consume_concurrently_max_span: int = 2000,
        max_reconsume_times: int | None = None,
        suspend_timeout: float = 15.0,
        suspend_current_queue_time: float = 1.0,
        rebalance_interval: float = REBALANCE_INTERVAL,
        persist_interval: float = PERSIST_INTERVAL,
        offset_dir: Path = DEFAULT_OFFSET_DIR,
        options: ClientOptions | None = None,
        **client: Unpack[ClientKeywords],
    ) -> None:
        super().__init__(
            group,
            namesrv_addr,
            message_model=message_model,
            consume_from=consume_from,
            consume_timestamp_ms=consume_timestamp_ms,
            allocate=allocate,
            pull_batch_size=pull_batch_size,
            pull_threshold_for_queue=pull_threshold_for_queue,
            suspend_timeout=suspend_timeout,
            rebalance_interval=rebalance_interval,
            offset_dir=offset_dir,
            options=ClientOptions.of(options, client),
        )
        self.consume_thread_max = consume_thread_max
        self.consume_batch_max_size = consume_batch_max_size
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.max_reconsume_times = max_reconsume_times
        self.suspend_current_queue_time = suspend_current_queue_time
        self.persist_interval = persist_interval
        self._listener: Callable[[list[MessageExt]], Any] | None = None
        self._call: Callable[[list[MessageExt]], Awaitable[Any]] | None = None  # the listener, as started
        self._retry_topic = retry_topic(group)
        self._orderly = False
        self._consumes: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(consume_thread_max)
        # concurrent listeners: batches waiting for one of consume_thread_max workers (None stops one)
        self._ready: asyncio.Queue[ConsumeBatch | None] = asyncio.Queue()
        self._executor: ThreadPoolExecutor | None = None
        self._inner_producer: Producer | None = None

    def register_message_listener_concurrently(self, listener: ConcurrentlyListener) -> None:
        self._listener, self._orderly = listener, False

    def register_message_listener_orderly(self, listener: OrderlyListener) -> None:
        self._listener, self._orderly = listener, True

    @property
    def _locking(self) -> bool:
        """Orderly consumption in clustering mode holds broker-side queue locks."""
        return self._orderly and self.clustering

    # ---- lifecycle

    async def start(self) -> None:
        if self._listener is None:
            raise MQClientError("register a message listener before starting the consumer")
        if not self.rebalancer.subscriptions:
            raise MQClientError("subscribe to a topic before starting the consumer")
        if self.clustering:
            self.subscribe(self._retry_topic)
        self._executor = ThreadPoolExecutor(
            self.consume_thread_max, thread_name_prefix=f"consume-{self.group}"
        )
        self._call = as_async(self._listener, self._executor)
        if not self._orderly:
            for _ in range(self.consume_thread_max):
                self._spawn_consume(self._consume_worker())
        remoting = self.instance.remoting
        remoting.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_ids_changed)
        remoting.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset_offset)
        remoting.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._on_consume_directly)
        await self._connect(list(self.rebalancer.subscriptions))
        self.instance.spawn(self.rebalancer.run(self.rebalance_interval), "rebalance")
        self.instance.every(
            self.persist_interval, self.persist_offsets, "persist offsets", self.persist_interval
        )
        if self._locking:
            self.instance.every(
                LOCK_RENEW_INTERVAL, self.rebalancer.renew_locks, "lock renewal", LOCK_RENEW_INTERVAL
            )

    async def shutdown(self) -> None:
        """Stop pulling, let running listeners finish, commit offsets, unregister, disconnect."""
        await self.instance.stop_tasks()
        for _ in range(self.consume_thread_max):
            self._ready.put_nowait(None)  # workers stop once the batches before these are consumed
        if self._consumes:
            _, late = await asyncio.wait(set(self._consumes), timeout=SHUTDOWN_GRACE)
            for task in late:
                task.cancel()
        await self.persist_offsets()
        if self._locking:
            for mq in list(self.rebalancer.table):
                await self.rebalancer.unlock(mq)
        if self._inner_producer is not None:
            await self._inner_producer.shutdown()
        await self._close()
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    # ---- broker requests

    async def _on_ids_changed(self, cmd: RemotingCommand, channel: RemotingChannel) -> RemotingCommand | None:
        self.rebalancer.wake()
        return None

    async def _on_reset_offset(
        self, cmd: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand | None:
        header = headers.ResetOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        if header.group == self.group and cmd.body:
            table = ResetOffsetBody.from_json(cmd.body).offsetTable
            for mq, offset in table.items():
                self.offsets.update(mq, offset)
                self._restart(mq, offset)
            await self.offsets.persist(table)
        return make_response(cmd)

    async def _on_consume_directly(
        self, cmd: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand | None:
        """An operator hands one stored message (the body) to the listener, as Java's
        consumeMessageDirectly does: nothing is committed or sent back, whatever the listener says."""
        from broker.protocol.consume_directly import (
            ConsumeMessageDirectlyResult,
            ConsumeMessageDirectlyResultRequestHeader,
            ConsumeResult,
        )
        from broker.protocol.message import scan_records

        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(cmd.ext_fields)
        body = cmd.body or b""
        msgs = MessageExt.received(body, scan_records(body), header.brokerName or "")
        if header.consumerGroup != self.group or len(msgs) != 1:
            return make_response(cmd, ResponseCode.SYSTEM_ERROR, "not one message of this consumer's group")
        started = time.monotonic()
        result = ConsumeMessageDirectlyResult(order=self._orderly)
        try:
            status = await self._call_listener(msgs)
        except Exception as exc:  # the operator wants to see what the listener did, failures included
            result.consumeResult, result.remark = (
                ConsumeResult.CR_THROW_EXCEPTION,
                f"{type(exc).__name__}: {exc}",
            )
        else:
            ok = status in (ConsumeConcurrentlyStatus.CONSUME_SUCCESS, ConsumeOrderlyStatus.SUCCESS)
            result.consumeResult = ConsumeResult.CR_SUCCESS if ok else ConsumeResult.CR_LATER
            result.remark = None if status is None else str(getattr(status, "value", status))
        result.spentTimeMills = int((time.monotonic() - started) * 1000)
        return make_response(cmd, body=result.to_json())

    # ---- running info

    def _settings(self) -> dict[str, str]:
        return {
            **super()._settings(),
            "consumeThreadMax": str(self.consume_thread_max),
            "consumeMessageBatchMaxSize": str(self.consume_batch_max_size),
            "pullBatchSize": str(self.pull_batch_size),
            "pullThresholdForQueue": str(self.pull_threshold_for_queue),
            "pullThresholdSizeForQueue": str(self.pull_threshold_size_for_queue // (1024 * 1024)),  # MiB
            "consumeConcurrentlyMaxSpan": str(self.consume_concurrently_max_span),
            "maxReconsumeTimes": str(-1 if self.max_reconsume_times is None else self.max_reconsume_times),
            "suspendCurrentQueueTimeMillis": str(int(self.suspend_current_queue_time * 1000)),
            running_info.PROP_CONSUME_ORDERLY: "true" if self._orderly else "false",
            running_info.PROP_THREADPOOL_CORE_SIZE: str(self.consume_thread_max),
        }

    # ---- rebalance owner hooks

    async def _may_take(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        if self._locking:
            if mq not in await self.rebalancer.lock([mq]):
                return False
            pq.mark_locked(True)
        return True

    async def on_revoked(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        if self._locking:
            with contextlib.suppress(TimeoutError):  # let a running listener call finish first
                async with asyncio.timeout(1.0), pq.consume_lock:
                    pass
        await super().on_revoked(mq, pq)
        if self._locking:
            await self.rebalancer.unlock(mq)

    # ---- pulling

    def _must_wait(self, pq: ProcessQueue) -> bool:
        if pq.count > self.pull_threshold_for_queue or pq.size_bytes > self.pull_threshold_size_for_queue:
            return True
        if self._orderly:
            return self._locking and not pq.locked
        return pq.span > self.consume_concurrently_max_span

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        while not pq.dropped:
            subscription = self.rebalancer.subscriptions.get(mq.topic)
            if subscription is None or self._must_wait(pq):
                await asyncio.sleep(FLOW_CONTROL_DELAY)
                continue
            commit = self.offsets.read_memory(mq) if self.clustering else 0
            result = await self._pull_once(mq, pq, subscription, offset, max(commit, 0))
            if result is None:
                continue
            if result.status is PullStatus.OFFSET_ILLEGAL:
                self.offsets.update(mq, result.next_begin_offset)
                self._restart(mq, result.next_begin_offset)
                await self.offsets.persist([mq])
                return
            offset = result.next_begin_offset
            if result.messages:
                self._dispatch(mq, pq, result.messages)
            elif pq.count == 0:
                self.offsets.update(mq, offset, increase_only=True)  # nothing cached: skip filtered ones

    def _dispatch(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        start_orderly = pq.put(msgs)
        if self._orderly:
            if start_orderly:
                self._spawn_consume(self._consume_orderly(mq, pq))
            return
        size = self.consume_batch_max_size
        put = self._ready.put_nowait
        for i in range(0, len(msgs), size):
            put((mq, pq, msgs[i : i + size]))

    def _spawn_consume(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._consumes.add(task)
        task.add_done_callback(self._consumes.discard)

    # ---- consuming

    def _consumed(self, mq: MessageQueue, started: float, msgs: list[MessageExt], ok: bool) -> None:
        rt_ms = (time.monotonic() - started) * 1000
        self.stats.consumed(mq.topic, rt_ms, len(msgs) if ok else 0, 0 if ok else len(msgs))

    def _restore_topic(self, msg: MessageExt) -> None:
        if msg.topic == self._retry_topic:  # first: other messages need not parse their properties
            original = msg.properties.get(message_properties.RETRY_TOPIC)
            if original:
                msg.topic = original

    async def _call_listener(self, msgs: list[MessageExt]) -> Any:
        assert self._call is not None
        for msg in msgs:
            self._restore_topic(msg)
        async with self._slots:
            if self.tracer is not None:
                return await self.tracer.consume(msgs, self._call)
            return await self._call(msgs)

    async def _consume_worker(self) -> None:
        """One of the consume_thread_max loops that run concurrent listeners: a queue of batches
        costs less than a task per batch."""
        while (batch := await self._ready.get()) is not None:
            try:
                await self._consume_concurrently(*batch)
            except Exception:
                log.exception("consuming %d message(s) of %s failed", len(batch[2]), batch[0])

    async def _consume_concurrently(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        if pq.dropped:
            return
        started = time.monotonic()
        try:
            status = ConsumeConcurrentlyStatus(await self._call_listener(msgs))
        except Exception:
            log.exception(
                "listener failed on %d message(s) of %s; they will be consumed again", len(msgs), mq
            )
            status = ConsumeConcurrentlyStatus.RECONSUME_LATER
        self._consumed(mq, started, msgs, status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        if pq.dropped:
            return
        later: list[MessageExt] = []
        if status is ConsumeConcurrentlyStatus.RECONSUME_LATER:
            if self.clustering:
                for msg in msgs:
                    if not await self._send_back(msg):
                        msg.reconsume_times += 1
                        later.append(msg)
            else:
                log.warning("broadcast consumption of %d message(s) of %s failed; dropped", len(msgs), mq)
        offset = pq.remove([m for m in msgs if m not in later])
        if offset >= 0 and not pq.dropped:
            self.offsets.update(mq, offset, increase_only=True)
        if later:
            self._spawn_consume(self._consume_later(mq, pq, later))

    async def _consume_later(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        await asyncio.sleep(RESEND_LATER_DELAY)
        await self._consume_concurrently(mq, pq, msgs)

    async def _consume_orderly(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        async with pq.consume_lock:
            while not pq.dropped:
                if self._locking and (not pq.locked or pq.lock_expired):
                    pq.mark_locked(mq in await self.rebalancer.lock([mq]))
                    if not pq.locked:
                        await asyncio.sleep(self.suspend_current_queue_time)
                    continue
                msgs = pq.take(self.consume_batch_max_size)
                if not msgs:
                    return
                started = time.monotonic()
                try:
                    status = ConsumeOrderlyStatus(await self._call_listener(msgs))
                except Exception:
                    log.exception("orderly listener failed on %s; suspending the queue", mq)
                    status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                self._consumed(mq, started, msgs, status is ConsumeOrderlyStatus.SUCCESS)
                if pq.dropped:
                    return
                if status is ConsumeOrderlyStatus.SUCCESS or await self._give_up(msgs):
                    self.offsets.update(mq, pq.commit())
                else:
                    for msg in msgs:
                        msg.reconsume_times += 1
                    pq.give_back(msgs)
                    await asyncio.sleep(self.suspend_current_queue_time)

    async def _give_up(self, msgs: list[MessageExt]) -> bool:
        """Orderly: messages over ``max_reconsume_times`` go to the dead-letter queue via the retry topic."""
        limit = self.max_reconsume_times
        if limit is None or all(m.reconsume_times < limit for m in msgs):
            return False
        for msg in msgs:
            await self._resend(msg)
        return True

    # ---- retry

    def _max_reconsume(self) -> int:
        return 16 if self.max_reconsume_times is None else self.max_reconsume_times

    async def _send_back(self, msg: MessageExt) -> bool:
        """CONSUMER_SEND_MSG_BACK (the broker picks delay 3 + reconsumeTimes); falls back to resending to
        the retry topic ourselves. False if both failed: the message is then consumed again locally."""
        header = headers.ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset,
            group=self.group,
            delayLevel=0,
            originMsgId=msg.msg_id,
            originTopic=msg.topic,
            unitMode=False,
            maxReconsumeTimes=self._max_reconsume(),
            bname=msg.broker_name,
        )
        try:
            addr = await self.instance.broker_addr(MessageQueue(msg.topic, msg.broker_name, msg.queue_id))
            await self.instance.api.send_back(addr, header)
            return True
        except (MQClientError, RemotingError) as exc:
            log.warning("send back of %s failed (%s); resending it to the retry topic", msg.msg_id, exc)
        try:
            await self._resend(msg)
            return True
        except (MQClientError, RemotingError) as exc:
            log.warning("resending %s to the retry topic failed: %s", msg.msg_id, exc)
            return False

    async def _resend(self, msg: MessageExt) -> None:
        """Put a copy on %RETRY%group with the retry bookkeeping properties (the broker routes it to the
        DLQ once RECONSUME_TIME exceeds MAX_RECONSUME_TIMES)."""
        copy = Message(self._retry_topic, msg.body, properties=msg.properties, flag=msg.flag)
        copy.properties.setdefault(message_properties.ORIGIN_MESSAGE_ID, msg.msg_id)
        copy.properties[message_properties.RETRY_TOPIC] = msg.topic
        copy.properties[message_properties.RECONSUME_TIME] = str(msg.reconsume_times + 1)
        copy.properties[message_properties.MAX_RECONSUME_TIMES] = str(self._max_reconsume())
        copy.delay_time_level = 3 + msg.reconsume_times
        if self._inner_producer is None:
            self._inner_producer = Producer(INNER_PRODUCER_GROUP, self.namesrv_addr)
            await self._inner_producer.start()
        await self._inner_producer.send(copy)
