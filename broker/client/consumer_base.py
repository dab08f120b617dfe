"""What push and lite pull consumers share: subscriptions, heartbeat, rebalancing, offsets, and one pull
task per owned queue."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Self

from broker.client.consume_stats import ConsumeStatsRecorder
from broker.client.instance import ClientInstance, parse_namesrv_addr
from broker.client.message import MQClientError
from broker.client.offset_store import (
    READ_FAILED,
    LocalFileOffsetStore,
    OffsetStore,
    RemoteBrokerOffsetStore,
)
from broker.client.process_queue import ProcessQueue, now_ms
from broker.client.pull import PullRequest, PullResult, PullStatus, build_subscription, pull
from broker.client.rebalance import Rebalancer
from broker.client.trace_dispatch import tracer_for
from broker.protocol import running_info as running_info_body
from broker.protocol.allocate import AllocateAveragely, AllocateStrategy
from broker.protocol.bodies import ConsumeFromWhere, ConsumeType, MessageModel, MessageQueue
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData, SubscriptionData
from broker.protocol.names import RETRY_PREFIX
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import RemotingChannel
from broker.remoting.errors import RemotingError

if TYPE_CHECKING:
    from broker.client.options import ClientOptions

log = logging.getLogger(__name__)

DEFAULT_TIMESTAMP_LOOKBACK = 1800.0  # Java consumes from 30 minutes ago by default with TIMESTAMP
FLOW_CONTROL_DELAY = 0.05  # how long a pull task waits while its queue's cache is full


class ConsumeFrom(Enum):
    """Where a group starts on a queue it has no committed offset for."""

    LAST_OFFSET = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    FIRST_OFFSET = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    TIMESTAMP = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP


class ConsumerBase(ABC):
    consume_type: ConsumeType
    pull_delay_on_error: float  # seconds a pull task rests after a failed pull
    pull_timeout_margin: float  # a suspended pull's RPC timeout: the suspend time plus this

    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        message_model: MessageModel,
        consume_from: ConsumeFrom,
        consume_timestamp_ms: int | None,
        allocate: AllocateStrategy | None,
        pull_batch_size: int,
        pull_threshold_for_queue: int,
        suspend_timeout: float,
        rebalance_interval: float,
        offset_dir: Path,
        options: ClientOptions,
    ) -> None:
        self.group = group
        self.namesrv_addr = namesrv_addr
        self.message_model = message_model
        self.consume_from = consume_from
        self.consume_timestamp_ms = consume_timestamp_ms
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.suspend_timeout = suspend_timeout
        self.rebalance_interval = rebalance_interval
        self.options = options
        self.instance = ClientInstance(namesrv_addr, self._heartbeat_data, options)
        self.rebalancer = Rebalancer(
            self.instance, group, message_model, allocate or AllocateAveragely(), self
        )
        self.offsets: OffsetStore = (
            LocalFileOffsetStore(self.instance.client_id, group, offset_dir)
            if message_model is MessageModel.BROADCASTING
            else RemoteBrokerOffsetStore(self.instance.api, group, self.instance.offset_addr)
        )
        self._pulls: dict[MessageQueue, asyncio.Task[None]] = {}
        self._running = False
        self._started_ms = 0
        self.stats = ConsumeStatsRecorder()
        self.tracer = tracer_for(options, group, "CONSUME", namesrv_addr)

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    @property
    def clustering(self) -> bool:
        return self.message_model is MessageModel.CLUSTERING

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Subscribe to ``topic`` messages whose tag matches ``"tagA || tagB"`` (or ``"*"``)."""
        self.rebalancer.subscriptions[topic] = build_subscription(topic, expression)
        self._subscriptions_changed()

    def unsubscribe(self, topic: str) -> None:
        self.rebalancer.subscriptions.pop(topic, None)
        self._subscriptions_changed()

    def _subscriptions_changed(self) -> None:
        """Once running, brokers hear of the change at once (Java heartbeats too), then we rebalance."""
        if not self._running:
            return

        async def announce() -> None:
            await self.instance.send_heartbeat()
            self.rebalancer.wake()

        self.instance.spawn(announce(), "announce subscriptions")

    def _heartbeat_data(self) -> HeartbeatData:
        consumer = ConsumerData(
            groupName=self.group,
            consumeType=self.consume_type,
            messageModel=self.message_model,
            consumeFromWhere=self.consume_from.value,
            subscriptionDataSet=list(self.rebalancer.subscriptions.values()),
        )
        return HeartbeatData(clientID=self.client_id, consumerDataSet=[consumer])

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def shutdown(self) -> None: ...

    async def _close(self) -> None:
        """The end of every shutdown: close the tracer, unregister from the brokers, disconnect."""
        if self.tracer is not None:
            await self.tracer.close()
        await self.instance.close(consumer_group=self.group)

    async def _connect(self, topics: list[str]) -> None:
        """Start the client, learn the routes of ``topics`` and introduce ourselves to their brokers."""
        self._started_ms = now_ms()
        self.instance.remoting.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_running_info)
        await self.instance.start()
        for topic in topics:
            try:
                await self.instance.routes.refresh(topic)
            except MQClientError as exc:
                log.warning("no route for %s yet: %s", topic, exc)
        await self.instance.send_heartbeat()
        self._running = True

    # ---- running info (GET_CONSUMER_RUNNING_INFO, asked by admin tools through a broker)

    def _settings(self) -> dict[str, str]:
        """The consumer's settings under the Java consumer's property names."""
        settings = {
            "consumerGroup": self.group,
            "messageModel": self.message_model.name,
            "consumeFromWhere": self.consume_from.value.name,
            "allocateMessageQueueStrategy": type(self.rebalancer.strategy).__name__,
            "namesrvAddr": self.namesrv_addr,
            "clientId": self.client_id,
        }
        if self.consume_timestamp_ms is not None:
            settings["consumeTimestamp"] = str(self.consume_timestamp_ms)
        return settings

    def running_info(self) -> running_info_body.ConsumerRunningInfo:
        """This consumer as GET_CONSUMER_RUNNING_INFO reports it: settings, subscriptions, the state of
        every owned queue and the rates of every subscribed topic."""
        subscriptions = list(self.rebalancer.subscriptions.values())
        return running_info_body.ConsumerRunningInfo(
            properties=running_properties(
                self._settings(), self.consume_type, self._started_ms, self.namesrv_addr
            ),
            subscriptionSet=subscriptions,
            mqTable={mq: pq.info(self.offsets.read_memory(mq)) for mq, pq in self.rebalancer.table.items()},
            statusTable={s.topic: self.stats.status(s.topic) for s in subscriptions if s.topic},
        )

    async def _on_running_info(self, cmd: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        return running_info_answer(cmd, self.group, self.running_info)

    async def persist_offsets(self) -> None:
        await self.offsets.persist(list(self.rebalancer.table))

    # ---- rebalance owner

    async def _may_take(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Hook before a queue is taken (orderly consumers lock it here)."""
        return True

    async def on_assigned(self, mq: MessageQueue) -> ProcessQueue | None:
        pq = ProcessQueue()
        if not await self._may_take(mq, pq):
            return None
        self.offsets.remove(mq)
        offset = await self._initial_offset(mq)
        if offset < 0:
            return None
        self._start_pull(mq, pq, offset)
        return pq

    async def on_revoked(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        task = self._pulls.pop(mq, None)
        if task is not None:
            task.cancel()
        await self.offsets.persist([mq])
        self.offsets.remove(mq)

    async def _initial_offset(self, mq: MessageQueue) -> int:
        """Java's computePullFromWhere: the committed offset, else where ``consume_from`` says."""
        committed = await self.offsets.read_store(mq)
        if committed >= 0 or committed == READ_FAILED:
            return committed
        retry = mq.topic.startswith(RETRY_PREFIX)
        try:
            if self.consume_from is ConsumeFrom.FIRST_OFFSET or (
                retry and self.consume_from is ConsumeFrom.LAST_OFFSET
            ):
                return 0
            addr = await self.instance.broker_addr(mq)
            if self.consume_from is ConsumeFrom.LAST_OFFSET or retry:
                return await self.instance.api.max_offset(addr, mq)
            since = self.consume_timestamp_ms or int((time.time() - DEFAULT_TIMESTAMP_LOOKBACK) * 1000)
            return await self.instance.api.search_offset(addr, mq, since)
        except (MQClientError, RemotingError) as exc:
            log.warning("cannot find where to start on %s: %s", mq, exc)
            return READ_FAILED

    # ---- pull tasks

    @staticmethod
    def _pull_started(pq: ProcessQueue) -> float:
        """Book a pull as it is sent (the queue's last pull time); returns its start, for its RT."""
        pq.last_pull_ms = now_ms()
        return time.monotonic()

    def _pulled(self, mq: MessageQueue, started: float, messages: int) -> None:
        """Book an answered pull in the topic's pull rates."""
        self.stats.pulled(mq.topic, (time.monotonic() - started) * 1000, messages)

    def _start_pull(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        self._pulls[mq] = self.instance.spawn(self._pull_loop(mq, pq, offset), f"pull {mq}")

    def _restart(self, mq: MessageQueue, offset: int) -> ProcessQueue | None:
        """Continue an owned queue from ``offset`` with an empty cache (seek, reset, offset moved)."""
        old = self.rebalancer.table.get(mq)
        if old is None:
            return None
        old.dropped = True
        pq = ProcessQueue()
        pq.mark_locked(old.locked)
        pq.last_lock_time = old.last_lock_time
        self.rebalancer.table[mq] = pq
        task = self._pulls.get(mq)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._start_pull(mq, pq, offset)
        return pq

    async def _pull_once(
        self, mq: MessageQueue, pq: ProcessQueue, subscription: SubscriptionData, offset: int, commit: int
    ) -> PullResult | None:
        """One long-polling pull of an owned queue from ``offset``, booked in the stats and the broker
        choice. None when it failed (after resting) or the queue was dropped meanwhile."""
        req = PullRequest(
            self.group,
            mq,
            subscription,
            offset,
            self.pull_batch_size,
            commit,
            int(self.suspend_timeout * 1000),
            self.suspend_timeout + self.pull_timeout_margin,
        )
        try:
            started = self._pull_started(pq)
            result = await pull(self.instance.api, await self.instance.pull_addr(mq), req)
        except (MQClientError, RemotingError) as exc:
            log.warning("pull from %s failed: %s", mq, exc)
            if isinstance(exc, RemotingError):
                self.instance.pull_failed(mq)
            await asyncio.sleep(self.pull_delay_on_error)
            return None
        self._pulled(mq, started, len(result.messages))
        self.instance.pull_suggested(mq, result.suggest_broker_id)
        if pq.dropped:
            return None
        if result.status is PullStatus.OFFSET_ILLEGAL:
            log.warning("offset %d of %s is illegal, continuing at %d", offset, mq, result.next_begin_offset)
        return result

    @abstractmethod
    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        """Pull ``mq`` from ``offset`` until ``pq`` is dropped (each loop calls :meth:`_pull_once`)."""


def running_properties(
    settings: dict[str, str], consume_type: ConsumeType, started_ms: int, namesrv_addr: str
) -> dict[str, str]:
    """A consumer's running-info properties: its ``settings`` and what every consumer reports."""
    return {
        **settings,
        running_info_body.PROP_CONSUME_TYPE: consume_type.name,
        running_info_body.PROP_CONSUMER_START_TIMESTAMP: str(started_ms),
        running_info_body.PROP_NAMESERVER_ADDR: "".join(f"{a};" for a in parse_namesrv_addr(namesrv_addr)),
        running_info_body.PROP_CLIENT_VERSION: running_info_body.CLIENT_VERSION_NAME,
    }


def running_info_answer(
    cmd: RemotingCommand, group: str, running_info: Callable[[], running_info_body.ConsumerRunningInfo]
) -> RemotingCommand:
    """The answer to a GET_CONSUMER_RUNNING_INFO for ``group``'s consumer (with its threads when asked)."""
    header = running_info_body.GetConsumerRunningInfoRequestHeader.from_ext_fields(cmd.ext_fields)
    if header.consumerGroup != group:
        return make_response(
            cmd,
            ResponseCode.SYSTEM_ERROR,
            f"The Consumer Group <{header.consumerGroup}> not exist in this consumer",
        )
    info = running_info()
    if header.jstackEnable:
        info.jstack = thread_dump()
    return make_response(cmd, body=info.to_json())


def thread_dump() -> str:
    """What ``jstackEnable`` asks for, the Python way: every thread's stack, then every asyncio task's."""
    names = {t.ident: t.name for t in threading.enumerate()}
    out = io.StringIO()
    for ident, frame in sys._current_frames().items():
        out.write(f"Thread {names.get(ident, ident)} (most recent call last):\n")
        out.writelines(traceback.format_stack(frame))
    for task in asyncio.all_tasks():
        out.write(f"Task {task.get_name()}:\n")
        for frame in task.get_stack():  # a suspended coroutine's frame may have no line number
            out.write(f"  {frame.f_code.co_filename}:{frame.f_lineno or '?'} in {frame.f_code.co_name}\n")
    return out.getvalue()
