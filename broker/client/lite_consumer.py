"""The lite pull consumer: background pulls fill a buffer, the application polls it and commits when it
chooses (or every few seconds with auto commit). Queues are assigned explicitly or by rebalancing."""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Unpack

from broker.client.consumer_base import FLOW_CONTROL_DELAY, ConsumeFrom, ConsumerBase
from broker.client.message import MessageExt, MQClientError
from broker.client.offset_store import DEFAULT_OFFSET_DIR
from broker.client.options import ClientKeywords, ClientOptions
from broker.client.process_queue import ProcessQueue
from broker.client.pull import build_subscription
from broker.client.rebalance import REBALANCE_INTERVAL
from broker.protocol.allocate import AllocateStrategy
from broker.protocol.bodies import ConsumeType, MessageModel, MessageQueue

log = logging.getLogger(__name__)


class LitePullConsumer(ConsumerBase):
    """``subscribe()`` (group rebalancing) or ``assign()`` (fixed queues), then ``poll()``."""

    consume_type = ConsumeType.CONSUME_ACTIVELY
    pull_delay_on_error = 1.0
    pull_timeout_margin = 10.0

    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        allocate: AllocateStrategy | None = None,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        pull_batch_size: int = 10,
        pull_threshold_for_queue: int = 1000,
        suspend_timeout: float = 20.0,
        rebalance_interval: float = REBALANCE_INTERVAL,
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
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self._assigned: list[MessageQueue] | None = None
        self._ready: collections.deque[tuple[MessageQueue, ProcessQueue, list[MessageExt]]] = (
            collections.deque()
        )
        self._arrived = asyncio.Event()
        self._consumed: dict[MessageQueue, int] = {}

    # ---- lifecycle

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues (no rebalancing); call before or after ``start()``."""
        if self.rebalancer.subscriptions:
            raise MQClientError("assign() and subscribe() cannot be mixed")
        self._assigned = list(queues)
        if self._running:
            self.instance.spawn(self._apply_assignment(), "assign")

    def subscribe(self, topic: str, expression: str = "*") -> None:
        if self._assigned is not None:
            raise MQClientError("assign() and subscribe() cannot be mixed")
        super().subscribe(topic, expression)

    async def start(self) -> None:
        topics = sorted({mq.topic for mq in self._assigned or []} | set(self.rebalancer.subscriptions))
        await self._connect(topics)
        if self._assigned is not None:
            await self._apply_assignment()
        else:
            self.instance.spawn(self.rebalancer.run(self.rebalance_interval), "rebalance")
        if self.auto_commit:
            self.instance.every(
                self.auto_commit_interval, self.commit, "auto commit", self.auto_commit_interval
            )

    async def shutdown(self) -> None:
        await self.instance.stop_tasks()
        if self.auto_commit:
            await self.commit()
        await self._close()

    def _settings(self) -> dict[str, str]:
        return {
            **super()._settings(),
            "autoCommit": "true" if self.auto_commit else "false",
            "autoCommitIntervalMillis": str(int(self.auto_commit_interval * 1000)),
            "pullBatchSize": str(self.pull_batch_size),
            "pullThresholdForQueue": str(self.pull_threshold_for_queue),
        }

    async def _apply_assignment(self) -> None:
        if not await self.rebalancer.assign(set(self._assigned or [])):
            log.warning("some assigned queues of %s could not be started", self.group)

    async def on_revoked(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        self._consumed.pop(mq, None)
        await super().on_revoked(mq, pq)

    # ---- queries

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic``."""
        await self.instance.routes.refresh(topic)
        return await self.instance.routes.subscribe_info(topic)

    def assignment(self) -> list[MessageQueue]:
        return list(self.rebalancer.table)

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self.instance.api.search_offset(await self.instance.broker_addr(mq), mq, timestamp_ms)

    async def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq`` on the broker (-1 if none)."""
        return await self.offsets.read_store(mq)

    # ---- consuming

    async def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next pulled batch of one queue, or ``[]`` after ``timeout`` seconds without messages."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            while self._ready:
                mq, pq, msgs = self._ready.popleft()
                if pq.dropped or self.rebalancer.table.get(mq) is not pq:
                    continue
                offset = pq.remove(msgs)
                if offset >= 0:
                    self._consumed[mq] = offset
                if self.tracer is not None:
                    self.tracer.polled(msgs)
                return msgs
            self._arrived.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            try:
                async with asyncio.timeout(remaining):
                    await self._arrived.wait()
            except TimeoutError:
                return []

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue ``mq`` at ``offset``; buffered messages of it are discarded."""
        if self._restart(mq, offset) is None:
            raise MQClientError(f"{mq} is not assigned to this consumer")
        self._consumed[mq] = offset

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.instance.api.min_offset(await self.instance.broker_addr(mq), mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.instance.api.max_offset(await self.instance.broker_addr(mq), mq))

    async def commit(self) -> None:
        """Commit the offsets of everything polled so far."""
        await self.commit_sync(dict(self._consumed))

    async def commit_sync(self, offsets: dict[MessageQueue, int], persist: bool = True) -> None:
        """Commit explicit offsets (next message to consume per queue)."""
        for mq, offset in offsets.items():
            self.offsets.update(mq, offset)
        if persist:
            await self.offsets.persist(offsets)

    # ---- pulling

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        while not pq.dropped:
            if pq.count > self.pull_threshold_for_queue:
                await asyncio.sleep(FLOW_CONTROL_DELAY)
                continue
            subscription = self.rebalancer.subscriptions.get(mq.topic) or build_subscription(mq.topic, "*")
            result = await self._pull_once(mq, pq, subscription, offset, 0)
            if result is None:
                continue
            offset = result.next_begin_offset
            if result.messages:
                pq.put(result.messages)
                self._ready.append((mq, pq, result.messages))
                self._arrived.set()
