"""The queue of a compaction log: RocketMQ's batch ConsumeQueue units over a sparse set of offsets.

A unit is 46 bytes: ``i64 position, i32 size, i64 tagsCode, i64 storeTime, i64 queueOffset,
i16 batchNum, i32 compactedOffset (-1), i32 reserved``. Each file is named after the compaction log
file whose records it lists (the same 20-digit start offset), so a queue file and its log file are
created, compacted and deleted together. Queue offsets rise but have gaps where compaction removed
messages, so a reader searches by offset instead of computing a position. A unit whose position is -1
closes a file: its log file is full.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path
from typing import Final, NamedTuple

from broker.store.mapped_file import MappedFile, offset_to_name

UNIT: Final = 46
_UNIT: Final = struct.Struct(">qiqqqhii")
_END: Final = _UNIT.pack(-1, 0, 0, 0, 0, 0, -1, 0)
_NO_COMPACTED_OFFSET: Final = -1


class SparseUnit(NamedTuple):
    position: int  # of the record in the compaction log
    size: int
    tags_code: int
    store_timestamp: int
    queue_offset: int


class SparseFile:
    """One queue file: its map, how many units it holds and whether an end unit closed it."""

    __slots__ = ("closed", "count", "mf")

    def __init__(self, mf: MappedFile) -> None:
        self.mf = mf
        self.count = 0
        self.closed = False

    @property
    def name(self) -> str:
        return self.mf.path.name

    def unit(self, index: int) -> SparseUnit:
        return SparseUnit(*_UNIT.unpack_from(self.mf.mm, index * UNIT)[:5])

    def first_offset(self) -> int:
        return self.unit(0).queue_offset

    def last_offset(self) -> int:
        return self.unit(self.count - 1).queue_offset

    def index_of(self, queue_offset: int) -> int:
        """The first unit whose queue offset is ``queue_offset`` or more (``count`` when none)."""
        lo, hi = 0, self.count
        mm = self.mf.mm
        while lo < hi:
            mid = (lo + hi) // 2
            if struct.unpack_from(">q", mm, mid * UNIT + 28)[0] < queue_offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def recover(self) -> None:
        """Count the valid units; a zero unit or a torn one ends them, an end unit closes the file."""
        mm = self.mf.mm
        count = 0
        last_offset = -1
        for index in range(self.mf.size // UNIT):
            pos, size, _tags, _ts, q_off, batch, _c, _r = _UNIT.unpack_from(mm, index * UNIT)
            if pos == -1:
                self.closed = True
                break
            if size <= 0 or batch <= 0 or pos < 0 or q_off <= last_offset:
                break
            last_offset = q_off
            count += 1
        self.count = count
        end = (count + self.closed) * UNIT
        if end < self.mf.size and not self.mf.read_only and any(mm[end : end + UNIT]):
            mm[end : self.mf.size] = bytes(self.mf.size - end)  # a torn unit never reads back
        self.mf.wrote = self.mf.flushed = end


class SparseQueue:
    """The queue files of one compaction log, oldest first. The list is replaced, never changed in
    place, so a reader on another thread always sees a whole one."""

    def __init__(self, directory: Path, file_size: int, *, read_only: bool = False) -> None:
        self.directory = directory
        self.file_size = file_size - file_size % UNIT
        self.read_only = read_only
        self.files: list[SparseFile] = []

    def load(self) -> None:
        files: list[SparseFile] = []
        if self.directory.is_dir():
            for path in sorted(self.directory.iterdir()):
                if path.is_file() and len(path.name) == 20 and path.name.isdigit():
                    sf = SparseFile(MappedFile(path, self.file_size, read_only=self.read_only))
                    sf.recover()
                    files.append(sf)
                elif path.name.endswith(".tmp") and not self.read_only:
                    path.unlink()
        self.files = files

    # -- geometry ------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return sum(f.count for f in self.files)

    def min_offset(self) -> int | None:
        first = next((f for f in self.files if f.count), None)
        return None if first is None else first.first_offset()

    def last_unit(self) -> SparseUnit | None:
        last = next((f for f in reversed(self.files) if f.count), None)
        return None if last is None else last.unit(last.count - 1)

    def max_offset_of(self, name: str) -> int:
        """The last queue offset listed in file ``name`` (-1 when it lists none)."""
        sf = next((f for f in self.files if f.name == name), None)
        return sf.last_offset() if sf is not None and sf.count else -1

    # -- writing -------------------------------------------------------------------------------
    def create(self, start: int) -> SparseFile:
        self.directory.mkdir(parents=True, exist_ok=True)
        sf = SparseFile(MappedFile(self.directory / offset_to_name(start), self.file_size, create=True))
        self.files = [*self.files, sf]
        return sf

    def has_room(self) -> bool:
        """Whether the last file takes one more unit and still has room for its end unit."""
        last = self.files[-1] if self.files else None
        return last is not None and not last.closed and last.mf.wrote + 2 * UNIT <= last.mf.size

    def put(self, unit: SparseUnit) -> None:
        sf = self.files[-1]
        sf.mf.append(_UNIT.pack(*unit, 1, _NO_COMPACTED_OFFSET, 0))
        sf.count += 1

    def close_last(self) -> None:
        if self.files and not self.files[-1].closed:
            self.files[-1].mf.append(_END)
            self.files[-1].closed = True

    # -- reading -------------------------------------------------------------------------------
    def iter_from(self, queue_offset: int) -> Iterator[SparseUnit]:
        """Units whose queue offset is ``queue_offset`` or more, in order."""
        files = [f for f in self.files if f.count]  # a file just created is empty
        firsts = [f.first_offset() for f in files]
        start = max(0, bisect_left(firsts, queue_offset + 1) - 1)
        for sf in files[start:]:
            index = sf.index_of(queue_offset)
            while index < sf.count:
                yield sf.unit(index)
                index += 1

    def units_of(self, name: str) -> Iterator[SparseUnit]:
        sf = next((f for f in self.files if f.name == name), None)
        if sf is not None:
            for index in range(sf.count):
                yield sf.unit(index)

    # -- upkeep --------------------------------------------------------------------------------
    def drop(self, names: set[str]) -> None:
        """Forget and delete the files named (their log files are gone)."""
        doomed = [f for f in self.files if f.name in names]
        self.files = [f for f in self.files if f.name not in names]
        for sf in doomed:
            sf.mf.destroy()

    def flush(self) -> None:
        for sf in self.files:
            sf.mf.flush()

    def close(self) -> None:
        for sf in self.files:
            sf.mf.close()
        self.files = []

    def destroy(self) -> None:
        for sf in self.files:
            sf.mf.destroy()
        self.files = []
        if self.directory.is_dir() and not any(self.directory.iterdir()):
            os.rmdir(self.directory)
