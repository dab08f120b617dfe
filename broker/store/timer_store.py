"""Pending timer messages on disk: the TimerLog, the TimerWheel and the checkpoint together.

What the broker's timer service (:mod:`broker.server.timer_service`) asks of the files, run on its
threads: place a batch of parked messages in their slots, walk a slot's units, find the next slot that
holds any, save progress, and recover after a crash. Memory use does not depend on how many timers are
pending: a slot's units are read a batch at a time, and the wheel is read with ``pread``.

Crash recovery. The checkpoint names a TimerLog position ``log_end`` and a queue offset: every unit of a
message below that offset is in the log before that position. Units written after it may have reached
the page cache, and the wheel may point at them; they are cut, the slots they touched are set back to
the unit before them, and the service enqueues from the checkpoint's offset again. The CommitLog is
the journal; the timer files are an index over it that can always be rebuilt from the checkpoint on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from broker.store.timer_checkpoint import TimerProgress, load_checkpoint, save_checkpoint
from broker.store.timer_log import (
    MAGIC_DEFAULT,
    MAGIC_DELETE,
    MAGIC_ROLL,
    UNIT_SIZE,
    TimerLog,
    TimerUnit,
    pack_unit,
)
from broker.store.timer_wheel import Slot, TimerWheel

log = logging.getLogger(__name__)

MAX_DELETES_PER_SLOT = 100_000  # cancel units one slot may hold that are honoured (bounded memory)


@dataclass(slots=True)
class Placement:
    """One parked message to place in the wheel."""

    offset_py: int
    size_py: int
    slot_ms: int
    topic_hash: int
    deletes: bool
    rolls: bool = False  # placed short of its due time, to be parked again when the slot comes


class TimerStore:
    def __init__(self, root: Path, precision_ms: int, log_file_size: int) -> None:
        self.precision = precision_ms
        self.log = TimerLog(root / "timerlog", log_file_size)
        self.wheel = TimerWheel(root / "timerwheel", precision_ms)
        self.checkpoint_path = root / "config" / "timercheck"

    def open(self) -> TimerProgress:
        """Load the files, undo what was written after the checkpoint; the checkpoint's progress."""
        self.log.load()
        self.wheel.open()
        progress = load_checkpoint(self.checkpoint_path)
        progress.log_end = min(max(progress.log_end, self.log.queue.min_offset), self.log.end)
        self._revise(progress.log_end)
        return progress

    def _revise(self, log_end: int) -> None:
        after = self.log.units_from(log_end)
        if after:
            log.warning("timer log: %d unit(s) written after the checkpoint are enqueued again", len(after))
        first_prev: dict[int, int] = {}
        units_of: dict[int, list[int]] = {}
        for unit in after:
            first_prev.setdefault(unit.slot_ms, unit.prev_pos)
            units_of.setdefault(unit.slot_ms, []).append(unit.pos)
        for slot_ms, prev in first_prev.items():
            slot = self.wheel.get(slot_ms)
            if slot.last_pos < log_end:
                continue  # the slot never pointed past the checkpoint (or holds another lap)
            if prev < 0:
                self.wheel.put(Slot(slot_ms, -1, -1, 0, 0))
                continue
            linked = sum(1 for pos in units_of[slot_ms] if pos <= slot.last_pos)
            self.wheel.put(Slot(slot_ms, slot.first_pos, prev, max(0, slot.num - linked), slot.magic))
        written_end = after[-1].pos + 2 * UNIT_SIZE if after else log_end + UNIT_SIZE
        self.log.cut(log_end, written_end)

    # == enqueue ===============================================================================
    def place(self, items: Iterable[Placement], write_ms: int) -> int:
        """Append a unit per item and link it into its slot; the log's end after them.

        The units reach the file before any slot points at them, so a kill in between leaves only
        units no slot knows, which recovery cuts."""
        slots: dict[int, Slot] = {}
        for item in items:
            slot = slots.get(item.slot_ms) or self.wheel.get(item.slot_ms)
            magic = MAGIC_DEFAULT | (MAGIC_DELETE if item.deletes else 0) | (MAGIC_ROLL if item.rolls else 0)
            unit = pack_unit(slot.last_pos, magic, write_ms, item.slot_ms, item.offset_py, item.size_py,
                             item.topic_hash)  # fmt: skip
            pos = self.log.append(unit)
            slots[item.slot_ms] = Slot(
                item.slot_ms,
                pos if slot.first_pos < 0 else slot.first_pos,
                pos,
                slot.num - 1 if item.deletes else slot.num + 1,
                slot.magic | (MAGIC_DELETE if item.deletes else 0),
            )
        self.log.commit()
        for slot in slots.values():
            self.wheel.put(slot)
        return self.log.end

    # == reading ===============================================================================
    def walk(self, pos: int, limit: int) -> tuple[list[TimerUnit], int]:
        """Up to ``limit`` units of a slot from ``pos`` backwards; the position to go on from (-1: done)."""
        out: list[TimerUnit] = []
        while pos >= 0 and len(out) < limit:
            unit = self.log.unit_at(pos)
            if unit is None:
                log.error("timer log: no unit at %d; the rest of its slot is lost", pos)
                return out, -1
            out.append(unit)
            pos = unit.prev_pos
        return out, pos

    def units(self, pos: int) -> Iterator[TimerUnit]:
        """Every unit of a slot from ``pos`` backwards, read a batch at a time."""
        while pos >= 0:
            batch, pos = self.walk(pos, 256)
            yield from batch

    def delete_units(self, slot: Slot) -> list[TimerUnit]:
        """The cancel units of ``slot`` (at most :data:`MAX_DELETES_PER_SLOT`, the newest)."""
        if not slot.magic & MAGIC_DELETE:
            return []
        found = [u for u in self.units(slot.last_pos) if u.deletes]
        if len(found) > MAX_DELETES_PER_SLOT:
            log.warning("timer slot %d holds %d cancels; only %d are honoured",
                        slot.time_ms, len(found), MAX_DELETES_PER_SLOT)  # fmt: skip
            del found[MAX_DELETES_PER_SLOT:]
        return found

    def next_busy(self, from_ms: int, upto_ms: int) -> Slot | None:
        """The first slot from ``from_ms`` to ``upto_ms`` (both included) that holds units."""
        count = (upto_ms - from_ms) // self.precision + 1
        return next(self.wheel.scan(from_ms, count), None) if count > 0 else None

    # == progress and retention ================================================================
    def checkpoint(self, progress: TimerProgress) -> None:
        """Sync the log and the wheel, then record ``progress`` (taken before the sync)."""
        self.log.flush()
        self.wheel.flush()
        save_checkpoint(self.checkpoint_path, progress)

    def clean(self, read_ms: int) -> int:
        """Delete the TimerLog files no slot from ``read_ms`` on reaches into; how many went."""
        if len(self.log.queue.files) < 2:
            return 0
        oldest = self.log.end
        for slot in self.wheel.scan(read_ms, self.wheel.slots):
            oldest = min(oldest, slot.first_pos)
        return self.log.delete_before(oldest)

    def close(self) -> None:
        self.log.close()
        self.wheel.close()
