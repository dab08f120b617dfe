"""POP consumption: the broker keeps each consumer group's progress and in-flight messages, so
clients (gRPC SimpleConsumer/PushConsumer, remoting POP_MESSAGE) need no rebalance.

Per (group, topic, queue) the state is the next offset never handed out and the in-flight table:
queue offset -> (pop time, visible-again time, delivery attempts). A pop hands out expired in-flight
messages again (attempt + 1) before new ones; an ack removes the entry; changing the invisible time
moves its visible-again time and its pop time (the receipt handle's generation, so an older handle
no longer matches). A message that would be delivered more often than the group's
``retryMaxTimes + 1`` goes to ``%DLQ%<group>`` instead.

Where RocketMQ re-puts unacked messages into a retry topic and keeps checkpoints and acks as records in
a revive topic, this broker redelivers in place from the original queue and keeps the state in
``config/popState.json``: written atomically (with ``.bak``) at most every second while it changes
and at shutdown. A crash loses at most that last second, which means redelivery (at least once), never
a lost message, because offsets and in-flight entries are saved in the same snapshot. The group's
consumer offset (what consume stats and lag show) is the lowest unacked offset of each queue.

FIFO (the topic's ``message.type`` is FIFO or the group is ``consumeMessageOrderly``): a queue with
any in-flight message that is still invisible hands out nothing, so a message group's next message
comes only after the previous one is acked (or its invisible time ran out: then it comes again first).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, TypeVar

from broker.protocol import properties as P
from broker.protocol.message import (
    BORNHOST_V6_FLAG,
    POS_BORN_HOST,
    POS_SYSFLAG,
    STOREHOST_V6_FLAG,
    RecordError,
    decode_record,
)
from broker.protocol.names import dlq_topic
from broker.protocol.pop import Receipt
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.dlq import ensure_dlq, mark_dead_letter
from broker.server.long_polling import PullHoldService
from broker.server.message_type import TopicMessageType, topic_message_type
from broker.server.store_access import StoreAccess
from broker.server.subscription_group import SubscriptionGroupManager
from broker.server.topic_config import TopicConfigManager
from broker.store.config import StoreConfig
from broker.store.config_files import ConfigFile
from broker.store.message_store import GetResult, GetStatus, MessageStore, PutMessage

log = logging.getLogger(__name__)
T = TypeVar("T")

PERSIST_INTERVAL = 1.0
_I32 = struct.Struct(">i")
Key = tuple[str, str, int]  # group, topic, queue id


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class InFlight:
    offset: int
    pop_time: int
    visible_at: int
    attempts: int  # deliveries so far; 1 after the first


@dataclass(slots=True)
class QueueState:
    next_offset: int
    inflight: dict[int, InFlight] = field(default_factory=dict)  # in offset order: see add()

    def add(self, entry: InFlight) -> None:
        """Keeps ``inflight`` in offset order, so the low watermark (computed on every ack) is its
        first key. New entries come from ``next_offset`` on, so they only need a sort after the
        queue's offsets went back (a truncated queue) or when loading."""
        last = next(reversed(self.inflight), -1)
        self.inflight[entry.offset] = entry
        if entry.offset < last:
            self.inflight = dict(sorted(self.inflight.items()))

    def low_watermark(self) -> int:
        return next(iter(self.inflight), self.next_offset)


@dataclass(slots=True)
class Popped:
    """One message handed out: the stored record and what its receipt handle needs."""

    record: bytes
    topic: str
    queue_id: int
    offset: int
    pop_time: int
    invisible_ms: int
    attempts: int
    start_offset: int  # the first offset this pop read in the queue (RocketMQ's ckQueueOffset)

    def receipt(self, broker_name: str) -> Receipt:
        return Receipt(
            self.start_offset,
            self.pop_time,
            self.invisible_ms,
            0,
            "0",
            broker_name,
            self.queue_id,
            self.offset,
        )


class AckStatus(Enum):
    OK = "OK"
    EXPIRED = "EXPIRED"  # the handle's delivery was superseded (redelivered or invisible time changed)


class InitMode(Enum):
    MIN = 0  # ConsumeInitMode.MIN: from the first message still stored
    MAX = 1  # ConsumeInitMode.MAX: from the end, unless the queue never lost a message (then from 0)


def with_reconsume_times(record: bytes, times: int) -> bytes:
    """``record`` with RECONSUMETIMES replaced (the stored bytes carry 0 for in-place redelivery)."""
    sys_flag = _I32.unpack_from(record, POS_SYSFLAG)[0]
    pos = POS_BORN_HOST + (20 if sys_flag & BORNHOST_V6_FLAG else 8) + 8
    pos += 20 if sys_flag & STOREHOST_V6_FLAG else 8
    out = bytearray(record)
    _I32.pack_into(out, pos, times)
    return bytes(out)


