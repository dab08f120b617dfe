"""Delay levels (RocketMQ's ScheduleMessageService).

A message with ``DELAY`` = level is parked in SCHEDULE_TOPIC_XXXX queue level-1, whose tagsCode is
its delivery time. One level has one delay, so its queue is in delivery order and a cursor per
level (``config/delayOffset.json``) is all the state: when the unit at the cursor is due, the
message is re-put to REAL_TOPIC/REAL_QID and the cursor moves on.

Restart semantics: the cursors are saved every ``flushDelayOffsetInterval`` and at shutdown (after
the delivery loop has stopped, so a graceful restart resumes exactly). After a crash the saved
cursors may be behind what was delivered; units that were due before the crash are checked
against the CommitLog first (:func:`broker.server.delivery.find_reput`), so nothing is delivered
twice and, because a cursor never passes an undelivered unit, nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Protocol

from broker.protocol import properties as P
from broker.protocol.message import TRANSACTION_COMMIT_TYPE, TRANSACTION_MASK, TRANSACTION_NOT_TYPE
from broker.server.delivery import (
    IDLE_POLL_S,
    RETRY_AFTER_FAILURE_S,
    DeliveryParts,
    Due,
    ProgressFile,
    deliver,
    find_reput,
    real_target,
    recovery_horizon,
    reput,
)
from broker.server.topic_config import TRANS_HALF_TOPIC
from broker.store.config import StoreConfig
from broker.store.config_files import data_version, decode_delay_file, encode_delay_file
from broker.store.dispatch import SCHEDULE_TOPIC
from broker.store.message_store import PutMessage

log = logging.getLogger(__name__)

# what a delivered message no longer carries (ScheduleMessageService.messageTimeup)
DROPPED = frozenset({P.DELAY, P.TIMER_DELIVER_MS, P.TIMER_DELAY_SEC, P.TIMER_DELAY_MS, P.TIMER_OUT_MS})
BATCH = 64


def delay_level(props: dict[str, str]) -> int:
    text = props.get(P.DELAY)
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        return 0


def park_delay_level(msg: PutMessage, levels: int) -> None:
    """A positive DELAY parks ``msg`` in SCHEDULE_TOPIC_XXXX queue level-1 (level clamped)."""
    if msg.sys_flag & TRANSACTION_MASK not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
        return
    level = delay_level(msg.properties)
    if level <= 0:
        return
    level = min(level, levels)
    msg.properties[P.DELAY] = str(level)
    msg.properties[P.REAL_TOPIC] = msg.topic
    msg.properties[P.REAL_QID] = str(msg.queue_id)
    msg.topic = SCHEDULE_TOPIC
    msg.queue_id = level - 1


def _now_ms() -> int:
    return int(time.time() * 1000)


class ScheduleParts(DeliveryParts, Protocol):
    @property
    def store_config(self) -> StoreConfig: ...


class ScheduleService:
    def __init__(self, broker: ScheduleParts) -> None:
        self.broker = broker
        self.levels_ms = broker.store_config.delay_levels_ms
        self.file = ProgressFile(broker.store_config.store_path / "config" / "delayOffset.json")
        self.offsets: dict[int, int] = {level: 0 for level in range(1, len(self.levels_ms) + 1)}
        self.version = 0
        self._next_due: dict[int, int] = {}
        self._claimed: set[int] = set()
        self._horizon = 0
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # == life cycle ============================================================================
    async def start(self) -> None:
        await self.broker.read(self._load)
        self._horizon = recovery_horizon(self.broker)
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Finish the batch in flight, then save the cursors (safe when never started)."""
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None
            await self.persist()

    def _load(self) -> None:
        data: Any = self.file.load()
        saved = decode_delay_file(data)
        if isinstance(data, dict) and isinstance(data.get("dataVersion"), dict):
            self.version = int(data["dataVersion"].get("counter", 0) or 0)
        store = self.broker.store
        for level in self.offsets:
            offset = saved.get(level, 0)
            lo, hi = store.min_offset(SCHEDULE_TOPIC, level - 1), store.max_offset(SCHEDULE_TOPIC, level - 1)
            if not lo <= offset <= hi:
                log.warning("delay level %d: offset %d outside [%d, %d], corrected", level, offset, lo, hi)
            self.offsets[level] = min(max(offset, lo), hi)

    async def persist(self) -> None:
        """Save the cursors (the snapshot is taken here, on the event loop)."""
        self.version += 1
        text = encode_delay_file(dict(self.offsets), data_version(self.version))
        await self.broker.read(self.file.save, self.version, text)

    def running_stats(self) -> dict[str, str]:
        """``scheduleMessageOffset_<level>`` = "cursor,maxOffset" for GET_BROKER_RUNTIME_INFO."""
        store = self.broker.store
        return {
            f"scheduleMessageOffset_{level}": f"{offset},{store.max_offset(SCHEDULE_TOPIC, level - 1)}"
            for level, offset in self.offsets.items()
        }

    # == delivery ==============================================================================
    async def _run(self) -> None:
        while not self._stopping.is_set():
            wait = IDLE_POLL_S
            for level in self.offsets:
                try:
                    wait = min(wait, await self._level_once(level))
                except Exception:  # one bad round must not stop delivery for good
                    log.exception("delay level %d: delivery failed", level)
                    self._next_due[level] = _now_ms() + int(RETRY_AFTER_FAILURE_S * 1000)
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), wait)

    async def _level_once(self, level: int) -> float:
        """Deliver what is due on ``level``; seconds until it needs another look."""
        now = _now_ms()
        offset = self.offsets[level]
        if self._next_due.get(level, 0) > now:
            return (self._next_due[level] - now) / 1000
        if offset >= self.broker.store.max_offset(SCHEDULE_TOPIC, level - 1):
            return IDLE_POLL_S
        due, after, next_due = await self.broker.read(self._collect, level, offset, now)
        done = await deliver(self.broker, due)
        if done < len(due):
            self.offsets[level] = due[done].queue_offset
            self._next_due[level] = _now_ms() + int(RETRY_AFTER_FAILURE_S * 1000)
            return RETRY_AFTER_FAILURE_S
        self.offsets[level] = after
        if next_due is not None:
            self._next_due[level] = next_due
            return 0.0 if due else (next_due - now) / 1000
        return 0.0 if due else IDLE_POLL_S

    def _collect(self, level: int, offset: int, now: int) -> tuple[list[Due], int, int | None]:
        """Reader thread: the due units from ``offset``, the offset after them, and the delivery
        time of the first unit not yet due (None when the batch or the queue ended first)."""
        store = self.broker.store
        cq = store.consume_queue(SCHEDULE_TOPIC, level - 1)
        if cq is None:
            return [], offset, None
        delay = self.levels_ms[level - 1]
        due: list[Due] = []
        after = max(offset, cq.min_offset)
        for q_off, phys, _size, deliver_at in cq.iter_units(after, BATCH):
            if deliver_at > now + delay:  # the clock went back: RocketMQ's correctDeliverTimestamp
                deliver_at = now
            if deliver_at > now:
                return due, q_off, deliver_at
            due.append(Due(q_off, self._reput_of(phys, deliver_at)))
            after = q_off + 1
        return due, after, None

    def _reput_of(self, phys: int, deliver_at: int) -> PutMessage | None:
        store = self.broker.store
        rec = store.message_at(phys)
        target = real_target(rec) if rec is not None else None
        if rec is None or target is None or target[0] == TRANS_HALF_TOPIC:
            log.error("delayed message at CommitLog offset %d is gone or has no real topic; skipped", phys)
            return None
        props = {k: v for k, v in rec.properties.items() if k not in DROPPED}
        msg = reput(rec, target[0], target[1], props)
        if deliver_at <= self._horizon and find_reput(store, rec, msg, self._claimed):
            log.info("delayed message %s was delivered before the crash; not again", rec.uniq_key)
            return None
        return msg
