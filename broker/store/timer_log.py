"""RocketMQ 5's TimerLog: the append-only journal of timer units, in ``<store>/timerlog``.

Every pending timer message is one 52-byte unit (big-endian, as upstream writes it): size, the position
of the previous unit of the same wheel slot (-1 for the first), magic, the time it was written, the
delay from then to its slot (an int), the CommitLog offset and size of the parked message, the Java
hash of its real topic, and 8 reserved bytes. Units of one slot form a list linked backwards through
``prev_pos``; the wheel (:mod:`broker.store.timer_wheel`) holds each slot's first and last position.

Files are fixed-size mapped files named by their start offset, as the CommitLog's. A unit never
straddles two files: when fewer than a unit and a 16-byte blank marker remain, the blank (its size is
what remains, its magic ``BLANK_MAGIC``) closes the file and the next unit starts the next file.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from broker.store.mapped_file import MappedFile, MappedFileQueue

UNIT = struct.Struct(">iqiqiqiiq")
UNIT_SIZE = UNIT.size  # 52
_BLANK = struct.Struct(">iqi")
MIN_BLANK_LEN = _BLANK.size  # 16
BLANK_MAGIC = struct.unpack(">i", struct.pack(">I", (0xBBCCDDEE ^ (1880681586 + 8)) & 0xFFFFFFFF))[0]
MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1  # the unit waits in a slot short of its due time, then is parked again (a roll)
MAGIC_DELETE = 1 << 2  # the unit cancels the messages its parked message names (TIMER_DEL_UNIQKEY)


class TimerUnit(NamedTuple):
    pos: int
    prev_pos: int
    magic: int
    write_ms: int
    delay_ms: int  # slot time - write_ms
    offset_py: int
    size_py: int
    topic_hash: int

    @property
    def slot_ms(self) -> int:
        return self.write_ms + self.delay_ms

    @property
    def deletes(self) -> bool:
        return bool(self.magic & MAGIC_DELETE)

    @property
    def rolls(self) -> bool:
        return bool(self.magic & MAGIC_ROLL)


def pack_unit(prev_pos: int, magic: int, write_ms: int, slot_ms: int, offset_py: int, size_py: int,
              topic_hash: int) -> bytes:  # fmt: skip
    return UNIT.pack(
        UNIT_SIZE, prev_pos, magic, write_ms, slot_ms - write_ms, offset_py, size_py, topic_hash, 0
    )


def magic_ok(magic: int) -> bool:
    """Upstream's check: only the four low bits may be set, and a real unit sets at least one."""
    return magic != 0 and (magic | 0xF) == 0xF


class TimerLog:
    """The timer units on disk; one writer (the timer service), any number of readers."""

    def __init__(self, directory: Path, file_size: int) -> None:
        if file_size < UNIT_SIZE + MIN_BLANK_LEN:
            raise ValueError(f"mappedFileSizeTimerLog must be at least {UNIT_SIZE + MIN_BLANK_LEN} bytes")
        self.queue = MappedFileQueue(directory, file_size)
        self._pending = bytearray()  # units appended since the last commit, in the last file
        self._pending_file: MappedFile | None = None

    def load(self) -> None:
        self.queue.load()

    @property
    def end(self) -> int:
        """The position the next unit would take if the last file had room (committed units only)."""
        return self.queue.max_offset

    # == writing ===============================================================================
    def append(self, unit: bytes) -> int:
        """Buffer one packed unit; its position. Nothing reaches the file before :meth:`commit`."""
        mf = self._pending_file
        if mf is None:
            mf = self._pending_file = self.queue.writable_file()
        if mf.size - mf.wrote - len(self._pending) < UNIT_SIZE + MIN_BLANK_LEN:
            self.commit()
            remaining = mf.size - mf.wrote
            mf.append(_BLANK.pack(remaining, 0, BLANK_MAGIC))
            mf.wrote = mf.size
            mf = self._pending_file = self.queue.writable_file()
        pos = mf.file_from + mf.wrote + len(self._pending)
        self._pending += unit
        return pos

    def commit(self) -> None:
        """Write the buffered units (one ``pwrite``)."""
        mf = self._pending_file
        if mf is not None and self._pending:
            mf.append(bytes(self._pending))
            self._pending.clear()

    def flush(self) -> None:
        self.queue.flush()

    # == reading ===============================================================================
    def unit_at(self, pos: int) -> TimerUnit | None:
        """The unit at ``pos``, or None when there is no valid unit there."""
        mf = self.queue.find(pos)
        if mf is None:
            return None
        at = pos - mf.file_from
        if at + UNIT_SIZE > mf.size:
            return None
        try:
            size, prev, magic, write_ms, delay, offset_py, size_py, topic_hash, _ = UNIT.unpack_from(
                mf.mm, at
            )
        except ValueError:  # the file was deleted by retention meanwhile
            return None
        if size != UNIT_SIZE or not magic_ok(magic):
            return None
        return TimerUnit(pos, prev, magic, write_ms, delay, offset_py, size_py, topic_hash)

    def units_from(self, pos: int) -> list[TimerUnit]:
        """Every valid unit from ``pos`` on, across file ends, until the first that is not one
        (recovery: what was written after the last checkpoint)."""
        out: list[TimerUnit] = []
        while True:
            unit = self.unit_at(pos)
            if unit is not None:
                out.append(unit)
                pos += UNIT_SIZE
                continue
            mf = self.queue.find(pos)
            if mf is None or pos - mf.file_from + MIN_BLANK_LEN > mf.size:
                return out
            _size, _zero, magic = _BLANK.unpack_from(mf.mm, pos - mf.file_from)
            if magic != BLANK_MAGIC:
                return out
            pos = mf.file_end

    # == recovery and retention ================================================================
    def cut(self, pos: int, written_end: int) -> None:
        """Forget every unit from ``pos``: the bytes up to ``written_end`` are zeroed, later files go."""
        for mf in self.queue.files:
            mf.wrote = min(mf.size, max(0, written_end - mf.file_from))
        self.queue.truncate(pos)
        self._pending_file = None

    def delete_before(self, pos: int) -> int:
        """Delete the files that end at or before ``pos`` (never the last); how many went."""
        doomed = sum(1 for mf in self.queue.files[:-1] if mf.file_end <= pos)
        return len(self.queue.delete_first(doomed)) if doomed else 0

    def close(self) -> None:
        self.commit()
        self.queue.close()
