"""5.x arbitrary delays: TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS.

The send path parks such a message in rmq_sys_wheel_timer queue 0 with TIMER_OUT_MS = the delivery
time rounded down to ``timerPrecisionMs`` (an exact multiple one step lower, as RocketMQ does), so a
unit is due at TIMER_OUT_MS + precision: never before the requested time, at most one step after.

Units arrive in store order, not time order. Instead of RocketMQ's on-disk wheel, an in-memory heap
of (due time, queue offset) holds the undelivered ones; ``config/timerProgress.json`` saves
``readOffset`` (every unit below it is in the heap or delivered) and ``pending`` (the undelivered
units below it), and the heap is rebuilt from both at start (due times come from the ConsumeQueue
tagsCode, no CommitLog read). A crash between a re-put and the next save is handled as in the
schedule service: units due before the crash are checked against the CommitLog before re-putting.

Recall (RocketMQ 5.3's RECALL_MESSAGE): a send that parks a message answers a recall handle
(:mod:`broker.protocol.recall`). A recall finds the parked unit through the IndexFile (topic
rmq_sys_wheel_timer, key UNIQ_KEY), while its time has not come, and remembers its queue offset in
``recalled`` (saved at once with the progress); the unit is then dropped instead of delivered. Upstream
writes a delete marker into the timer instead; looking the unit up lets an unknown message be told apart
from a recalled one. As upstream, recall is refused until ``recallMessageEnable`` is on (sends answer
handles regardless), and on a broker without write permission unless
``allowRecallWhenBrokerNotWriteable`` (on by default).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import logging
import time
from enum import Enum
from typing import TYPE_CHECKING, Any

from broker.protocol import properties as P
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import TRANSACTION_COMMIT_TYPE, TRANSACTION_MASK, TRANSACTION_NOT_TYPE
from broker.protocol.recall import RecallHandle
from broker.protocol.remoting import RemotingCommand, make_response
from broker.server.delivery import (
    IDLE_POLL_S,
    RETRY_AFTER_FAILURE_S,
    Due,
    ProgressFile,
    deliver,
    find_reput,
    real_target,
    recovery_horizon,
    reput,
)
from broker.server.schedule_service import delay_level
from broker.server.topic_config import PERM_WRITE
from broker.store.config import StoreConfig
from broker.store.dispatch import TIMER_TOPIC
from broker.store.message_store import PutMessage

if TYPE_CHECKING:
    from broker.remoting.channel import Handler, RemotingChannel
    from broker.server.broker import Broker

log = logging.getLogger(__name__)

TIMER_REQUESTS = (P.TIMER_DELIVER_MS, P.TIMER_DELAY_SEC, P.TIMER_DELAY_MS)
# A message with none of these is parked neither by the timer nor by a delay level: the send path
# skips both checks for it
PARKING_PROPERTIES = frozenset((P.DELAY, *TIMER_REQUESTS))
TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
BATCH = 64
SCAN = 4096
_RECALL_LOOKUP = 16  # parked copies of one UNIQ_KEY looked at (a producer's retries)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _requested_deliver_ms(props: dict[str, str], now: int) -> int:
    """RocketMQ's precedence: TIMER_DELAY_SEC, then TIMER_DELAY_MS, then TIMER_DELIVER_MS."""
    if P.TIMER_DELAY_SEC in props:
        return now + int(props[P.TIMER_DELAY_SEC]) * 1000
    if P.TIMER_DELAY_MS in props:
        return now + int(props[P.TIMER_DELAY_MS])
    return int(props[P.TIMER_DELIVER_MS])


def timer_out_ms(deliver_ms: int, precision: int) -> int:
    """TIMER_OUT_MS of a delivery time: rounded down to ``precision``, an exact multiple one step lower."""
    return deliver_ms - precision if deliver_ms % precision == 0 else deliver_ms // precision * precision


