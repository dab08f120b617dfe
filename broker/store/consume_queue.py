"""ConsumeQueue: per topic/queueId, 20-byte units ``i64 commitLogOffset, i32 size, i64 tagsCode``.

A unit's index is the message's logical queue offset. Units are written by the dispatch step
only, so recovery and a replicating slave build identical queues from the same CommitLog.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Final

from broker.store.mapped_file import MapBudget, MappedFileQueue

UNIT: Final = 20
DEFAULT_UNITS_PER_FILE: Final = 300_000
_UNIT: Final = struct.Struct(">qiq")
_BLANK: Final = _UNIT.pack(0, 0x7FFFFFFF, 0)


class Boundary(Enum):
    LOWER = "LOWER"
    UPPER = "UPPER"

    @classmethod
    def parse(cls, text: str | None) -> Boundary:
        """Java compares with "upper" ignoring case and treats anything else as LOWER."""
        return cls.UPPER if (text or "").lower() == "upper" else cls.LOWER


@dataclass(slots=True, frozen=True)
class CqUnit:
    queue_offset: int
    commitlog_offset: int
    size: int
    tags_code: int


class ConsumeQueue:
    def __init__(
        self,
        root: Path,
        topic: str,
        queue_id: int,
        units_per_file: int,
        *,
        read_only: bool = False,
        budget: MapBudget | None = None,
    ):
        self.topic = topic
        self.queue_id = queue_id
        self.files = MappedFileQueue(
            root / topic / str(queue_id), units_per_file * UNIT, read_only=read_only, budget=budget
        )
        self.min_logic_offset = 0  # first valid queue offset (bytes / UNIT below it are gone)
        self.expired_below = 0  # the topic's reserve.time took the units below this offset
        self.max_physic_end = -1  # CommitLog end offset of the last unit

    # -- geometry ------------------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        return max(self.min_logic_offset, self.files.min_offset // UNIT, self.expired_below)

    @property
    def max_offset(self) -> int:
        """Next queue offset to be written (the number of units ever written)."""
        return self.files.max_offset // UNIT

    # -- load / recover ------------------------------------------------------------------------
    def load(self) -> None:
        self.files.load()

    def recover(self, commitlog_min: int, commitlog_end: int) -> None:
        """Set the write position after the last valid unit that lies inside the CommitLog.

        Units are written in CommitLog order, so validity (positive size, message ending at or
        before ``commitlog_end``) holds for a prefix; a binary search finds its end and the torn
        or orphaned tail is zeroed.
        """
        if not self.files.files:
            return
        lo = self._valid_end(commitlog_end)
        self.files.truncate(lo * UNIT)
        if self.files.files:
            unit = self.unit_at(lo - 1)
            if unit is not None and unit.size != 0x7FFFFFFF:
                self.max_physic_end = unit.commitlog_offset + unit.size
        self.correct_min(commitlog_min)

    def indexed_end(self, commitlog_end: int) -> int:
        """Where the message of the last valid unit ends in the CommitLog (-1: no such unit), without
        changing the queue: what a read-only open trusting the queues starts checking from."""
        if not self.files.files:
            return -1
        unit = self.unit_at(self._valid_end(commitlog_end) - 1)
        return -1 if unit is None or unit.size == 0x7FFFFFFF else unit.commitlog_offset + unit.size

    def _valid_end(self, commitlog_end: int) -> int:
        """The index after the last valid unit; validity holds for a prefix, so a binary search."""
        files = self.files.files
        lo = files[0].file_from // UNIT
        hi = (files[-1].file_from + files[-1].size) // UNIT  # first index known to be invalid
        while lo < hi:
            mid = (lo + hi) // 2
            if self._valid_unit(mid, commitlog_end):
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _valid_unit(self, index: int, commitlog_end: int) -> bool:
        pos = index * UNIT
        mf = self.files.find(pos)
        if mf is None:
            return False
        phys, size, _tags = _UNIT.unpack_from(mf.mm, pos - mf.file_from)
        if size == 0x7FFFFFFF and phys == 0:  # leading blank filler
            return True
        return bool(size > 0 and phys >= 0 and phys + size <= commitlog_end)

    def correct_min(self, commitlog_min: int) -> None:
        """First unit whose message is still in the CommitLog (after retention deleted older files)."""
        first = self.files.files[0] if self.files.files else None
        if first is None:
            return
        base = first.file_from // UNIT
        for i in range(first.wrote // UNIT):
            phys, size, _ = _UNIT.unpack_from(first.mm, i * UNIT)
            if size != 0x7FFFFFFF and phys >= commitlog_min:
                self.min_logic_offset = base + i
                return
        self.min_logic_offset = base + first.wrote // UNIT

    # -- write ---------------------------------------------------------------------------------
    def put(self, queue_offset: int, phys: int, size: int, tags_code: int) -> bool:
        """Write the unit for ``queue_offset``. Re-dispatching an existing unit is a no-op."""
        files = self.files.files
        if files:
            mf = files[-1]
            wrote = mf.wrote
            if wrote < mf.size and queue_offset * UNIT == mf.file_from + wrote:
                # the hot path: the next unit, straight into the mapped file
                _UNIT.pack_into(mf.mm, wrote, phys, size, tags_code)
                mf.wrote = wrote + UNIT
                self.max_physic_end = phys + size
                return True
        expected = self.max_offset
        if queue_offset < expected:
            return False
        if not self.files.files:
            # a queue that starts past 0 in a fresh file: leading blanks, as Java writes them
            start = queue_offset * UNIT
            mf = self.files.writable_file(start)
            gap = (start - mf.file_from) // UNIT
            if gap:
                mf.append(_BLANK * gap)
            self.min_logic_offset = queue_offset
        elif queue_offset > expected:
            where = f"consume queue {self.topic}/{self.queue_id}"
            raise ValueError(f"{where}: unit {queue_offset} written after {expected - 1}")
        mf = self.files.writable_file()
        mf.append(_UNIT.pack(phys, size, tags_code))
        self.max_physic_end = phys + size
        return True

    # -- read ----------------------------------------------------------------------------------
    def unit_at(self, queue_offset: int) -> CqUnit | None:
        pos = queue_offset * UNIT
        mf = self.files.find(pos)
        if mf is None or pos - mf.file_from >= mf.wrote:
            return None
        phys, size, tags = _UNIT.unpack_from(mf.mm, pos - mf.file_from)
        return CqUnit(queue_offset, phys, size, tags)

    def iter_units(self, start: int, limit: int | None = None) -> Iterator[tuple[int, int, int, int]]:
        """Yield ``(queue_offset, phys, size, tags_code)`` from ``start`` onwards."""
        offset = max(start, self.min_offset)
        end = self.max_offset if limit is None else min(self.max_offset, offset + limit)
        while offset < end:
            pos = offset * UNIT
            mf = self.files.find(pos)
            if mf is None:
                return
            rel = pos - mf.file_from
            stop = min(mf.wrote, rel + (end - offset) * UNIT)
            mm = mf.mm
            while rel < stop:
                phys, size, tags = _UNIT.unpack_from(mm, rel)
                yield offset, phys, size, tags
                offset += 1
                rel += UNIT
            if rel < mf.size and rel >= mf.wrote:
                return

    def read_units(self, start: int, limit: int) -> list[tuple[int, int, int]]:
        """Up to ``limit`` units ``(phys, size, tags_code)`` from ``start``, read at once from the one
        file that holds ``start`` (fewer at the end of that file)."""
        offset = max(start, self.min_offset)
        count = min(self.max_offset, offset + limit) - offset
        if count <= 0:
            return []
        pos = offset * UNIT
        mf = self.files.find(pos)
        if mf is None:
            return []
        rel = pos - mf.file_from
        stop = min(mf.wrote, rel + count * UNIT)
        return list(_UNIT.iter_unpack(mf.mm[rel:stop])) if stop > rel else []

    def search_by_time(self, ts: int, boundary: Boundary, store_time: Callable[[int], int | None]) -> int:
        """Queue offset for ``ts`` using the message store times.

        LOWER: the first offset stored at or after ``ts`` (max offset when all are earlier);
        UPPER: the last offset stored at or before ``ts`` (0 when all are later).
        """
        lo, hi = self.min_offset, self.max_offset - 1
        if hi < lo:
            return 0 if boundary is Boundary.UPPER else self.max_offset

        def time_of(off: int) -> int | None:
            unit = self.unit_at(off)
            return None if unit is None else store_time(unit.commitlog_offset)

        first_t, last_t = time_of(lo), time_of(hi)
        if first_t is None or last_t is None:
            return lo
        if boundary is Boundary.LOWER:
            if ts <= first_t:
                return lo
            if ts > last_t:
                return self.max_offset
            # first offset with time >= ts
            while lo < hi:
                mid = (lo + hi) // 2
                t = time_of(mid)
                if t is not None and t >= ts:
                    hi = mid
                else:
                    lo = mid + 1
            return lo
        if ts < first_t:
            return 0
        if ts >= last_t:
            return hi
        # last offset with time <= ts
        while lo < hi:
            mid = (lo + hi + 1) // 2
            t = time_of(mid)
            if t is not None and t <= ts:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # -- retention -----------------------------------------------------------------------------
    def delete_expired(self, commitlog_min: int) -> int:
        """Delete files all of whose messages are older than the CommitLog's min offset."""
        deleted = 0
        while len(self.files.files) > 1:
            mf = self.files.files[0]
            last_phys, last_size, _ = _UNIT.unpack_from(mf.mm, mf.size - UNIT)
            if last_phys + last_size > commitlog_min:
                break
            self.files.delete_first()
            deleted += 1
        self.correct_min(commitlog_min)
        return deleted

    def expire_before(self, queue_offset: int) -> None:
        """Serve nothing below ``queue_offset`` any more; files holding only such units go."""
        self.expired_below = max(self.expired_below, queue_offset)
        per_file = self.files.file_size // UNIT
        whole = sum(1 for mf in self.files.files[:-1] if (mf.file_from // UNIT) + per_file <= queue_offset)
        if whole:
            self.files.delete_first(whole)

    def flush(self) -> None:
        self.files.flush()

    @property
    def unflushed(self) -> bool:
        return any(mf.wrote > mf.flushed for mf in self.files.files)

    def close(self) -> None:
        self.files.close()

    def destroy(self) -> None:
        self.files.destroy()
