"""Fixed-size memory-mapped files named by their 20-digit start offset, and queues of them.

The CommitLog and every ConsumeQueue are such queues; readers on other threads see a file list
that is replaced, never mutated, so they never observe a half-updated list.

A store of many queues would hold a map (and a file descriptor) per ConsumeQueue file; the kernel
allows some 65 000 maps per process. ConsumeQueue files are therefore mapped on use and a
:class:`MapBudget` keeps at most so many mapped: mapping one more drops the map of one not used
lately. Dropping loses nothing: the pages are the file's own (shared) and a thread still reading
through the dropped map keeps it alive until it is done.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from bisect import bisect_right
from collections import OrderedDict
from pathlib import Path

from broker.store.errors import CorruptFileError

_PWRITE_MIN = 64  # CommitLog records and batches; not 20-byte ConsumeQueue units
# madvise advice for a map: the kernel's default read-ahead, or none (random reads)
ADVICE_NORMAL = getattr(mmap, "MADV_NORMAL", 0)
ADVICE_RANDOM = getattr(mmap, "MADV_RANDOM", 1)
_PAGE = mmap.PAGESIZE
_PROBE_STEP = 1 << 16  # bytes read at a time when looking for the end of written data
_ZEROS = memoryview(bytes(1 << 20))  # zeroing goes in chunks of this, never one giant buffer
# After a crash, written bytes past the last whole record are the interrupted append: contiguous,
# and a zero run inside them is shorter than this (ConsumeQueue units are never all zero). A
# CommitLog sets its own bound, as a record's body may be zeros.
DEFAULT_MAX_ZERO_RUN = 1 << 16


def offset_to_name(offset: int) -> str:
    return f"{offset:020d}"


def _create_sized(path: Path, size: int) -> None:
    """A file of ``size`` bytes, sized under a temporary name first: a crash never leaves a short
    file behind."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        # allocated up front: first writes to a sparse file's pages cost ~7x more
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError:  # filesystems without fallocate still get a sized file
            os.ftruncate(fd, size)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class MappedFile:
    """One file of a queue. ``wrote`` is how many bytes hold data; ``flushed`` how many reached disk."""

    __slots__ = ("_fd", "_mm", "file_from", "flushed", "path", "read_only", "size", "wrote")

    def __init__(self, path: Path, size: int, *, read_only: bool = False, create: bool = False) -> None:
        self.path = path
        self.size = size
        self.read_only = read_only
        self.file_from = int(path.name)
        if create and not path.exists():
            _create_sized(path, size)
        self._fd = os.open(path, os.O_RDONLY if read_only else os.O_RDWR)
        actual = os.fstat(self._fd).st_size
        if actual != size:
            os.close(self._fd)
            raise CorruptFileError(f"{path}: size {actual} bytes, expected {size}")
        self._mm = mmap.mmap(self._fd, size, access=mmap.ACCESS_READ if read_only else mmap.ACCESS_WRITE)
        self.wrote = 0
        self.flushed = 0

    @property
    def mm(self) -> mmap.mmap:
        """The file's bytes (a property, so that a file mapped on use can map itself here)."""
        return self._mm

    @property
    def file_end(self) -> int:
        return self.file_from + self.size

    @property
    def remaining(self) -> int:
        return self.size - self.wrote

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Copy ``data`` at the write position; returns the absolute offset it starts at.

        A CommitLog write goes through ``pwrite`` into the same page cache the map shows:
        the first write to freshly allocated blocks can stall in the filesystem for milliseconds
        (every few MiB on ext4), and a copy into the map would hold the GIL, and so every thread of the
        broker, for that long; ``pwrite`` releases it. Smaller writes (ConsumeQueue units) are copied.
        """
        pos = self.wrote
        n = len(data)
        if n >= _PWRITE_MIN:
            written = os.pwrite(self._fd, data, pos)
            if written < n:  # short writes are rare on regular files; finish through the map
                self._mm[pos + written : pos + n] = memoryview(data)[written:]
        else:
            self._mm[pos : pos + n] = data
        self.wrote = pos + n
        return self.file_from + pos

    def flush(self) -> int:
        """msync the bytes written since the last flush; returns the flushed position."""
        wrote = self.wrote
        if wrote > self.flushed and not self.read_only:
            # fdatasync writes the same shared pages msync would, but releases the GIL meanwhile
            os.fdatasync(self._fd)
            self.flushed = wrote
        return self.flushed

    def advise(self, advice: int) -> bool:
        """madvise the whole map; False where the platform has no madvise or the file is closed."""
        try:
            self._mm.madvise(advice)
        except (AttributeError, ValueError, OSError):
            return False
        return True

    def drop_cached(self, pos: int, length: int) -> None:
        """Take ``length`` flushed bytes at page-aligned ``pos`` out of the page cache: unmap them
        from this process (pages it has read stay cached while mapped), then evict them. Data is
        untouched; a later read faults them back in from disk. A no-op where the platform lacks
        either call or the file is already closed."""
        try:
            self._mm.madvise(mmap.MADV_DONTNEED, pos, length)
            os.posix_fadvise(self._fd, pos, length, os.POSIX_FADV_DONTNEED)
        except (AttributeError, ValueError, OSError):
            pass

    def close(self) -> None:
        try:
            self._mm.close()
        finally:
            os.close(self._fd)

    def destroy(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


class MapBudget:
    """At most ``limit`` files mapped at once among those sharing the budget; mapping one more drops
    the map of one not used since the last sweep (the clock algorithm: each file gets a second
    chance). Any thread may map; the lock keeps the books."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._mapped: OrderedDict[LazyMappedFile, None] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._mapped)

    def mapped(self, mf: LazyMappedFile) -> None:
        with self._lock:
            self._mapped[mf] = None
            while len(self._mapped) > self.limit:
                oldest, _ = self._mapped.popitem(last=False)
                if oldest.used:
                    oldest.used = False
                    self._mapped[oldest] = None
                else:
                    oldest.unmap()

    def forget(self, mf: LazyMappedFile) -> None:
        with self._lock:
            self._mapped.pop(mf, None)