def parked_recall_handle(msg: PutMessage, broker_name: str) -> RecallHandle | None:
    """The handle of a message :func:`park_timer_message` parked; None for any other message."""
    props = msg.properties
    if msg.topic != TIMER_TOPIC or P.TIMER_OUT_MS not in props or P.REAL_TOPIC not in props:
        return None
    return RecallHandle(props[P.REAL_TOPIC], broker_name, int(props[P.TIMER_OUT_MS]) + 1, props[P.UNIQ_KEY])


class RecallProblem(Enum):
    DISABLED = "disabled"  # recallMessageEnable is off
    NOT_WRITEABLE = "not writeable"  # no write permission and allowRecallWhenBrokerNotWriteable is off
    NO_TOPIC = "no topic"
    MALFORMED = "malformed"
    MISMATCH = "mismatch"  # another topic's or another broker's handle
    EXPIRED = "expired"
    UNKNOWN = "unknown"
    UNSUPPORTED = "unsupported"


class RecallRefused(Exception):
    def __init__(self, problem: RecallProblem, remark: str) -> None:
        super().__init__(remark)
        self.problem = problem
        self.remark = remark


_RECALL_CODES = {
    RecallProblem.DISABLED: ResponseCode.NO_PERMISSION,
    RecallProblem.NOT_WRITEABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    RecallProblem.NO_TOPIC: ResponseCode.TOPIC_NOT_EXIST,
    RecallProblem.UNSUPPORTED: ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
}


def park_timer_message(msg: PutMessage, config: StoreConfig, now: int | None = None) -> str | None:
    """Park a timer message in rmq_sys_wheel_timer; a remark when it must be refused (13).

    A delay level wins over the timer properties (they are dropped); a message that already went
    through the timer (TIMER_OUT_MS) is never parked again; a time in the past delivers at once.
    """
    props = msg.properties
    if msg.sys_flag & TRANSACTION_MASK not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
        return None
    if delay_level(props) > 0:
        for key in TIMER_REQUESTS:
            props.pop(key, None)
        return None
    if msg.topic == TIMER_TOPIC or P.TIMER_OUT_MS in props or props.keys().isdisjoint(TIMER_REQUESTS):
        return None
    if not config.timer_wheel_enable:
        return "accurate timer message is not enabled, timerWheelEnable is false"
    now = _now_ms() if now is None else now
    try:
        deliver_ms = _requested_deliver_ms(props, now)
    except ValueError:
        names = ", ".join(f"{k}={props[k]!r}" for k in TIMER_REQUESTS if k in props)
        return f"timer message illegal: {names} is not an integer"
    if deliver_ms <= now:
        return None
    max_ms = config.timer_max_delay_sec * 1000
    if deliver_ms - now > max_ms:
        return (
            f"timer message illegal: the delay of {deliver_ms - now} ms exceeds the maximum "
            f"{max_ms} ms (timerMaxDelaySec={config.timer_max_delay_sec})"
        )
    props[P.TIMER_OUT_MS] = str(timer_out_ms(deliver_ms, config.timer_precision_ms))
    props[P.REAL_TOPIC] = msg.topic
    props[P.REAL_QID] = str(msg.queue_id)
    msg.topic = TIMER_TOPIC
    msg.queue_id = 0
    return None


