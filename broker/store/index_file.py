"""One RocketMQ IndexFile: a memory-mapped hash table from key hash to CommitLog offset.

Layout, big-endian: a 40-byte header, ``slots`` i32 slot heads, then ``entries`` 20-byte entries
(i32 keyHash, i64 phyOffset, i32 timeDiffSeconds, i32 prevIndex). Entry 0 is never used, so an index
number of 0 means "none" and ``indexCount`` (the next free entry) starts at 1.

Crash safety: a process killed mid-put leaves its mmap writes in the page cache, so puts write in an
order that keeps every counted entry reachable: the message's entries first (at positions >= indexCount,
so uncounted), then the slot heads, then the header with indexCount before endPhyOffset (the begin values
set by a file's first message go even earlier: harmless while nothing is counted). A slot head that
points at an uncounted entry is "dangling"; it is resolved by following that entry's prevIndex back below
indexCount (see ``_resolve``), on the next put, on query and when a writer reopens the file.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from broker.store.errors import CorruptFileError

HEADER_SIZE: Final = 40
SLOT_SIZE: Final = 4
ENTRY_SIZE: Final = 20
DEFAULT_SLOTS: Final = 5_000_000
DEFAULT_ENTRIES: Final = 20_000_000

# The packers that write the map are not Final: tests/broker/store/test_index_crash.py swaps them to cut a put
# after any write, and a Final name would be bound at compile time under mypyc.
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_COUNTS = struct.Struct(">ii")  # hashSlotCount @32, indexCount @36
_HEADER: Final = struct.Struct(">qqqqii")
_TIMES: Final = struct.Struct(">qq")  # beginTimestamp @0, endTimestamp @8
_ENTRY = struct.Struct(">iqii")
_PREV_AT: Final = 16  # offset of prevIndex inside an entry
_BEGIN_TS_AT, _END_TS_AT, _BEGIN_PHY_AT, _END_PHY_AT, _COUNTS_AT = 0, 8, 16, 24, 32
_INT_MAX: Final = 0x7FFFFFFF
_ZERO_ENTRY: Final = bytes(ENTRY_SIZE)

IndexedMessage = tuple[Sequence[int], int, int]  # key hashes, CommitLog offset, store timestamp


class IndexFileError(CorruptFileError):
    """An index file that cannot be used: wrong size or an impossible header."""


@dataclass(slots=True, frozen=True)
class IndexFileInfo:
    name: str
    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int


def index_file_size(slots: int, entries: int) -> int:
    return HEADER_SIZE + slots * SLOT_SIZE + entries * ENTRY_SIZE


class IndexFile:
    """A mapped index file. Writes come from one thread; queries may run on others."""

    __slots__ = (
        "_base",
        "_fd",
        "_mm",
        "begin_phy_offset",
        "begin_timestamp",
        "end_phy_offset",
        "end_timestamp",
        "entries",
        "hash_slot_count",
        "index_count",
        "path",
        "read_only",
        "slots",
    )

    def __init__(self, path: Path, fd: int, mm: mmap.mmap, slots: int, entries: int, read_only: bool) -> None:
        self.path = path
        self._fd = fd  # kept for fdatasync: msync (mmap.flush) holds the GIL, fdatasync releases it
        self.slots = slots
        self.entries = entries
        self.read_only = read_only
        self._mm = mm
        self._base = HEADER_SIZE + slots * SLOT_SIZE
        begin_ts, end_ts, begin_phy, end_phy, used, count = _HEADER.unpack_from(mm, 0)
        self.begin_timestamp: int = begin_ts
        self.end_timestamp: int = end_ts
        self.begin_phy_offset: int = begin_phy
        self.end_phy_offset: int = end_phy
        self.hash_slot_count: int = used
        self.index_count: int = count if count > 0 else 1
        if self.index_count > entries:
            raise IndexFileError(f"index file {path}: indexCount {count} is beyond its {entries} entries")
        if not 0 <= used <= slots:
            raise IndexFileError(f"index file {path}: hashSlotCount {used} is outside 0..{slots}")

    @classmethod
    def open(cls, path: Path, slots: int, entries: int, read_only: bool = False) -> IndexFile:
        """Map an existing file; the geometry must match the file's size exactly."""
        expected = index_file_size(slots, entries)
        fd = os.open(path, os.O_RDONLY if read_only else os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size < HEADER_SIZE:
                raise IndexFileError(f"index file {path}: {size} bytes, shorter than the 40-byte header")
            if size != expected:
                raise IndexFileError(
                    f"index file {path}: {size} bytes, expected {expected} "
                    f"for {slots} hash slots and {entries} entries"
                )
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ if read_only else mmap.ACCESS_WRITE)
        except BaseException:
            os.close(fd)
            raise
        try:
            return cls(path, fd, mm, slots, entries, read_only)
        except IndexFileError:
            mm.close()
            os.close(fd)
            raise

    @classmethod
    def create(
        cls, path: Path, slots: int, entries: int, begin_phy_offset: int, begin_timestamp: int
    ) -> IndexFile:
        """Create a zero-filled (sparse) file whose begin and end values are the given ones.

        The file is built under a temporary name and renamed, so neither a crash nor a concurrent
        read-only reader ever sees a half-created index file.
        """
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.ftruncate(fd, index_file_size(slots, entries))
            header = _HEADER.pack(begin_timestamp, begin_timestamp, begin_phy_offset, begin_phy_offset, 0, 1)
            os.pwrite(fd, header, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
        return cls.open(path, slots, entries)

    @property
    def free_entries(self) -> int:
        return self.entries - self.index_count

    def put_one(self, key_hash: int, phy_offset: int, store_timestamp: int) -> None:
        """``put`` for a message with a single key."""
        self.put_messages((((key_hash,), phy_offset, store_timestamp),))

    def put(self, key_hashes: Sequence[int], phy_offset: int, store_timestamp: int) -> None:
        """Index one message under each key hash (the caller checked ``free_entries``)."""
        self.put_messages(((key_hashes, phy_offset, store_timestamp),))

    def put_messages(self, messages: Sequence[IndexedMessage]) -> None:
        """Index messages in CommitLog order, each ``(key hashes, phy offset, store timestamp)`` (the
        caller checked ``free_entries``). A batch is one put: its entries, then the slots, then the
        header, so a cut batch is repaired like a cut message and re-dispatched whole."""
        if not messages:
            return
        mm = self._mm
        count = self.index_count
        slots = self.slots
        if count == 1:
            # The first message of a file becomes its begin; written before indexCount, so a crash
            # leaves begin values that the re-put rewrites anyway.
            _hashes, first_phy, first_ts = messages[0]
            self.begin_timestamp = first_ts
            self.begin_phy_offset = first_phy
            _I64.pack_into(mm, _BEGIN_TS_AT, first_ts)
            _I64.pack_into(mm, _BEGIN_PHY_AT, first_phy)
        # Slot heads are read (and dangling ones resolved) before any entry is written, while the
        # entries of an interrupted earlier attempt are still intact to follow.
        i32 = _I32
        heads: dict[int, int] = {}
        values: list[int] = []  # the entries' fields, packed by one call
        new_slots = 0
        index = count
        diff_ts = diff = -1
        for key_hashes, phy, ts in messages:
            if ts != diff_ts:
                diff_ts, diff = ts, self._time_diff(ts)
            for key_hash in key_hashes:
                at = HEADER_SIZE + (key_hash % slots) * SLOT_SIZE
                prev = heads.get(at)
                if prev is None:
                    prev = i32.unpack_from(mm, at)[0]
                    if prev >= count or prev < 0:
                        prev = self._resolve(prev, count)
                    if prev == 0:
                        new_slots += 1
                values += (key_hash, phy, diff, prev)
                heads[at] = index
                index += 1
        _entries_packer(index - count).pack_into(mm, self._base + count * ENTRY_SIZE, *values)
        for at, head in heads.items():
            i32.pack_into(mm, at, head)
        _hashes, last_phy, last_ts = messages[-1]
        self._commit(index, new_slots, last_phy, last_ts)

    def _time_diff(self, store_timestamp: int) -> int:
        begin_ts = self.begin_timestamp
        if begin_ts <= 0:
            return 0
        diff = (store_timestamp - begin_ts) // 1000
        return diff if 0 <= diff <= _INT_MAX else (0 if diff < 0 else _INT_MAX)

    def _commit(self, count: int, new_slots: int, phy_offset: int, store_timestamp: int) -> None:
        """Write the header after the entries and slots: indexCount first, endPhyOffset last, since
        once endPhyOffset covers the message a re-dispatch skips it."""
        mm = self._mm
        self.index_count = count
        self.hash_slot_count += new_slots
        _COUNTS.pack_into(mm, _COUNTS_AT, self.hash_slot_count, count)
        self.end_timestamp = store_timestamp
        self.end_phy_offset = phy_offset
        _I64.pack_into(mm, _END_TS_AT, store_timestamp)
        _I64.pack_into(mm, _END_PHY_AT, phy_offset)

    def _resolve(self, index: int, count: int) -> int:
        """Map a slot head at or beyond ``count`` to the newest counted entry of its chain (or 0).

        Uncounted entries were written by an interrupted put whose prevIndex values are the slot heads
        it saw, so walking them leads back below ``count``. Indexes must strictly decrease, which
        bounds the walk even over garbage.
        """
        mm = self._mm
        while index >= count:
            if index >= self.entries:
                return 0
            prev: int = _I32.unpack_from(mm, self._base + index * ENTRY_SIZE + _PREV_AT)[0]
            if prev >= index:
                return 0
            index = prev
        return index if index > 0 else 0

    def repair(self) -> None:
        """Point dangling slot heads back at counted entries and clear the uncounted entries.

        Run by a writer on open: the next put may index a different message than the interrupted
        one (its slots would then not all be rewritten), so the heads are fixed from the uncounted
        entries themselves rather than left to the re-put.
        """
        mm = self._mm
        count = self.index_count
        end = count
        while end < self.entries and mm[self._entry_at(end) : self._entry_at(end + 1)] != _ZERO_ENTRY:
            end += 1
        for index in range(count, end):
            key_hash = _I32.unpack_from(mm, self._entry_at(index))[0]
            at = HEADER_SIZE + (key_hash % self.slots) * SLOT_SIZE
            head = _I32.unpack_from(mm, at)[0]
            if head >= count or head < 0:
                _I32.pack_into(mm, at, self._resolve(head, count))
        mm[self._entry_at(count) : self._entry_at(end)] = bytes(self._entry_at(end) - self._entry_at(count))

    def _entry_at(self, index: int) -> int:
        return self._base + index * ENTRY_SIZE

    def select(
        self, key_hash: int, begin: int, end: int, max_num: int, out: list[int], seen: set[int]
    ) -> None:
        """Append to ``out`` the offsets (newest first, not in ``seen``) stored under ``key_hash``
        whose store time is in [begin, end], until ``out`` holds ``max_num``.

        The header is read from the map, so a read-only reader sees what a live writer has counted.
        """
        mm = self._mm
        begin_ts, _, _, _, _, count = _HEADER.unpack_from(mm, 0)
        count = min(count, self.entries)  # read live: trust nothing beyond the file
        if count <= 1:
            return
        index: int = _I32.unpack_from(mm, HEADER_SIZE + (key_hash % self.slots) * SLOT_SIZE)[0]
        if index >= count or index < 0:
            index = self._resolve(index, count)
        base = self._base
        while index > 0:
            hash_read, phy, diff, prev = _ENTRY.unpack_from(mm, base + index * ENTRY_SIZE)
            if diff < 0:
                break
            stored = begin_ts + diff * 1000
            if hash_read == key_hash and begin <= stored <= end and phy not in seen:
                seen.add(phy)
                out.append(phy)
                if len(out) >= max_num:
                    break
            if prev <= 0 or prev >= index or stored < begin:
                break
            index = prev

    def info(self) -> IndexFileInfo:
        begin_ts, end_ts, begin_phy, end_phy, used, count = _HEADER.unpack_from(self._mm, 0)
        return IndexFileInfo(self.path.name, begin_ts, end_ts, begin_phy, end_phy, used, max(count, 1))

    def time_range(self) -> tuple[int, int]:
        """(beginTimestamp, endTimestamp) as currently in the map."""
        begin_ts, end_ts = _TIMES.unpack_from(self._mm, 0)
        return begin_ts, end_ts

    def flush(self) -> None:
        if not self.read_only:
            os.fdatasync(self._fd)  # the map's dirty pages are the file's: this writes them too

    def close(self) -> None:
        try:
            self._mm.close()
        finally:
            os.close(self._fd)


_ENTRIES_PACKERS: dict[int, struct.Struct] = {}


def _entries_packer(n: int) -> struct.Struct:
    """The packer of ``n`` consecutive entries (one call for a batch instead of one per key)."""
    packer = _ENTRIES_PACKERS.get(n)
    if packer is None:
        if len(_ENTRIES_PACKERS) >= 256:
            _ENTRIES_PACKERS.clear()
        packer = _ENTRIES_PACKERS[n] = struct.Struct(">" + "iqii" * n)
    return packer


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