class LazyMappedFile(MappedFile):
    """A MappedFile mapped on first use and dropped when its budget needs room; it keeps no file
    descriptor of its own (the map holds one while it lives)."""

    __slots__ = ("_advice", "_map", "budget", "used")

    def __init__(
        self, path: Path, size: int, budget: MapBudget, *, read_only: bool = False, create: bool = False
    ) -> None:
        self.path = path
        self.size = size
        self.read_only = read_only
        self.file_from = int(path.name)
        self.budget = budget
        if create and not path.exists():
            _create_sized(path, size)
        actual = os.stat(path).st_size
        if actual != size:
            raise CorruptFileError(f"{path}: size {actual} bytes, expected {size}")
        self._map: mmap.mmap | None = None
        self._advice: int | None = None
        self.used = False
        self.wrote = 0
        self.flushed = 0

    @property
    def mm(self) -> mmap.mmap:
        """The map, made now when the budget dropped it (or it was never made)."""
        m = self._map
        if m is None:
            fd = os.open(self.path, os.O_RDONLY if self.read_only else os.O_RDWR)
            try:
                m = mmap.mmap(fd, self.size, access=mmap.ACCESS_READ if self.read_only else mmap.ACCESS_WRITE)
            finally:
                os.close(fd)
            if self._advice is not None:
                with contextlib.suppress(AttributeError, OSError):
                    m.madvise(self._advice)
            self._map = m
            self.budget.mapped(self)
        self.used = True
        return m

    def unmap(self) -> None:
        self._map = None  # unmapped once no reader holds it any more

    def append(self, data: bytes | bytearray | memoryview) -> int:
        pos = self.wrote
        self.mm[pos : pos + len(data)] = data
        self.wrote = pos + len(data)
        return self.file_from + pos

    def flush(self) -> int:
        """fdatasync through a descriptor of the moment: it writes the file's dirty pages, whichever
        map dirtied them."""
        wrote = self.wrote
        if wrote > self.flushed and not self.read_only:
            fd = os.open(self.path, os.O_RDWR)
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)
            self.flushed = wrote
        return self.flushed

    def advise(self, advice: int) -> bool:
        self._advice = advice
        m = self._map
        if m is None:
            return True
        try:
            m.madvise(advice)
        except (AttributeError, ValueError, OSError):
            return False
        return True

    def drop_cached(self, pos: int, length: int) -> None:
        m = self._map
        try:
            if m is not None:
                m.madvise(mmap.MADV_DONTNEED, pos, length)
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, pos, length, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        except (AttributeError, ValueError, OSError):
            pass

    def close(self) -> None:
        self.budget.forget(self)
        self._map = None