class TimerService:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.precision = broker.store_config.timer_precision_ms
        self.file = ProgressFile(broker.store_config.store_path / "config" / "timerProgress.json")
        self.version = 0
        self.read_offset = 0
        self._heap: list[tuple[int, int]] = []  # (due ms, queue offset)
        self._inflight: list[tuple[int, int]] = []
        self._claimed: set[int] = set()
        self._recalled: set[int] = set()  # queue offsets of parked units never to deliver
        self._horizon = 0
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # == life cycle ============================================================================
    async def start(self) -> None:
        self.read_offset, self._heap, self._recalled = await self.broker.read(self._load)
        heapq.heapify(self._heap)
        self._horizon = recovery_horizon(self.broker)
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Finish the batch in flight, then save the progress (safe when never started)."""
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None
            await self.persist()

    def _load(self) -> tuple[int, list[tuple[int, int]], set[int]]:
        data: Any = self.file.load()
        store = self.broker.store
        cq = store.consume_queue(TIMER_TOPIC, 0)
        lo, hi = (cq.min_offset, cq.max_offset) if cq is not None else (0, 0)
        read_offset, pending, recalled = lo, [], []
        if isinstance(data, dict):
            try:
                read_offset = int(data.get("readOffset", lo))
                pending = [int(q) for q in data.get("pending", [])]
                recalled = [int(q) for q in data.get("recalled", [])]
            except (TypeError, ValueError):
                log.warning("%s is garbled; delivering the timer queue from its start", self.file.file.path)
        read_offset = min(max(read_offset, lo), hi)
        entries: list[tuple[int, int]] = []
        for q_off in pending:
            unit = cq.unit_at(q_off) if cq is not None and lo <= q_off < read_offset else None
            if unit is not None:
                entries.append((unit.tags_code + self.precision, q_off))
        waiting = {q for _due, q in entries}
        return read_offset, entries, {q for q in recalled if q in waiting or read_offset <= q < hi}

    async def persist(self) -> None:
        pending = sorted(q for _due, q in self._heap + self._inflight)
        text = json.dumps(
            {"readOffset": self.read_offset, "pending": pending, "recalled": sorted(self._recalled)}
        )
        self.version += 1
        await self.broker.read(self.file.save, self.version, text)

    def running_stats(self) -> dict[str, str]:
        behind = self.broker.store.max_offset(TIMER_TOPIC, 0) - self.read_offset
        late = max(0, _now_ms() - self._heap[0][0]) // 1000 if self._heap else 0
        return {"timerOffsetBehind": str(behind), "timerReadBehind": str(late)}

    # == delivery ==============================================================================
    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                wait = await self._once()
            except Exception:  # one bad round must not stop delivery for good
                log.exception("timer delivery failed")
                wait = RETRY_AFTER_FAILURE_S
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), wait)

    async def _once(self) -> float:
        """Take in new units, deliver what is due; seconds until the next look."""
        if self.read_offset < self.broker.store.max_offset(TIMER_TOPIC, 0):
            units, self.read_offset = await self.broker.read(self._scan, self.read_offset)
            for entry in units:
                heapq.heappush(self._heap, entry)
        now = _now_ms()
        while self._heap and self._heap[0][0] <= now and len(self._inflight) < BATCH:
            entry = heapq.heappop(self._heap)
            if entry[1] in self._recalled:
                self._recalled.discard(entry[1])
                continue
            self._inflight.append(entry)
        if self._inflight:
            due = await self.broker.read(self._collect, list(self._inflight))
            done = await deliver(self.broker, due)
            retry_at = _now_ms() + int(RETRY_AFTER_FAILURE_S * 1000)
            for _due, q_off in self._inflight[done:]:
                heapq.heappush(self._heap, (retry_at, q_off))
            self._inflight = []
            return 0.0
        if self._heap:
            return min(IDLE_POLL_S, (self._heap[0][0] - now) / 1000)
        return IDLE_POLL_S

    def _scan(self, start: int) -> tuple[list[tuple[int, int]], int]:
        cq = self.broker.store.consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            return [], start
        units = [(tags + self.precision, q_off) for q_off, _p, _s, tags in cq.iter_units(start, SCAN)]
        return units, (units[-1][1] + 1 if units else start)

    def _collect(self, entries: list[tuple[int, int]]) -> list[Due]:
        store = self.broker.store
        cq = store.consume_queue(TIMER_TOPIC, 0)
        now = str(_now_ms())
        due: list[Due] = []
        for deliver_at, q_off in entries:
            unit = cq.unit_at(q_off) if cq is not None else None
            rec = store.message_at(unit.commitlog_offset) if unit is not None else None
            target = real_target(rec) if rec is not None else None
            if rec is None or target is None:
                log.error("timer message at queue offset %d is gone or has no real topic; skipped", q_off)
                due.append(Due(q_off, None))
                continue
            props = {k: v for k, v in rec.properties.items() if k not in (P.REAL_TOPIC, P.REAL_QID)}
            props[TIMER_ENQUEUE_MS] = str(rec.store_timestamp)
            props[TIMER_DEQUEUE_MS] = now
            msg = reput(rec, target[0], target[1], props)
            if deliver_at <= self._horizon and find_reput(store, rec, msg, self._claimed):
                log.info("timer message %s was delivered before the crash; not again", rec.uniq_key)
                due.append(Due(q_off, None))
                continue
            due.append(Due(q_off, msg))
        return due

    # == recall ================================================================================
    async def recall(self, topic: str, handle_text: str) -> str:
        """Cancels the parked message ``handle_text`` names; its UNIQ_KEY, or :class:`RecallRefused`.

        The broker's switches are looked at first, as upstream does: a refused recall reveals nothing
        about the topic or the handle."""
        config = self.broker.config
        if not config.recall_message_enable:
            raise RecallRefused(
                RecallProblem.DISABLED, "recall failed: recall is switched off (recallMessageEnable=false)"
            )
        if not config.broker_permission & PERM_WRITE and not config.allow_recall_when_broker_not_writeable:
            raise RecallRefused(
                RecallProblem.NOT_WRITEABLE,
                "recall failed: the broker is not writeable and allowRecallWhenBrokerNotWriteable is false",
            )
        if self.broker.topics.get(topic) is None:
            raise RecallRefused(RecallProblem.NO_TOPIC, f"recall failed, the topic[{topic}] not exist")
        try:
            handle = RecallHandle.decode(handle_text)
        except ValueError as exc:
            raise RecallRefused(RecallProblem.MALFORMED, f"recall failed: {exc}") from None
        if handle.topic != topic:
            raise RecallRefused(
                RecallProblem.MISMATCH, f"recall failed: the handle is for topic {handle.topic}, not {topic}"
            )
        if handle.broker_name != config.broker_name:
            raise RecallRefused(
                RecallProblem.MISMATCH, f"recall failed: the handle was issued by broker {handle.broker_name}"
            )
        if self._task is None or self.broker.store.index is None:
            raise RecallRefused(
                RecallProblem.UNSUPPORTED,
                "recall failed: this broker does not deliver timer messages or has no IndexFile "
                "(messageIndexEnable)",
            )
        self._check_time(handle)
        offsets = await self.broker.read(self._find_parked, handle)
        self._check_time(handle)  # the lookup ran on a reader thread: the time may have come since
        if not offsets:
            raise RecallRefused(
                RecallProblem.UNKNOWN,
                f"recall failed: no delayed message {handle.message_id} of topic {topic} is waiting",
            )
        self._recalled.update(offsets)
        await self.persist()
        log.info("recalled timer message %s of %s", handle.message_id, topic)
        return handle.message_id

    def _check_time(self, handle: RecallHandle) -> None:
        """A unit leaves the heap at TIMER_OUT_MS + precision, after the handle's time: until that
        time the unit is certainly still waiting."""
        if handle.timestamp <= _now_ms():
            raise RecallRefused(
                RecallProblem.EXPIRED,
                f"recall failed: message {handle.message_id} was due at {handle.timestamp} and is delivered",
            )

    def _find_parked(self, handle: RecallHandle) -> list[int]:
        out = str(handle.timestamp - 1)
        return [
            rec.queue_offset
            for rec in self.broker.store.query_by_key(
                TIMER_TOPIC, handle.message_id, _RECALL_LOOKUP, 0, 2**63 - 1, unique=True
            )
            if rec.properties.get(P.REAL_TOPIC) == handle.topic and rec.properties.get(P.TIMER_OUT_MS) == out
        ]

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.RECALL_MESSAGE: self.recall_request}

    async def recall_request(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """RECALL_MESSAGE (370): extFields topic, recallHandle (producerGroup unused); answers msgId."""
        fields = request.ext_fields or {}
        try:
            message_id = await self.recall(fields.get("topic", ""), fields.get("recallHandle", ""))
        except RecallRefused as exc:
            return make_response(
                request, _RECALL_CODES.get(exc.problem, ResponseCode.ILLEGAL_OPERATION), exc.remark
            )
        answer = make_response(request)
        answer.ext_fields = {"msgId": message_id}
        return answer
