"""Rebalancing (Java's RebalanceImpl): which queues this consumer owns, kept in step with the group.

The rebalancer runs periodically and whenever woken (NOTIFY_CONSUMER_IDS_CHANGED, start, a failed
lock). It computes the allocation per subscribed topic and tells its owner, through
:class:`RebalanceOwner`, which queues to start and which to give up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Protocol

from broker.client.instance import ClientInstance
from broker.client.message import MQClientError
from broker.client.process_queue import ProcessQueue
from broker.protocol.allocate import AllocateStrategy
from broker.protocol.bodies import MessageModel, MessageQueue
from broker.protocol.group_bodies import LockBatchRequestBody, SubscriptionData
from broker.remoting.errors import RemotingError

log = logging.getLogger(__name__)

REBALANCE_INTERVAL = 20.0
RETRY_LOCK_DELAY = 0.5


class RebalanceOwner(Protocol):
    async def on_assigned(self, mq: MessageQueue) -> ProcessQueue | None:
        """Start consuming ``mq``; None if it cannot be taken now (e.g. its lock is held elsewhere)."""
        ...

    async def on_revoked(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """``mq`` belongs to someone else now (``pq`` is already marked dropped)."""
        ...


class Rebalancer:
    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        model: MessageModel,
        strategy: AllocateStrategy,
        owner: RebalanceOwner,
    ) -> None:
        self.instance = instance
        self.group = group
        self.model = model
        self.strategy = strategy
        self.owner = owner
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.table: dict[MessageQueue, ProcessQueue] = {}
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def run(self, interval: float = REBALANCE_INTERVAL) -> None:
        """Rebalance now, then every ``interval`` seconds or when woken."""
        while True:
            self._wake.clear()
            complete = await self.rebalance()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval if complete else RETRY_LOCK_DELAY):
                    await self._wake.wait()

    async def rebalance(self) -> bool:
        """One pass over all subscriptions; False when some allocated queue could not be taken yet."""
        async with self._lock:
            complete = True
            for topic in list(self.subscriptions):
                try:
                    mine = await self._allocation(topic)
                except (MQClientError, RemotingError) as exc:
                    log.warning("rebalance of %s for %s failed: %s", topic, self.group, exc)
                    continue
                if mine is not None:
                    complete &= await self._apply({topic}, mine)
            for mq in [mq for mq in self.table if mq.topic not in self.subscriptions]:
                await self._revoke(mq)
            return complete

    async def _allocation(self, topic: str) -> set[MessageQueue] | None:
        mqs = await self.instance.routes.subscribe_info(topic)
        if not mqs:
            log.info("no readable queue of %s yet", topic)
            return None
        if self.model is MessageModel.BROADCASTING:
            return set(mqs)
        addr = await self.instance.routes.any_broker_of(topic)
        if addr is None:
            return None
        cids = sorted(await self.instance.api.consumer_ids(await self.instance.greet(addr), self.group))
        if not cids:
            return None
        return set(self.strategy.allocate(self.group, self.instance.client_id, sorted(mqs), cids))

    async def assign(self, mine: set[MessageQueue]) -> bool:
        """Own exactly ``mine`` (fixed assignment instead of rebalancing)."""
        async with self._lock:
            return await self._apply({mq.topic for mq in self.table} | {mq.topic for mq in mine}, mine)

    async def _apply(self, topics: set[str], mine: set[MessageQueue]) -> bool:
        """Give up owned queues of ``topics`` not in ``mine``, take the new ones of ``mine``."""
        for mq in [mq for mq in self.table if mq.topic in topics and mq not in mine]:
            await self._revoke(mq)
        complete = True
        for mq in sorted(mine - self.table.keys()):
            pq = await self.owner.on_assigned(mq)
            if pq is None:
                complete = False
            else:
                self.table[mq] = pq
        return complete

    async def _revoke(self, mq: MessageQueue) -> None:
        pq = self.table.pop(mq)
        pq.dropped = True
        await self.owner.on_revoked(mq, pq)

    # ---- broker-side queue locks (orderly consumption in clustering mode)

    def _lock_body(self, mqs: Iterable[MessageQueue]) -> LockBatchRequestBody:
        return LockBatchRequestBody(
            consumerGroup=self.group, clientId=self.instance.client_id, mqSet=sorted(mqs)
        )

    async def lock(self, mqs: Iterable[MessageQueue]) -> set[MessageQueue]:
        """LOCK_BATCH_MQ per broker; the queues now locked by this client."""
        by_broker: dict[str, list[MessageQueue]] = defaultdict(list)
        for mq in mqs:
            by_broker[mq.brokerName].append(mq)
        locked: set[MessageQueue] = set()
        for group in by_broker.values():
            try:
                addr = await self.instance.broker_addr(group[0])
                locked |= await self.instance.api.lock_batch(addr, self._lock_body(group))
            except (MQClientError, RemotingError) as exc:
                log.warning("locking %s failed: %s", group, exc)
        return locked

    async def unlock(self, mq: MessageQueue) -> None:
        try:
            addr = await self.instance.broker_addr(mq)
            await self.instance.api.unlock_batch(addr, self._lock_body([mq]))
        except (MQClientError, RemotingError) as exc:
            log.warning("unlocking %s failed: %s", mq, exc)

    async def renew_locks(self) -> None:
        """Re-lock every owned queue; queues the broker refuses stop being consumed until locked again."""
        locked = await self.lock(self.table)
        for mq, pq in self.table.items():
            pq.mark_locked(mq in locked)