class MappedFileQueue:
    """The ordered files of one directory, each ``file_size`` bytes; with a ``budget`` they are
    mapped on use (:class:`LazyMappedFile`)."""

    def __init__(
        self,
        directory: Path,
        file_size: int,
        *,
        read_only: bool = False,
        budget: MapBudget | None = None,
        max_zero_run: int = DEFAULT_MAX_ZERO_RUN,
    ) -> None:
        self.directory = directory
        self.file_size = file_size
        self.read_only = read_only
        self.budget = budget
        self.max_zero_run = max_zero_run
        self.files: list[MappedFile] = []
        # starts of files loaded from disk: their ``wrote`` is the file size, as their real end is
        # unknown until recovery truncates them
        self._end_unknown: set[int] = set()
        self._starts: list[int] = []
        self.advice: int | None = None  # madvise'd on every file, those mapped later included
        self.cached_from = 0  # bytes before this absolute offset were taken out of the page cache

    def load(self) -> None:
        """Map every file of the directory; a name that is not a 20-digit offset is refused."""
        if not self.directory.is_dir():
            return
        names = []
        for p in sorted(self.directory.iterdir()):
            if p.name.endswith(".tmp"):
                if not self.read_only:
                    p.unlink()  # a file whose creation was cut short
            elif not p.name.startswith("."):
                names.append(p.name)
        files: list[MappedFile] = []
        for name in names:
            if len(name) != 20 or not name.isdigit():
                raise CorruptFileError(f"{self.directory / name}: not a store file name (20 digits expected)")
            mf = self._open(self.directory / name, create=False)
            if mf.file_from % self.file_size:
                mf.close()
                raise CorruptFileError(
                    f"{mf.path}: offset is not a multiple of the file size {self.file_size}"
                )
            mf.wrote = mf.flushed = self.file_size
            if self.advice is not None:
                mf.advise(self.advice)
            files.append(mf)
        self._set(files)
        self._end_unknown = {mf.file_from for mf in files}

    def _open(self, path: Path, *, create: bool) -> MappedFile:
        if self.budget is None:
            return MappedFile(path, self.file_size, read_only=self.read_only, create=create)
        return LazyMappedFile(path, self.file_size, self.budget, read_only=self.read_only, create=create)

    def _set(self, files: list[MappedFile]) -> None:
        self.files = files
        self._starts = [f.file_from for f in files]

    @property
    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    @property
    def min_offset(self) -> int:
        return self.files[0].file_from if self.files else 0

    @property
    def max_offset(self) -> int:
        last = self.last
        return last.file_from + last.wrote if last else 0

    @property
    def flushed_offset(self) -> int:
        last = self.last
        return last.file_from + last.flushed if last else 0

    def create_file(self, start: int) -> MappedFile:
        self.directory.mkdir(parents=True, exist_ok=True)
        mf = self._open(self.directory / offset_to_name(start), create=True)
        if self.advice is not None:
            mf.advise(self.advice)
        self._set([*self.files, mf])
        return mf

    def set_advice(self, advice: int) -> int:
        """madvise every file now and every file created later; how many files took the advice."""
        self.advice = advice
        return sum(mf.advise(advice) for mf in self.files)

    def writable_file(self, start_if_empty: int = 0) -> MappedFile:
        """The last file if it has room, else a new one after it."""
        last = self.last
        if last is None:
            return self.create_file(start_if_empty - start_if_empty % self.file_size)
        if last.remaining == 0:
            return self.create_file(last.file_end)
        return last

    def find(self, offset: int) -> MappedFile | None:
        """The file holding absolute ``offset``, or None."""
        i = bisect_right(self._starts, offset) - 1
        if i < 0:
            return None
        files = self.files
        if i >= len(files):
            return None
        mf = files[i]
        return mf if offset < mf.file_end else None

    def flush(self) -> int:
        """Flush every file that has unflushed bytes; returns the flushed end offset."""
        for mf in self.files:
            if mf.wrote > mf.flushed:
                mf.flush()
        return self.flushed_offset

    def drop_cached(self, below: int) -> None:
        """Take every byte before absolute ``below`` (rounded down to a page) that is still cached
        out of the page cache; bytes at or after the flushed position are never touched."""
        below = min(below, self.flushed_offset)
        below -= below % _PAGE
        start = max(self.cached_from, self.min_offset)
        if below <= start:
            return
        for mf in self.files:
            lo, hi = max(start, mf.file_from), min(below, mf.file_end)
            if lo < hi:
                mf.drop_cached(lo - mf.file_from, hi - lo)
        self.cached_from = below

    def _data_end(self, mf: MappedFile, pos: int) -> int:
        """Where written bytes at or after ``pos`` end in ``mf`` (relative): exactly ``wrote`` when
        this process wrote the file; for a file loaded from disk, the end of the non-zero bytes that
        follow ``pos`` with no zero run longer than ``max_zero_run`` (so a restart reads the torn
        tail and that much more, never the rest of a preallocated file)."""
        if mf.file_from not in self._end_unknown:
            return max(pos, mf.wrote)
        mm = mf.mm
        end = at = pos
        while at < mf.wrote and at - end <= self.max_zero_run:
            stop = min(mf.wrote, at + _PROBE_STEP)
            nonzero = len(mm[at:stop].rstrip(b"\0"))
            if nonzero:
                end = at + nonzero
            at = stop
        return end

    def written_end(self, offset: int) -> int:
        """The absolute end of the bytes written at or after ``offset`` in the last file."""
        last = self.last
        if last is None:
            return offset
        return last.file_from + self._data_end(last, max(0, min(offset - last.file_from, last.size)))

    def truncate(self, offset: int) -> None:
        """Forget everything at or after ``offset``: later files are deleted, the written bytes of
        the tail are zeroed (a chunk at a time).

        A read-only queue only moves its positions; nothing on disk changes.
        """
        self.cached_from = min(self.cached_from, offset)
        keep: list[MappedFile] = []
        for mf in self.files:
            if mf.file_from >= offset:
                self._end_unknown.discard(mf.file_from)
                if self.read_only:
                    mf.close()
                else:
                    mf.destroy()
                continue
            if offset < mf.file_end:
                pos = offset - mf.file_from
                if mf.wrote > pos and not self.read_only:
                    end = self._data_end(mf, pos)
                    if end > pos:
                        mm = mf.mm
                        for at in range(pos, end, len(_ZEROS)):
                            n = min(len(_ZEROS), end - at)
                            mm[at : at + n] = _ZEROS[:n]
                        mf.wrote, mf.flushed = end, pos
                        mf.flush()
                mf.wrote = mf.flushed = pos
                self._end_unknown.discard(mf.file_from)
            keep.append(mf)
        self._set(keep)

    def delete_first(self, count: int = 1) -> list[MappedFile]:
        """Remove the oldest ``count`` files (retention); never the last one."""
        doomed = self.files[: max(0, min(count, len(self.files) - 1))]
        if doomed:
            self._set(self.files[len(doomed) :])
            for mf in doomed:
                mf.destroy()
        return doomed

    def close(self) -> None:
        for mf in self.files:
            mf.close()
        self._set([])

    def destroy(self) -> None:
        for mf in self.files:
            mf.destroy()
        self._set([])
        if self.directory.is_dir() and not any(self.directory.iterdir()):
            self.directory.rmdir()
