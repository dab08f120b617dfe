"""The store's set of IndexFiles under ``<store>/index/``: message-key indexing, lookup and retention.

Each message is indexed under ``topic#UNIQ_KEY`` and ``topic#k`` for every key in its KEYS property;
lookups return CommitLog offsets newest first, and the caller re-checks the real key (hashes collide).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple, Protocol

from broker.protocol.javahash import index_key_hash, java_hash
from broker.store.index_file import DEFAULT_ENTRIES, DEFAULT_SLOTS, IndexedMessage, IndexFile, IndexFileInfo

if TYPE_CHECKING:
    # machine ints when compiled with mypyc (the hash arithmetic stays off the heap); plain ints otherwise
    from mypy_extensions import i64

_NAME: Final = re.compile(r"\d{17}")
_NAME_FORMAT: Final = "%Y%m%d%H%M%S"
_MASK: Final = 0xFFFFFFFF
_POW31: Final = tuple(pow(31, n, 1 << 32) for n in range(256))
_UNIQ_TAIL: Final = 12  # hex digits of a UNIQ_KEY that change from message to message
_UNIQ_HEADS_MAX: Final = 4096  # producers remembered; the cache restarts when full
_TAIL_POW: Final = _POW31[_UNIQ_TAIL]


class IndexableMessage(Protocol):
    """What indexing reads of a dispatched message (``DispatchRequest`` has these fields)."""

    @property
    def topic(self) -> str: ...
    @property
    def uniq_key(self) -> str | None: ...
    @property
    def keys(self) -> str | None: ...
    @property
    def commitlog_offset(self) -> int: ...
    @property
    def store_timestamp(self) -> int: ...


class _Message(NamedTuple):
    topic: str
    uniq_key: str | None
    keys: str | None
    commitlog_offset: int
    store_timestamp: int


def index_file_name(epoch_ms: int) -> str:
    """``yyyyMMddHHmmssSSS`` in local time, as RocketMQ names index files."""
    return f"{dt.datetime.fromtimestamp(epoch_ms // 1000):{_NAME_FORMAT}}{epoch_ms % 1000:03d}"


def _name_after(name: str) -> str:
    later = dt.datetime.strptime(name[:14], _NAME_FORMAT) + dt.timedelta(milliseconds=int(name[14:]) + 1)
    return f"{later:{_NAME_FORMAT}}{later.microsecond // 1000:03d}"


class IndexService:
    """Index files oldest to newest; only the newest one is written.

    One thread puts; ``flush`` may run on another, and queries, ``files`` and retention may run
    concurrently with puts (a lock guards the file list, never the put fast path).
    """

    def __init__(
        self,
        index_dir: Path,
        slots: int = DEFAULT_SLOTS,
        entries: int = DEFAULT_ENTRIES,
        read_only: bool = False,
    ) -> None:
        if slots <= 0 or entries <= 1:
            raise ValueError(f"an index file needs slots > 0 and entries > 1, got {slots} and {entries}")
        self.index_dir = index_dir
        self.slots = slots
        self.entries = entries
        self.read_only = read_only
        self._files: list[IndexFile] = []
        self._current: IndexFile | None = None  # the newest file when writable: the only one written
        self._lock = threading.Lock()
        # Held while msync runs outside ``_lock``, so retention never unmaps a file being flushed.
        self._flush_lock = threading.Lock()
        self._unflushed: list[IndexFile] = []  # full files rolled over since the last flush
        self._prefix_hashes: dict[str, int] = {}  # topic -> unsigned Java hash of "topic#"
        self._uniq_heads: dict[str, int] = {}
        self._indexed_phy_offset = -1

    def end_phy_offset(self) -> int | None:
        """CommitLog offset of the newest indexed message (None if none): recovery re-dispatches from
        the message after it, and ``put_message`` skips anything at or before it."""
        return self._indexed_phy_offset if self._indexed_phy_offset >= 0 else None

    def load(self, clean_shutdown: bool = True, checkpoint_index_ts: int = 0) -> None:
        """Open the existing files, oldest first.

        After an abnormal shutdown a writer deletes the files begun after the checkpoint's
        indexMsgTimestamp (nothing in them was flushed; recovery re-dispatches their messages).
        RocketMQ also deletes the file that straddles the checkpoint; we keep it, because puts are
        safe against a killed process and its flushed entries would not be re-dispatched.
        ``end_phy_offset`` then tells recovery where indexing stopped.
        """
        if not self.read_only:
            self.index_dir.mkdir(parents=True, exist_ok=True)
            for stale in self.index_dir.glob("*.tmp"):
                if _NAME.fullmatch(stale.stem):
                    stale.unlink()
        elif not self.index_dir.is_dir():
            return
        names = sorted(name for name in os.listdir(self.index_dir) if _NAME.fullmatch(name))
        files: list[IndexFile] = []
        try:
            for name in names:
                files.append(IndexFile.open(self.index_dir / name, self.slots, self.entries, self.read_only))
        except BaseException:
            for opened in files:
                opened.close()
            raise
        if not (clean_shutdown or self.read_only):
            for i, f in enumerate(files):
                if f.begin_timestamp > checkpoint_index_ts:
                    for dropped in files[i:]:
                        dropped.close()
                        dropped.path.unlink()
                    del files[i:]
                    break
        if files and not self.read_only:
            files[-1].repair()
        with self._lock:
            self._files = files
            self._current = files[-1] if files and not self.read_only else None
        self._indexed_phy_offset = self._newest_indexed()

    def _newest_indexed(self) -> int:
        if not self._files:
            return -1
        newest = self._files[-1]
        # A freshly rolled file is still empty but starts where its full predecessor ended.
        if newest.index_count > 1 or len(self._files) > 1:
            return newest.end_phy_offset
        return -1

    def put_message(
        self, topic: str, uniq_key: str | None, keys: str | None, phy_offset: int, store_ts: int
    ) -> None:
        """Index one dispatched message; a re-dispatched one (at or before ``end_phy_offset()``)
        is skipped, so recovery may replay from any earlier point."""
        self.put_messages((_Message(topic, uniq_key, keys, phy_offset, store_ts),))

    def put_messages(self, messages: Iterable[IndexableMessage]) -> None:
        """``put_message`` for each message, in CommitLog order, written to the current file as one put
        (split where the file rolls over)."""
        indexed = self._indexed_phy_offset
        current = self._current
        free = 0 if current is None else current.free_entries
        batch: list[IndexedMessage] = []
        for msg in messages:
            phy_offset = msg.commitlog_offset
            if phy_offset <= indexed:
                continue
            hashes = self._hashes(msg.topic, msg.uniq_key, msg.keys)
            if not hashes:
                continue
            if current is None or free < len(hashes):
                if batch and current is not None:
                    self._put_batch(current, batch)
                    batch = []
                current = self._roll(current)
                free = current.free_entries
                # A message never spans files, so one with more keys than a whole file keeps the first ones.
                del hashes[free:]
            batch.append((hashes, phy_offset, msg.store_timestamp))
            free -= len(hashes)
            indexed = phy_offset
        if batch and current is not None:
            self._put_batch(current, batch)

    def _put_batch(self, current: IndexFile, batch: list[IndexedMessage]) -> None:
        current.put_messages(batch)
        self._indexed_phy_offset = batch[-1][1]

    def _hashes(self, topic: str, uniq_key: str | None, keys: str | None) -> list[int]:
        """Index hashes of a message: ``topic#UNIQ_KEY`` first, then ``topic#k`` for each key."""
        prefix = self._prefix_hashes.get(topic)
        if prefix is None:
            prefix = self._prefix_hashes[topic] = java_hash(topic + "#") & _MASK
        hashes = [self._uniq_hash(prefix, uniq_key)] if uniq_key else []
        if keys:
            if " " in keys:
                hashes += [_key_hash(prefix, key) for key in keys.split(" ") if key]
            else:
                hashes.append(_key_hash(prefix, keys))
        return hashes

    def _uniq_hash(self, prefix: i64, uniq_key: str) -> i64:
        """``_key_hash`` for a UNIQ_KEY. Its head (producer IP, pid, classloader hash) is the same
        for every message of a producer and only the last 12 hex digits (time, counter) change, so the
        head's hash is cached and only the tail is hashed per message."""
        if len(uniq_key) <= _UNIQ_TAIL or not uniq_key.isascii():
            return _key_hash(prefix, uniq_key)
        head = uniq_key[:-_UNIQ_TAIL]
        cached = self._uniq_heads.get(head)
        if cached is None:
            if len(self._uniq_heads) >= _UNIQ_HEADS_MAX:
                self._uniq_heads.clear()
            cached = self._uniq_heads[head] = java_hash(head) & _MASK
        head_hash: i64 = cached
        h: i64 = (prefix * _pow31(len(head)) + head_hash) & _MASK
        h = (h * _TAIL_POW + java_hash(uniq_key[-_UNIQ_TAIL:])) & _MASK
        return h if h < 0x80000000 else (0x100000000 - h) & 0x7FFFFFFF  # as in _key_hash

    def _roll(self, full: IndexFile | None) -> IndexFile:
        if self.read_only:
            raise PermissionError(f"index {self.index_dir} is open read-only")
        if full is not None and full.index_count == 1:
            return full  # already empty: the message is too big for any file
        name = index_file_name(time.time_ns() // 1_000_000)
        if full is not None and name <= full.path.name:
            name = _name_after(full.path.name)
        begin_phy, begin_ts = (full.end_phy_offset, full.end_timestamp) if full is not None else (0, 0)
        self.index_dir.mkdir(parents=True, exist_ok=True)
        created = IndexFile.create(self.index_dir / name, self.slots, self.entries, begin_phy, begin_ts)
        with self._lock:
            self._files.append(created)
            self._current = created
            if full is not None:
                self._unflushed.append(full)
        return created

    def query(self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int) -> list[int]:
        """CommitLog offsets of messages indexed under ``topic#key`` stored in [begin_ts, end_ts]
        (milliseconds), newest first, without duplicates, at most ``max_num``."""
        key_hash = index_key_hash(f"{topic}#{key}")
        found: list[int] = []
        seen: set[int] = set()
        if max_num <= 0:
            return found
        with self._lock:
            for f in reversed(self._files):
                file_begin, file_end = f.time_range()
                if begin_ts <= file_end and end_ts >= file_begin:
                    f.select(key_hash, begin_ts, end_ts, max_num, found, seen)
                if file_begin < begin_ts or len(found) >= max_num:
                    break
        return found

    def flush(self) -> int:
        """msync the newest file and any filled since the last flush; returns the newest file's
        endTimestamp as of the call (every put up to it is now on disk), 0 with no files. The header
        is already in the map: each put writes it."""
        with self._flush_lock:
            with self._lock:
                if not self._files:
                    return 0
                newest = self._files[-1]
                flushed_ts = newest.end_timestamp
                pending, self._unflushed = self._unflushed, []
            for f in pending:
                f.flush()
            newest.flush()
        return flushed_ts

    def delete_files_before(self, min_phy_offset: int) -> int:
        """Retention: delete the oldest files whose endPhyOffset < ``min_phy_offset`` (never the newest);
        returns how many were deleted."""
        with self._flush_lock, self._lock:
            doomed = 0
            while doomed < len(self._files) - 1 and self._files[doomed].end_phy_offset < min_phy_offset:
                doomed += 1
            gone, self._files = self._files[:doomed], self._files[doomed:]
            self._unflushed = [f for f in self._unflushed if f not in gone]
            for f in gone:
                f.close()
                f.path.unlink()
        return len(gone)

    def files(self) -> list[IndexFileInfo]:
        """Header of every file, oldest first, as currently in the maps."""
        with self._lock:
            return [f.info() for f in self._files]

    def close(self) -> None:
        """Unmap every file (call ``flush`` first to make the data durable)."""
        with self._flush_lock, self._lock:
            for f in self._files:
                f.close()
            self._files = []
            self._current = None
            self._unflushed = []


def _pow31(units: int) -> i64:
    return _POW31[units] if units < 256 else pow(31, units, 1 << 32)


def _key_hash(prefix: i64, key: str) -> i64:
    """IndexFile hash of ``prefix_string + key`` from the prefix's hash: Java's hash of a concatenation
    is h(a) * 31**len(b) + h(b) (mod 2**32), len counted in UTF-16 units."""
    units = len(key) if key.isascii() else len(key.encode("utf-16-le")) // 2
    h: i64 = (prefix * _pow31(units) + java_hash(key)) & _MASK
    # abs() of the signed value, with Integer.MIN_VALUE mapped to 0
    return h if h < 0x80000000 else (0x100000000 - h) & 0x7FFFFFFF
