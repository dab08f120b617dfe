"""5.x arbitrary delays: TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS.

The send path parks such a message in rmq_sys_wheel_timer queue 0 with TIMER_OUT_MS = the delivery
time rounded down to ``timerPrecisionMs`` (an exact multiple one step lower, as RocketMQ does), so a
message is due at TIMER_OUT_MS + precision: never before the requested time, at most one step after.

Pending messages wait on disk, in RocketMQ 5's TimerLog and TimerWheel (:mod:`broker.store.timer_store`):
one loop takes new units of the timer queue into the slot of their TIMER_OUT_MS (a unit whose slot
already passed is delivered at once), then delivers each slot whose time has come, a batch of units at a
time. ``config/timercheck`` saves where both stand; the broker's memory does not grow with the number
of pending timers. A slot is delivered only after every unit stored before it was due has been taken
in, so a cancel stored before the due time is always seen. After a crash, units due before the newest
recovered store time are checked against the CommitLog before re-putting (as the schedule service
does): nothing is delivered twice, and because progress is only saved behind what is on disk, nothing
is lost.

Cancels (upstream's delete markers): a parked message carrying TIMER_DEL_UNIQKEY = "<topic>+<UNIQ_KEY>"
lands in the slot of the message it names; delivering the slot reads its cancels first and drops the
messages they name. RECALL_MESSAGE (RocketMQ 5.3; refused until ``recallMessageEnable`` is on, and on
a broker without write permission unless ``allowRecallWhenBrokerNotWriteable``) and the operators'
cancel by message id or key both store such a marker, and the IndexFile (topic rmq_sys_wheel_timer,
UNIQ_KEY and KEYS) finds the parked message first, so an unknown message is told apart from a cancelled
or a delivered one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from broker.protocol import properties as P
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.javahash import java_hash
from broker.protocol.message import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_MASK,
    TRANSACTION_NOT_TYPE,
    MessageRecord,
    pack_host,
)
from broker.protocol.recall import RecallHandle
from broker.protocol.remoting import RemotingCommand, make_response
from broker.protocol.timers import PendingTimer
from broker.server.config import BrokerConfig
from broker.server.delivery import (
    IDLE_POLL_S,
    RETRY_AFTER_FAILURE_S,
    DeliveryParts,
    Due,
    deliver,
    find_reput,
    real_target,
    recovery_horizon,
    reput,
)
from broker.server.schedule_service import delay_level
from broker.server.topic_config import PERM_WRITE, TopicConfigManager
from broker.store.config import StoreConfig
from broker.store.config_files import ConfigFile
from broker.store.dispatch import TIMER_TOPIC
from broker.store.message_store import PutMessage
from broker.store.timer_checkpoint import TimerProgress
from broker.store.timer_log import TimerUnit
from broker.store.timer_store import Placement, TimerStore
from broker.store.timer_wheel import Slot

if TYPE_CHECKING:
    from broker.remoting.channel import Handler, RemotingChannel

log = logging.getLogger(__name__)

TIMER_REQUESTS = (P.TIMER_DELIVER_MS, P.TIMER_DELAY_SEC, P.TIMER_DELAY_MS)
# A message with none of these is parked neither by the timer nor by a delay level: the send path
# skips both checks for it
PARKING_PROPERTIES = frozenset((P.DELAY, *TIMER_REQUESTS))
TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"  # how often a timer due beyond the roll window was parked again
BATCH = 256  # units re-put per store write
SCAN = 4096  # timer queue units taken in per step
SLOT_BATCHES = 16  # batches of one round's deliveries before new units are taken in again
LIST_LIMIT = 10_000  # timers one list answer may hold
LIST_BUDGET = 200_000  # units one list request may look at
LIST_INTAKE_LOOK = 10_000  # stored units not yet on the wheel a list looks through for cancels
CLEAN_INTERVAL_S = 60.0  # TimerLog retention looks at the whole wheel: not at every checkpoint
LEGACY_PROGRESS = "timerProgress.json"  # the in-memory timer's progress, read once on upgrade
_LOOKUP = 32  # parked copies of one UNIQ_KEY or key looked at (a producer's retries)


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


def cancel_key(topic: str, uniq_key: str) -> str:
    """TIMER_DEL_UNIQKEY of a cancel of message ``uniq_key`` of ``topic`` (upstream's buildDeleteKey)."""
    return f"{topic}+{uniq_key}"


def parked_recall_handle(msg: PutMessage, broker_name: str) -> RecallHandle | None:
    """The handle of a message :func:`park_timer_message` parked; None for any other message."""
    props = msg.properties
    if msg.topic != TIMER_TOPIC or P.TIMER_OUT_MS not in props or P.REAL_TOPIC not in props:
        return None
    if P.TIMER_DEL_UNIQKEY in props:
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
    cancels = props.get(P.TIMER_DEL_UNIQKEY)
    if cancels is not None and not cancels.startswith(msg.topic + "+"):
        return f"timer message illegal: {P.TIMER_DEL_UNIQKEY} must name a message of topic {msg.topic}"
    if not config.timer_wheel_enable:
        return "accurate timer message is not enabled, timerWheelEnable is false"
    now = _now_ms() if now is None else now
    try:
        deliver_ms = _requested_deliver_ms(props, now)
    except ValueError:
        names = ", ".join(f"{k}={props[k]!r}" for k in TIMER_REQUESTS if k in props)
        return f"timer message illegal: {names} is not an integer"
    if deliver_ms <= now:
        # a cancel whose time has passed cancels nothing (upstream refuses it the same way)
        return None if cancels is None else "timer message illegal: the cancel's time has passed"
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


@dataclass(slots=True)
class Parked:
    """What the IndexFile holds for one message id or key: parked copies, and the ids already cancelled."""

    records: list[MessageRecord]
    cancelled: set[str]


@dataclass(slots=True)
class Legacy:
    """``config/timerProgress.json`` of the in-memory timer this store was written with: units below
    ``read_offset`` not in ``waiting`` were delivered (or recalled) before the upgrade."""

    file: ConfigFile
    read_offset: int
    waiting: set[int]


def load_legacy(config_dir: Path) -> Legacy | None:
    file = ConfigFile(config_dir / LEGACY_PROGRESS)
    data = file.load()
    if not isinstance(data, dict):
        return None
    try:
        read_offset = int(data.get("readOffset", 0))
        waiting = {int(q) for q in data.get("pending", [])} - {int(q) for q in data.get("recalled", [])}
    except (TypeError, ValueError):
        log.warning("%s is garbled; its timers are taken in from the queue's start", file.path)
        return None
    return Legacy(file, read_offset, waiting)


def _now_floor(precision: int) -> int:
    now = _now_ms()
    return now - now % precision


class TimerParts(DeliveryParts, Protocol):
    """The parts of the broker the timer uses."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def address(self) -> str: ...


class TimerService:
    def __init__(self, broker: TimerParts) -> None:
        self.broker = broker
        config = broker.store_config
        self.precision = config.timer_precision_ms
        self.files = TimerStore(config.store_path, self.precision, config.mapped_file_size_timer_log)
        # within the wheel's span, and at least two steps so that half a window is a step ahead
        window = max(2, min(config.timer_roll_window_slots, self.files.wheel.slots - 1))
        self.roll_ms = window * self.precision
        self.progress = TimerProgress()
        self._deletes: set[str] | None = None  # cancels of the slot being delivered
        self._legacy: Legacy | None = None
        self._claimed: set[int] = set()
        self._horizon = 0
        self._lock = asyncio.Lock()  # a round's start and a cancel's store: one or the other first
        self._saving = threading.Lock()
        self._saved = 0
        self._cleaned = 0.0
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # == life cycle ============================================================================
    async def start(self) -> None:
        fresh = not self.files.checkpoint_path.exists()
        progress = await self.broker.read(self.files.open)
        self._legacy = await self.broker.read(load_legacy, self.files.checkpoint_path.parent)
        if self._legacy is not None and fresh:
            progress.queue_offset = min([self._legacy.read_offset, *self._legacy.waiting])
        store = self.broker.store
        lo, hi = store.min_offset(TIMER_TOPIC, 0), store.max_offset(TIMER_TOPIC, 0)
        progress.queue_offset = min(max(progress.queue_offset, lo), hi)
        if progress.read_ms <= 0:
            progress.read_ms = _now_floor(self.precision)
        progress.read_ms -= progress.read_ms % self.precision
        self.progress = progress
        self._saved = progress.version
        asked = self.broker.store_config.timer_roll_window_slots
        if self.roll_ms != asked * self.precision:
            used = self.roll_ms // self.precision
            log.warning("timerRollWindowSlots %d is outside the wheel; %d used", asked, used)
        self._horizon = recovery_horizon(self.broker)
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Finish the batch in flight, then save the progress (safe when never started)."""
        self._stopping.set()
        if self._task is not None:
            await self._task
            await self.persist()
            self._task = None
            await self.broker.read(self.files.close)

    async def persist(self) -> None:
        """Save where delivery and intake stand (the snapshot is taken here, on the event loop)."""
        if self._task is None:
            return
        self.progress.version += 1
        await self.broker.read(self._save, replace(self.progress))

    def _save(self, progress: TimerProgress) -> None:
        with self._saving:  # a periodic save may still run beside the final one: never go back
            if progress.version > self._saved:
                self.files.checkpoint(progress)
                self._saved = progress.version
                legacy = self._legacy
                if legacy is not None and progress.queue_offset >= legacy.read_offset:
                    legacy.file.path.unlink(missing_ok=True)
                    legacy.file.bak_path.unlink(missing_ok=True)
                    self._legacy = None
            if time.monotonic() - self._cleaned >= CLEAN_INTERVAL_S:
                self._cleaned = time.monotonic()
                self.files.clean(progress.read_ms)

    def running_stats(self) -> dict[str, str]:
        behind = self.broker.store.max_offset(TIMER_TOPIC, 0) - self.progress.queue_offset
        late = max(0, _now_ms() - self.progress.read_ms - self.precision) // 1000
        return {"timerOffsetBehind": str(behind), "timerReadBehind": str(late)}

    # == the loop ==============================================================================
    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                wait = await self._round()
            except Exception:  # one bad round must not stop delivery for good
                log.exception("timer delivery failed")
                wait = RETRY_AFTER_FAILURE_S
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), wait)

    async def _round(self) -> float:
        """Take in what the timer queue holds, then deliver the slots whose time has come; seconds
        until the next look."""
        async with self._lock:
            round_ms = _now_ms()
            target = self.broker.store.max_offset(TIMER_TOPIC, 0)
        while self.progress.queue_offset < target and not self._stopping.is_set():
            taken = await self._take_in(target)
            if taken is None:
                return RETRY_AFTER_FAILURE_S
            if not taken:
                break  # the next unit is a wheel's turn ahead: deliver first
        return await self._deliver_due(round_ms)

    async def _take_in(self, target: int) -> bool | None:
        """One step of intake; whether the queue offset moved (None: a re-put failed, retry later)."""
        start = self.progress.queue_offset
        dues, after, log_end = await self.broker.read(self._place, start, target)
        if dues:
            done = await deliver(self.broker, dues)
            if done < len(dues):
                self.progress.queue_offset = dues[done].queue_offset
                return None
        self.progress.queue_offset = after
        self.progress.log_end = log_end
        return after > start

    def _place(self, start: int, target: int) -> tuple[list[Due], int, int]:
        """Reader thread: from queue offset ``start``, units for the wheel are placed, or (never both
        in one step) units whose slot has passed are made ready to deliver at once; those, the offset
        after the step and the TimerLog's end."""
        store = self.broker.store
        cq = store.consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            return [], start, self.progress.log_end
        read_ms, started = self.progress.read_ms, self.progress.slot_resume >= 0
        legacy = self._legacy
        places: list[Placement] = []
        dues: list[Due] = []
        after = start
        for q_off, phys, size, tags in cq.iter_units(start, min(SCAN, target - start)):
            slot_ms = tags - tags % self.precision
            if legacy is not None and q_off < legacy.read_offset and q_off not in legacy.waiting:
                after = q_off + 1  # delivered or recalled before the upgrade
                continue
            passed = slot_ms < read_ms or (slot_ms == read_ms and started)
            if (places and passed) or (dues and not passed):
                break
            rec = store.message_at(phys)
            target_of = real_target(rec) if rec is not None else None
            if rec is None or target_of is None:
                log.error("timer message at queue offset %d is gone or has no real topic; skipped", q_off)
            elif passed:  # a cancel whose slot has passed has nothing left to cancel
                if P.TIMER_DEL_UNIQKEY not in rec.properties:
                    dues.append(Due(q_off, self._reput_of(rec, slot_ms)))
            else:
                wait_ms, rolls = self._wheel_slot(slot_ms, read_ms)
                deletes = P.TIMER_DEL_UNIQKEY in rec.properties
                places.append(Placement(phys, size, wait_ms, java_hash(target_of[0]), deletes, rolls))
            after = q_off + 1
        log_end = self.files.place(places, _now_floor(self.precision)) if places else self.progress.log_end
        return dues, after, log_end

    def _wheel_slot(self, slot_ms: int, read_ms: int) -> tuple[int, bool]:
        """Where a unit due at the end of slot ``slot_ms`` waits, and whether it rolls: its own slot
        when that is within the roll window of the slot being delivered; else a window ahead (half of
        one when a whole one would leave a last stretch under a third of a window, as upstream
        does), from where it is parked again. Counting from the slot being delivered, not from the
        clock, keeps every slot written within the wheel's span after a long stop."""
        beyond = slot_ms - read_ms - self.roll_ms
        if beyond < 0:
            return slot_ms, False
        steps = self.roll_ms // self.precision
        ahead = steps // 2 if beyond < self.roll_ms // 3 else steps
        return read_ms + ahead * self.precision, True

    async def _deliver_due(self, round_ms: int) -> float:
        """Deliver the slots due by ``round_ms`` (a bounded number of batches); seconds to wait."""
        progress = self.progress
        last_due = round_ms - round_ms % self.precision - self.precision
        for _ in range(SLOT_BATCHES):
            if self._stopping.is_set():
                return 0.0
            if progress.slot_resume < 0:
                if progress.read_ms > last_due:
                    return min(IDLE_POLL_S, max(0.0, (progress.read_ms + self.precision - _now_ms()) / 1000))
                slot = await self.broker.read(self.files.next_busy, progress.read_ms, last_due)
                if slot is None:
                    progress.read_ms = last_due + self.precision
                    continue
                self._deletes = await self.broker.read(self._cancels_of, slot)
                progress.read_ms, progress.slot_resume = slot.time_ms, slot.last_pos
            elif self._deletes is None:  # resumed inside a slot after a restart
                slot = await self.broker.read(self.files.wheel.get, progress.read_ms)
                self._deletes = await self.broker.read(self._cancels_of, slot)
            dues, next_pos = await self.broker.read(self._collect, progress.slot_resume)
            done = await deliver(self.broker, dues)
            if done < len(dues):
                progress.slot_resume = dues[done].queue_offset
                return RETRY_AFTER_FAILURE_S
            progress.slot_resume = next_pos
            if next_pos < 0:
                progress.read_ms += self.precision
                self._deletes = None
        return 0.0

    def _cancels_of(self, slot: Slot) -> set[str]:
        """Reader thread: the TIMER_DEL_UNIQKEY values of the slot's cancel units."""
        return self._cancels_of_units(self.files.delete_units(slot))

    def _cancels_of_units(self, units: list[TimerUnit]) -> set[str]:
        keys: set[str] = set()
        for unit in units:
            rec = self.broker.store.message_at(unit.offset_py)
            key = rec.properties.get(P.TIMER_DEL_UNIQKEY) if rec is not None else None
            if key:
                keys.add(key)
        return keys

    def _collect(self, pos: int) -> tuple[list[Due], int]:
        """Reader thread: a batch of the slot's units from ``pos``, as re-puts (each Due's offset is
        its unit's TimerLog position); the position to go on from."""
        units, next_pos = self.files.walk(pos, BATCH)
        return [Due(unit.pos, self._reput_unit(unit)) for unit in units], next_pos

    def _reput_unit(self, unit: TimerUnit) -> PutMessage | None:
        if unit.deletes and not unit.rolls:
            return None
        rec = self.broker.store.message_at(unit.offset_py)
        if rec is None:
            log.error("timer message at CommitLog offset %d is gone; skipped", unit.offset_py)
            return None
        target = real_target(rec)
        if (
            not unit.deletes
            and target is not None
            and self._deletes
            and cancel_key(target[0], rec.uniq_key or "") in self._deletes
        ):
            log.info("timer message %s of %s was cancelled", rec.uniq_key, target[0])
            return None
        if unit.rolls:
            return self._roll_of(rec, unit.slot_ms)
        return self._reput_of(rec, unit.slot_ms)

    def _roll_of(self, rec: MessageRecord, slot_ms: int) -> PutMessage | None:
        """The parked message (or cancel) parked again, as it was: the intake places it anew from
        its TIMER_OUT_MS, in its own slot or one more window ahead."""
        props = dict(rec.properties)
        try:
            rolled = int(props.get(TIMER_ROLL_TIMES, "0"))
        except ValueError:
            rolled = 0
        props[TIMER_ROLL_TIMES] = str(rolled + 1)
        msg = reput(rec, TIMER_TOPIC, 0, props)
        store = self.broker.store
        if slot_ms + self.precision <= self._horizon and find_reput(store, rec, msg, self._claimed):
            log.info("timer message %s was parked again before the crash; not again", rec.uniq_key)
            return None
        return msg

    def _reput_of(self, rec: MessageRecord, slot_ms: int) -> PutMessage | None:
        target = real_target(rec)
        if target is None:
            log.error("timer message %s has no real topic; skipped", rec.uniq_key)
            return None
        props = {k: v for k, v in rec.properties.items() if k not in (P.REAL_TOPIC, P.REAL_QID)}
        props[TIMER_ENQUEUE_MS] = str(rec.store_timestamp)
        props[TIMER_DEQUEUE_MS] = str(_now_ms())
        msg = reput(rec, target[0], target[1], props)
        if slot_ms + self.precision <= self._horizon and find_reput(
            self.broker.store, rec, msg, self._claimed
        ):
            log.info("timer message %s was delivered before the crash; not again", rec.uniq_key)
            return None
        return msg

    # == operators: list and cancel ============================================================
    def _check_serving(self) -> None:
        if self._task is None or self.broker.store.index is None:
            raise RecallRefused(
                RecallProblem.UNSUPPORTED,
                "this broker does not deliver timer messages or has no IndexFile (messageIndexEnable)",
            )

    async def pending(
        self, topic: str | None, begin_ms: int, end_ms: int, limit: int
    ) -> tuple[list[PendingTimer], bool]:
        """Pending timers due from ``begin_ms`` to ``end_ms``, by due time; and whether there are more."""
        self._check_serving()
        limit = max(1, min(limit, LIST_LIMIT))
        return await self.broker.read(self._pending, replace(self.progress), topic, begin_ms, end_ms, limit)

    def _pending(self, progress: TimerProgress, topic: str | None, begin_ms: int, end_ms: int,
                 limit: int) -> tuple[list[PendingTimer], bool]:  # fmt: skip
        step = self.precision
        first = max(begin_ms - begin_ms % step - step, progress.read_ms)  # the slots asked about
        last = end_ms - end_ms % step
        # no unit waits beyond the roll window; those due beyond it wait (rolled) anywhere in it
        reach = progress.read_ms + self.roll_ms
        start, stop = (progress.read_ms if last > reach else first), min(last, reach)
        wanted = java_hash(topic) if topic else None
        out: list[PendingTimer] = []
        taking_in = self._cancels_taking_in(progress.queue_offset)
        rolled_cancels: set[str] = set()  # a rolled cancel may wait in another slot than its message
        looked, more = 0, False
        for slot in self.files.wheel.scan(start, (stop - start) // step + 1) if stop >= start else ():
            cancels = self._cancels_of(slot) | taking_in
            resume = progress.slot_resume if slot.time_ms == progress.read_ms else -1
            rows: list[PendingTimer] = []
            for unit in self.files.units(resume if resume >= 0 else slot.last_pos):
                looked += 1
                if looked > LIST_BUDGET or len(out) + len(rows) >= limit:
                    more = True
                    break
                if unit.deletes and unit.rolls:
                    rolled_cancels |= self._cancels_of_units([unit])
                if unit.deletes or (wanted is not None and unit.topic_hash != wanted):
                    continue
                row = self._row(unit, topic, cancels)
                if row is not None and first < row.deliver_ms <= last + step:
                    rows.append(row)
            out.extend(reversed(rows))
            if more:
                break
        out = [row for row in out if cancel_key(row.topic, row.msg_id) not in rolled_cancels]
        out.sort(key=lambda row: row.deliver_ms)  # rolled timers wait in slots before their own
        return out, more

    def _cancels_taking_in(self, start: int) -> set[str]:
        """Reader thread: the cancels stored but not yet in the wheel (a list right after a cancel)."""
        store = self.broker.store
        cq = store.consume_queue(TIMER_TOPIC, 0)
        keys: set[str] = set()
        for _q_off, phys, _size, _tags in cq.iter_units(start, LIST_INTAKE_LOOK) if cq is not None else ():
            rec = store.message_at(phys)
            key = rec.properties.get(P.TIMER_DEL_UNIQKEY) if rec is not None else None
            if key:
                keys.add(key)
        return keys

    def _row(self, unit: TimerUnit, topic: str | None, cancels: set[str]) -> PendingTimer | None:
        rec = self.broker.store.message_at(unit.offset_py)
        target = real_target(rec) if rec is not None else None
        if rec is None or target is None or (topic and target[0] != topic):
            return None
        msg_id = rec.uniq_key or rec.offset_msg_id
        if cancel_key(target[0], msg_id) in cancels:
            return None
        props = rec.properties
        due = self._due_ms(rec) if unit.rolls else unit.slot_ms + self.precision
        return PendingTimer(target[0], target[1], msg_id, props.get(P.KEYS, ""), props.get(P.TAGS, ""),
                            due, rec.store_timestamp, len(rec.body))  # fmt: skip

    async def cancel(self, topic: str, msg_id: str | None, key: str | None) -> list[PendingTimer]:
        """Cancel the pending timers of ``topic`` with UNIQ_KEY ``msg_id`` (or KEYS holding ``key``);
        the ones cancelled now. :class:`RecallRefused` when none is pending."""
        self._check_serving()
        if self.broker.topics.get(topic) is None:
            raise RecallRefused(RecallProblem.NO_TOPIC, f"the topic[{topic}] not exist")
        what = f"message {msg_id}" if msg_id else f"key {key}"
        parked = await self.broker.read(self._find_parked, topic, msg_id, key)
        waiting = [r for r in parked.records if (r.uniq_key or "") not in parked.cancelled]
        if not waiting:
            if parked.records:
                raise RecallRefused(RecallProblem.UNKNOWN, f"{what} of topic {topic} is already cancelled")
            raise RecallRefused(RecallProblem.UNKNOWN, f"no timer {what} of topic {topic} is waiting")
        cancelled = await self._store_cancels(waiting)
        if not cancelled:
            raise RecallRefused(RecallProblem.EXPIRED, f"{what} of topic {topic} was due and is delivered")
        return [self._summary(r) for r in cancelled]

    def _summary(self, rec: MessageRecord) -> PendingTimer:
        props = rec.properties
        return PendingTimer(props.get(P.REAL_TOPIC, ""), int(props.get(P.REAL_QID, "0") or 0),
                            rec.uniq_key or "", props.get(P.KEYS, ""), props.get(P.TAGS, ""),
                            self._due_ms(rec), rec.store_timestamp, len(rec.body))  # fmt: skip

    def _due_ms(self, rec: MessageRecord) -> int:
        out = int(rec.properties.get(P.TIMER_OUT_MS, "0"))
        return out - out % self.precision + self.precision

    def _find_parked(self, topic: str, msg_id: str | None, key: str | None) -> Parked:
        """Reader thread: the parked copies of the message (or of the messages with ``key``) of
        ``topic``, and the UNIQ_KEYs among them that a cancel already names."""
        found = self.broker.store.query_by_key(
            TIMER_TOPIC, msg_id or key or "", _LOOKUP, 0, 2**63 - 1, unique=msg_id is not None
        )
        records, cancelled = [], set()
        prefix = topic + "+"
        for rec in found:
            if rec.properties.get(P.REAL_TOPIC) != topic:
                continue
            cancels = rec.properties.get(P.TIMER_DEL_UNIQKEY)
            if cancels is None:
                records.append(rec)
            elif cancels.startswith(prefix):
                cancelled.add(cancels[len(prefix) :])
        return Parked(records, cancelled)

    async def _store_cancels(self, records: list[MessageRecord]) -> list[MessageRecord]:
        """Store a cancel for each record whose time has not come; those records.

        Under the lock a round takes its start time: a round that started before the cancel was
        stored started before the message's due time too, so it cannot deliver its slot; a later
        round takes the cancel in before it delivers."""
        # one cancel per message: a timer parked again (rolled) has several parked copies
        records = list({r.uniq_key or "": r for r in records}.values())
        async with self._lock:
            now = _now_ms()
            live = [r for r in records if self._due_ms(r) > now]
            if live:
                result = await self.broker.write(self.broker.store.append, [self._cancel_of(r) for r in live])
                if not result.ok:
                    raise RecallRefused(
                        RecallProblem.UNSUPPORTED, f"the cancel was not stored: {result.remark}"
                    )
        for rec in live:
            log.info("cancelled timer message %s of %s", rec.uniq_key, rec.properties.get(P.REAL_TOPIC))
        return live

    def _cancel_of(self, rec: MessageRecord) -> PutMessage:
        """Upstream's delete marker for ``rec``: parked in its slot; UNIQ_KEY and KEYS copied so the
        IndexFile finds it beside the message it cancels."""
        props = {
            P.TIMER_DEL_UNIQKEY: cancel_key(rec.properties[P.REAL_TOPIC], rec.uniq_key or ""),
            P.TIMER_OUT_MS: rec.properties[P.TIMER_OUT_MS],
            P.REAL_TOPIC: rec.properties[P.REAL_TOPIC],
            P.REAL_QID: rec.properties.get(P.REAL_QID, "0"),
            P.UNIQ_KEY: rec.uniq_key or "",
        }
        if rec.properties.get(P.KEYS):
            props[P.KEYS] = rec.properties[P.KEYS]
        now = _now_ms()
        return PutMessage(
            TIMER_TOPIC, 0, b"0", props, born_timestamp=now, born_host=pack_host(self.broker.address)
        )

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
        try:
            self._check_serving()
        except RecallRefused as exc:
            raise RecallRefused(exc.problem, f"recall failed: {exc.remark}") from None
        expired = RecallRefused(
            RecallProblem.EXPIRED,
            f"recall failed: message {handle.message_id} was due at {handle.timestamp} and is delivered",
        )
        if handle.timestamp <= _now_ms():
            raise expired
        parked = await self.broker.read(self._find_parked, topic, handle.message_id, None)
        out = str(handle.timestamp - 1)
        records = [r for r in parked.records if r.properties.get(P.TIMER_OUT_MS) == out]
        if not records:
            raise RecallRefused(
                RecallProblem.UNKNOWN,
                f"recall failed: no delayed message {handle.message_id} of topic {topic} is waiting",
            )
        if handle.message_id not in parked.cancelled and not await self._store_cancels(records):
            raise expired
        log.info("recalled timer message %s of %s", handle.message_id, topic)
        return handle.message_id

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