class ConsumeParts(StoreAccess, Protocol):
    """The parts of the broker every way of consuming uses (pulls through the messaging core, POP here)."""

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def holds(self) -> PullHoldService: ...

    async def read_queue(
        self, topic: str, queue_id: int, offset: int, fn: Callable[..., T], *args: Any
    ) -> T: ...


class PopParts(ConsumeParts, Protocol):
    """The parts of the broker POP consumption uses."""

    @property
    def store_config(self) -> StoreConfig: ...


class PopService:
    def __init__(self, broker: PopParts) -> None:
        self.broker = broker
        self.file = ConfigFile(broker.store_config.store_path / "config" / "popState.json")
        self.queues: dict[Key, QueueState] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._pulses: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._dirty = False
        self.stopping = False  # set at shutdown: waiting receives answer at once

    # == persistence ===========================================================================
    def load(self) -> None:
        try:
            data = self.file.load()
        except Exception as exc:  # a corrupt file must not stop the broker: offsets still exist
            log.warning("%s: %s; POP state starts from the committed offsets", self.file.path, exc)
            return
        if not isinstance(data, dict):
            return
        for item in data.get("queues") or []:
            try:
                key = (str(item["group"]), str(item["topic"]), int(item["queueId"]))
                state = QueueState(int(item["nextOffset"]))
                for off, pop_time, visible_at, attempts in item.get("inflight") or []:
                    state.add(InFlight(int(off), int(pop_time), int(visible_at), int(attempts)))
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("%s: skipping a malformed entry (%s)", self.file.path, exc)
                continue
            self.queues[key] = state

    def snapshot(self) -> str:
        queues = [
            {
                "group": g,
                "topic": t,
                "queueId": q,
                "nextOffset": s.next_offset,
                "inflight": [[e.offset, e.pop_time, e.visible_at, e.attempts] for e in s.inflight.values()],
            }
            for (g, t, q), s in self.queues.items()
        ]
        # compact, so json's C encoder writes it: an indented dump of thousands of in-flight
        # entries would hold the event loop for tens of milliseconds every second
        return json.dumps({"version": 1, "queues": queues}, separators=(",", ":"))

    async def persist(self, *, force: bool = False) -> None:
        if not (self._dirty or force):
            return
        self._dirty = False
        text = self.snapshot()
        await self.broker.read(self.file.save, text)

    def _changed(self, key: Key, state: QueueState) -> None:
        self._dirty = True
        group, topic, queue_id = key
        self.broker.offsets.commit(group, topic, queue_id, state.low_watermark())
        pulse = self._pulses.pop((group, topic), None)
        if pulse is not None and not pulse.done():
            pulse.set_result(None)

    # == helpers ===============================================================================
    def max_attempts(self, group: str) -> int:
        config = self.broker.groups.find(group)
        retry_max = config.retryMaxTimes if config is not None else 16
        return max(1, retry_max + 1)

    def is_orderly(self, group: str, topic: str) -> bool:
        config = self.broker.groups.get(group)
        if config is not None and config.consumeMessageOrderly:
            return True
        return topic_message_type(self.broker.topics.get(topic)) is TopicMessageType.FIFO

    def _lock(self, group: str, topic: str) -> asyncio.Lock:
        return self._locks.setdefault((group, topic), asyncio.Lock())

    def _init_offset(self, group: str, topic: str, queue_id: int, mode: InitMode) -> int:
        committed = self.broker.offsets.query(group, topic, queue_id)
        if committed >= 0:
            return committed
        store = self.broker.store
        lo, hi = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
        if mode is InitMode.MIN or lo == 0:
            return lo
        return hi

    async def _state(self, key: Key, mode: InitMode) -> QueueState:
        state = self.queues.get(key)
        if state is None:
            group, topic, queue_id = key
            start = await self.broker.read(self._init_offset, group, topic, queue_id, mode)
            state = self.queues.setdefault(key, QueueState(start))
        return state

    # == pop ===================================================================================
    async def pop(
        self,
        group: str,
        topic: str,
        queue_ids: list[int],
        max_nums: int,
        invisible_ms: int,
        *,
        tag_filter: Callable[[int], bool] | None = None,
        record_filter: Callable[[bytes], bool] | None = None,
        orderly: bool | None = None,
        init_mode: InitMode = InitMode.MAX,
    ) -> list[Popped]:
        """Hand out up to ``max_nums`` messages from the queues, starting at a rotating queue."""
        if orderly is None:
            orderly = self.is_orderly(group, topic)
        out: list[Popped] = []
        async with self._lock(group, topic):
            for queue_id in queue_ids:
                if len(out) >= max_nums:
                    break
                key = (group, topic, queue_id)
                state = await self._state(key, init_mode)
                before = len(out)
                await self._pop_queue(
                    key, state, max_nums - len(out), invisible_ms, (tag_filter, record_filter), orderly, out
                )
                if len(out) != before:
                    self._changed(key, state)
        return out

    async def _pop_queue(
        self,
        key: Key,
        state: QueueState,
        room: int,
        invisible_ms: int,
        filters: tuple[Callable[[int], bool] | None, Callable[[bytes], bool] | None],
        orderly: bool,
        out: list[Popped],
    ) -> None:
        group, topic, queue_id = key
        tag_filter, record_filter = filters
        now = now_ms()
        expired = sorted((e for e in state.inflight.values() if e.visible_at <= now), key=lambda e: e.offset)
        if orderly and len(expired) < len(state.inflight):
            return  # a FIFO queue waits for its in-flight messages
        limit = self.max_attempts(group)
        start = expired[0].offset if expired else state.next_offset
        pending = expired
        while pending and room > 0:
            # the records of as many expired entries as there is room for, in one store hop
            chunk, pending = pending[:room], pending[room:]
            offsets = [e.offset for e in chunk]
            records = await self.broker.read_queue(
                topic, queue_id, offsets[0], self._records, topic, queue_id, offsets
            )
            for entry, record in zip(chunk, records, strict=True):
                if state.inflight.get(entry.offset) is not entry or entry.visible_at > now:
                    continue  # acked or its invisible time changed during the read
                if record is None:  # removed by retention meanwhile
                    del state.inflight[entry.offset]
                    self._changed(key, state)
                    continue
                if entry.attempts >= limit:
                    await self._to_dlq(group, record, entry.attempts)
                    state.inflight.pop(entry.offset, None)
                    self._changed(key, state)
                    continue
                entry.attempts += 1
                entry.pop_time = max(now, entry.pop_time + 1)
                entry.visible_at = now + invisible_ms
                out.append(
                    Popped(
                        with_reconsume_times(record, entry.attempts - 1), topic, queue_id, entry.offset,
                        entry.pop_time, invisible_ms, entry.attempts, start,
                    )
                )  # fmt: skip
                room -= 1
        if expired and orderly:
            return  # redeliver the blocked batch first
        if room <= 0:
            return
        store = self.broker.store

        def get() -> GetResult:
            return store.get_messages(
                topic, queue_id, state.next_offset, room, tag_filter=tag_filter, record_filter=record_filter
            )

        result = await self.broker.read_queue(topic, queue_id, state.next_offset, get)
        if result.status in (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_OVERFLOW_BADLY):
            state.next_offset = result.next_begin_offset
            self._dirty = True
            result = await self.broker.read_queue(topic, queue_id, state.next_offset, get)
        moved = result.status in (
            GetStatus.FOUND,
            GetStatus.NO_MATCHED_MESSAGE,
            GetStatus.MESSAGE_WAS_REMOVING,
        )
        if moved and result.next_begin_offset != state.next_offset:
            state.next_offset = result.next_begin_offset
            self._changed(key, state)
        for record, offset in zip(result.records, result.queue_offsets, strict=True):
            state.add(InFlight(offset, now, now + invisible_ms, 1))
            out.append(Popped(record, topic, queue_id, offset, now, invisible_ms, 1, start))

    def _record(self, topic: str, queue_id: int, offset: int) -> bytes | None:
        result = self.broker.store.get_messages(topic, queue_id, offset, 1)
        if result.status is GetStatus.FOUND and result.queue_offsets[0] == offset:
            return result.records[0]
        return None

    def _records(self, topic: str, queue_id: int, offsets: list[int]) -> list[bytes | None]:
        return [self._record(topic, queue_id, offset) for offset in offsets]

    # == waiting (long polling) ================================================================
    async def wait(self, group: str, topic: str, queue_ids: list[int], timeout: float) -> None:
        """Sleep until a message may be ready: a new message, an ack/change, an invisible time
        running out, or ``timeout``."""
        if timeout <= 0 or self.stopping:
            return
        now = now_ms()
        wake_at = now + int(timeout * 1000)
        holds: list[asyncio.Task[None]] = []
        orderly = self.is_orderly(group, topic)
        for queue_id in queue_ids:
            state = self.queues.get((group, topic, queue_id))
            if state is None:
                continue
            if state.inflight:
                wake_at = min(wake_at, min(e.visible_at for e in state.inflight.values()))
            if orderly and state.inflight:
                continue  # blocked until an ack (pulse) or an invisible time runs out
            holds.append(
                asyncio.ensure_future(
                    self.broker.holds.hold(
                        topic, queue_id, state.next_offset, timeout, None,
                        self._max_offset_reader(topic, queue_id),
                    )
                )
            )  # fmt: skip
        pulse = self._pulses.get((group, topic))
        if pulse is None or pulse.done():
            pulse = asyncio.get_running_loop().create_future()
            self._pulses[(group, topic)] = pulse
        waiters: list[asyncio.Future[None]] = [*holds, asyncio.shield(pulse)]
        try:
            await asyncio.wait(
                waiters, timeout=max(0.0, (wake_at - now) / 1000), return_when="FIRST_COMPLETED"
            )
        finally:
            for waiter in waiters:
                waiter.cancel()
            with contextlib.suppress(Exception):
                await asyncio.gather(*holds, return_exceptions=True)

    def _max_offset_reader(self, topic: str, queue_id: int) -> Callable[[], Awaitable[int]]:
        return lambda: self.broker.read(self.broker.store.max_offset, topic, queue_id)

    # == ack / change / dead letter ============================================================
    def ack(self, group: str, topic: str, queue_id: int, offset: int, pop_time: int) -> AckStatus:
        key = (group, topic, queue_id)
        state = self.queues.get(key)
        entry = state.inflight.get(offset) if state is not None else None
        if state is None or entry is None:
            return AckStatus.OK  # acked before (or sent to the DLQ): acks are idempotent
        if entry.pop_time != pop_time:
            return AckStatus.EXPIRED
        del state.inflight[offset]
        self._changed(key, state)
        return AckStatus.OK

    def change_invisible(
        self, group: str, topic: str, queue_id: int, offset: int, pop_time: int, invisible_ms: int
    ) -> InFlight | None:
        """Move the message's visible-again time; None when the handle no longer matches."""
        key = (group, topic, queue_id)
        state = self.queues.get(key)
        entry = state.inflight.get(offset) if state is not None else None
        if state is None or entry is None or entry.pop_time != pop_time:
            return None
        now = now_ms()
        entry.pop_time = max(now, pop_time + 1)
        entry.visible_at = now + invisible_ms
        self._changed(key, state)
        return entry

    async def forward_to_dlq(self, group: str, topic: str, queue_id: int, offset: int, pop_time: int) -> bool:
        """The client gave up on the message (ForwardMessageToDeadLetterQueue): DLQ it and ack it."""
        key = (group, topic, queue_id)
        state = self.queues.get(key)
        entry = state.inflight.get(offset) if state is not None else None
        if state is None or entry is None:
            return True
        if entry.pop_time != pop_time:
            return False
        record = await self.broker.read(self._record, topic, queue_id, offset)
        if record is not None:
            await self._to_dlq(group, record, entry.attempts)
        state.inflight.pop(offset, None)
        self._changed(key, state)
        return True

    async def _to_dlq(self, group: str, record: bytes, attempts: int) -> None:
        try:
            msg = decode_record(record)
        except RecordError as exc:
            log.warning("cannot move a corrupt message of group %s to its DLQ: %s", group, exc)
            return
        dlq = ensure_dlq(self.broker.topics, group).topicName or dlq_topic(group)
        props = dict(msg.properties)
        props.pop(P.POP_CK, None)
        props.setdefault(P.ORIGIN_MESSAGE_ID, msg.msg_id)
        mark_dead_letter(props, msg.topic, msg.offset_msg_id)
        put = PutMessage(
            topic=dlq,
            queue_id=0,
            body=msg.body,
            properties=props,
            flag=msg.flag,
            sys_flag=msg.sys_flag & ~0xC,
            born_timestamp=msg.born_timestamp,
            reconsume_times=attempts,
        )
        result = await self.broker.write(self.broker.store.append, [put])
        if not result.ok:
            log.warning("moving a message of %s to %s failed: %s", group, dlq, result.status.value)
            return
        self.broker.holds.notify(dlq, 0, result.queue_offsets[-1] + 1)
        log.info("message %s of group %s moved to %s after %d attempts", msg.msg_id, group, dlq, attempts)

    async def revive(self) -> None:
        """Periodic: messages whose last allowed delivery expired go to the DLQ without a pop."""
        now = now_ms()
        for key, state in list(self.queues.items()):
            group, topic, queue_id = key
            limit = self.max_attempts(group)
            due = [e for e in state.inflight.values() if e.visible_at <= now and e.attempts >= limit]
            if not due:
                continue
            async with self._lock(group, topic):
                for entry in due:
                    if state.inflight.get(entry.offset) is not entry or entry.visible_at > now_ms():
                        continue
                    record = await self.broker.read(self._record, topic, queue_id, entry.offset)
                    if record is not None:
                        await self._to_dlq(group, record, entry.attempts)
                    del state.inflight[entry.offset]
                    self._changed(key, state)

    # == admin =================================================================================
    def forget_group(self, group: str) -> None:
        for key in [k for k in self.queues if k[0] == group]:
            del self.queues[key]
        self._dirty = True

    def inflight_count(self, group: str, topic: str) -> int:
        return sum(len(s.inflight) for (g, t, _), s in self.queues.items() if g == group and t == topic)
