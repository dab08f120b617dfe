"""The compaction log of one queue of a ``cleanup.policy=COMPACTION`` topic, in RocketMQ's layout.

``compaction/compactionLog/<topic>/<queueId>/`` holds CommitLog-format records (each record's
physical offset rewritten to its place in this log, an 8-byte blank marker closing a full file) and
``compaction/compactionCq/<topic>/<queueId>/`` the sparse batch-ConsumeQueue files that list them, one
per log file and named alike. Every message of the queue is copied in (by the compaction thread,
behind the send path); compaction rewrites every file but the one being written, keeping for each key
only its newest message (a newest message with an empty body deletes the key).

A compaction writes its result under ``compacting/`` beside the files it replaces, then records the
swap in ``compacting/SWAP`` before touching them: a crash before that marker leaves the old files
whole (the partial result is thrown away on load), a crash after it is finished on load. Either way
every key keeps its newest value.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from broker.protocol import properties as message_properties
from broker.protocol.message import BLANK_MAGIC, BLANK_SIZE, POS_PHYSICAL_OFFSET, RecordError, read_layout
from broker.protocol.properties import decode_properties
from broker.store.commitlog import CommitLog
from broker.store.mapped_file import MappedFile
from broker.store.sparse_queue import SparseQueue, SparseUnit

log = logging.getLogger(__name__)

COMPACTING: Final = "compacting"
SWAP_MARKER: Final = "SWAP"
_I64: Final = struct.Struct(">q")
_BLANK: Final = struct.Struct(">ii")
# memory one key takes in the key map (an MD5 digest and an offset in a dict, measured): what
# maxOffsetMapSize is divided by, so the setting bounds the map's memory (RocketMQ's packed map: 24 bytes)
OFFSET_MAP_ENTRY: Final = 136
PACE_EVERY: Final = 256  # messages between two chances to rest


def log_file_size(cq_file_size: int, wanted: int) -> int:
    """The compaction log file size for a queue file size, as RocketMQ derives it: a multiple of
    the queue file size near ``wanted``, at least five of them."""
    n, m = divmod(wanted, cq_file_size)
    if n < 5:
        return cq_file_size * 5
    return n * cq_file_size if 0 < m < cq_file_size >> 1 else (n + 1) * cq_file_size


def record_keys(buf: bytes | memoryview) -> str | None:
    """The KEYS property of a stored record (None when it has none or is not a record)."""
    try:
        layout = read_layout(buf, 0, len(buf))
    except RecordError:
        return None
    text = bytes(buf[layout.props_pos : layout.props_pos + layout.props_len]).decode("utf-8", "replace")
    keys = decode_properties(text).get(message_properties.KEYS)
    return keys if keys and keys.strip() else None


def _key_digest(keys: str) -> bytes:
    return hashlib.md5(keys.encode("utf-8"), usedforsecurity=False).digest()


class KeyedLog:
    """A compaction log's records and their sparse queue: written together, read together."""

    def __init__(self, log_dir: Path, cq_dir: Path, log_size: int, cq_size: int, *, read_only: bool) -> None:
        self.log = CommitLog(log_dir, log_size, read_only=read_only)
        self.cq = SparseQueue(cq_dir, cq_size, read_only=read_only)

    def load(self) -> None:
        """Map both and cut what a crash left half written: a log tail no unit lists, files of one
        without the other."""
        self.log.load()
        self.cq.load()
        log_names = {mf.path.name for mf in self.log.files.files}
        self.cq.drop({sf.name for sf in self.cq.files} - log_names)
        end = self.log.min_offset
        if self.cq.files:
            last = self.cq.files[-1]
            start = last.mf.file_from
            if last.closed:
                end = start + self.log.file_size
            elif last.count:
                unit = last.unit(last.count - 1)
                end = unit.position + unit.size
            else:
                end = start
        self.log.files.truncate(end)  # files past it go, the written tail is zeroed (read-only: skipped)
        log_names = {mf.path.name for mf in self.log.files.files}
        self.cq.drop({sf.name for sf in self.cq.files} - log_names)

    @property
    def bytes_on_disk(self) -> int:
        return len(self.log.files.files) * self.log.file_size + len(self.cq.files) * self.cq.file_size

    def append(self, record: bytes | memoryview, queue_offset: int, tags_code: int, store_ts: int) -> None:
        """Copy one record in, with its physical offset set to where it lands."""
        size = len(record)
        last = self.log.files.last
        if last is None or not self.cq.has_room() or size + BLANK_SIZE > last.remaining:
            self._roll()
            last = self.log.files.last
            assert last is not None
        position = last.file_from + last.wrote
        copy = bytearray(record)
        _I64.pack_into(copy, POS_PHYSICAL_OFFSET, position)
        last.append(copy)
        self.cq.put(SparseUnit(position, size, tags_code, store_ts, queue_offset))

    def _roll(self) -> None:
        """Close the current pair of files (blank marker, end unit) and start the next pair."""
        files = self.log.files
        last = files.last
        if last is not None:
            close_file(last)
            self.cq.close_last()
        start = files.max_offset
        self.cq.create(start)
        files.create_file(start)

    def records(self, name: str) -> Iterator[tuple[SparseUnit, bytes]]:
        """The units of log file ``name`` with their records."""
        for unit in self.cq.units_of(name):
            data = self.log.read(unit.position, unit.size)
            if data is not None:
                yield unit, data

    def flush(self) -> None:
        self.log.flush()
        self.cq.flush()

    def close(self) -> None:
        self.log.close()
        self.cq.close()


@dataclass(slots=True, frozen=True)
class SwapPlan:
    """The marker of a compaction's swap: the files replaced, the compacted ones, the phase reached
    (``delete``: the old files may still be there; ``move``: they are gone)."""

    replace: list[str]
    add: list[str]
    phase: str

    def to_json(self) -> str:
        return json.dumps({"replace": self.replace, "add": self.add, "phase": self.phase})

    @classmethod
    def from_json(cls, text: str) -> SwapPlan:
        data = json.loads(text)
        names = [n for n in data["replace"] if _is_file_name(n)]
        return cls(names, [n for n in data["add"] if _is_file_name(n)], str(data["phase"]))


def _is_file_name(name: object) -> bool:
    return isinstance(name, str) and len(name) == 20 and name.isdigit()


@dataclass(slots=True)
class CompactionRun:
    """What one compaction of a queue did."""

    files: int
    messages_in: int
    messages_kept: int
    bytes_before: int
    bytes_after: int
    last_offset: int  # the newest queue offset the key map covered


@dataclass(slots=True)
class Progress:
    """A compaction log's state, for the operator."""

    topic: str
    queue_id: int
    fed_offset: int  # queue offsets below it are in the compaction log
    messages: int  # how many the compaction log holds
    disk_bytes: int
    compacted_offset: int  # the last queue offset compaction has covered (-1: none yet)
    runs: int


class CompactionLog:
    """One queue's compaction log: its files, what was copied in, the compactions."""

    def __init__(
        self,
        log_root: Path,
        cq_root: Path,
        topic: str,
        queue_id: int,
        *,
        log_size: int,
        cq_size: int,
        read_only: bool = False,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.log_dir = log_root / topic / str(queue_id)
        self.cq_dir = cq_root / topic / str(queue_id)
        self.log_size = log_size
        self.cq_size = cq_size
        self.read_only = read_only
        self.current = KeyedLog(self.log_dir, self.cq_dir, log_size, cq_size, read_only=read_only)
        self.lock = threading.Lock()  # reads against the swap of compacted files
        self.fed_offset = 0
        self.runs = 0

    # == life cycle ============================================================================
    def load(self) -> None:
        if not self.read_only:
            self._finish_or_drop_swap()
        self.current.load()
        last = self.current.cq.last_unit()
        self.fed_offset = 0 if last is None else last.queue_offset + 1

    def _finish_or_drop_swap(self) -> None:
        """A compaction cut short: finish its swap when the marker says the result was complete,
        else delete the partial result."""
        marker = self.log_dir / COMPACTING / SWAP_MARKER
        if marker.exists():
            self._apply_swap(SwapPlan.from_json(marker.read_text()))
        self._drop_compacting()

    def _drop_compacting(self) -> None:
        for folder in (self.log_dir / COMPACTING, self.cq_dir / COMPACTING):
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        self.current.flush()
        self.current.close()

    def destroy(self) -> None:
        self.current.close()
        for folder in (self.log_dir, self.cq_dir):
            shutil.rmtree(folder, ignore_errors=True)

    # == feeding ===============================================================================
    def feed(self, record: bytes | memoryview, queue_offset: int, tags_code: int, store_ts: int) -> bool:
        """Copy a message of the queue in; False (and nothing written) when it has no key."""
        if queue_offset < self.fed_offset:
            return False
        self.fed_offset = queue_offset + 1
        if record_keys(record) is None:
            return False
        if len(record) + BLANK_SIZE > self.log_size:
            log.warning(
                "%s/%d: message %d (%d bytes) is larger than a compaction log file; it is not kept",
                self.topic, self.queue_id, queue_offset, len(record),
            )  # fmt: skip
            return False
        self.current.append(record, queue_offset, tags_code, store_ts)
        return True

    def skip_to(self, queue_offset: int) -> None:
        """Messages below ``queue_offset`` are gone from the queue before they were copied in."""
        self.fed_offset = max(self.fed_offset, queue_offset)

    # == reading ===============================================================================
    def min_offset(self) -> int | None:
        return self.current.cq.min_offset()

    def read(
        self,
        offset: int,
        max_msgs: int,
        byte_limit: int,
        tag_filter: Callable[[int], bool] | None,
        record_filter: Callable[[bytes], bool] | None,
        scan_limit: int,
    ) -> tuple[list[int], list[bytes], int]:
        """The kept messages from queue ``offset`` on: their queue offsets, their records and the
        offset to read next (the fed offset once the kept ones run out)."""
        offsets: list[int] = []
        records: list[bytes] = []
        total = 0
        next_offset = self.fed_offset
        with self.lock:
            records_log = self.current.log
            for scanned, unit in enumerate(self.current.cq.iter_from(offset)):
                full = len(offsets) >= max_msgs or (offsets and total + unit.size > byte_limit)
                if full or scanned >= scan_limit:
                    next_offset = unit.queue_offset
                    break
                if tag_filter is not None and not tag_filter(unit.tags_code):
                    continue
                data = records_log.read(unit.position, unit.size)
                if data is None or (record_filter is not None and not record_filter(data)):
                    continue
                offsets.append(unit.queue_offset)
                records.append(data)
                total += unit.size
        return offsets, records, next_offset

    # == compaction ============================================================================
    def compact(
        self, position: int, map_capacity: int, pace: Callable[[], None] = lambda: None
    ) -> CompactionRun | None:
        """Rewrite every file but the one being written, keeping each key's newest message.

        ``position``: the newest queue offset an earlier compaction covered; only files holding
        newer messages feed the key map. The map holds ``map_capacity`` keys at most: files that do
        not fit wait for the next run (their messages are kept meanwhile). ``pace`` is called every
        few hundred messages (it may rest). None when nothing is new.
        """
        current = self.current
        closed = [mf.path.name for mf in current.log.files.files[:-1]]
        fresh = [name for name in closed if current.cq.max_offset_of(name) > position]
        if not fresh:
            return None
        newest: dict[bytes, int] = {}
        last_offset = position
        for name in fresh:
            file_keys: dict[bytes, int] = {}
            file_last = last_offset
            for index, (unit, data) in enumerate(current.records(name)):
                if index % PACE_EVERY == 0:
                    pace()
                keys = record_keys(data)
                if keys is not None and unit.queue_offset > position:
                    file_keys[_key_digest(keys)] = unit.queue_offset
                    file_last = unit.queue_offset
            if newest and len(newest.keys() | file_keys.keys()) > map_capacity:
                break
            newest.update(file_keys)
            last_offset = file_last
        self._drop_compacting()
        out = KeyedLog(
            self.log_dir / COMPACTING, self.cq_dir / COMPACTING, self.log_size, self.cq_size, read_only=False
        )
        first_start = int(closed[0])
        kept = seen = 0
        tail_start = int(current.log.files.files[-1].path.name)
        try:
            for name in closed:
                for unit, data in current.records(name):
                    seen += 1
                    if seen % PACE_EVERY == 0:
                        pace()
                    if not self._keep(unit, data, newest, last_offset):
                        continue
                    if out.log.files.last is None:
                        out.cq.create(first_start)
                        out.log.files.create_file(first_start)
                    out.append(data, unit.queue_offset, unit.tags_code, unit.store_timestamp)
                    kept += 1
                    if out.log.files.max_offset >= tail_start:
                        raise OverflowError("the compacted files would reach the file being written")
            if out.log.files.last is not None:
                close_file(out.log.files.last)
                out.cq.close_last()
            out.flush()
        except OverflowError:
            out.close()
            self._drop_compacting()
            return None
        bytes_before = len(closed) * (self.log_size + self.cq_size)
        bytes_after = out.bytes_on_disk
        new_names = [mf.path.name for mf in out.log.files.files]
        out.close()
        plan = SwapPlan(closed, new_names, "delete")
        _write_synced(self.log_dir / COMPACTING / SWAP_MARKER, plan.to_json())
        with self.lock:
            current.close()
            self._apply_swap(plan)
            self._drop_compacting()
            current.load()
        run = CompactionRun(len(closed), seen, kept, bytes_before, bytes_after, last_offset)
        self.runs += 1
        return run

    @staticmethod
    def _keep(unit: SparseUnit, data: bytes, newest: dict[bytes, int], last_offset: int) -> bool:
        if unit.queue_offset > last_offset:
            return True  # newer than the key map: kept until a later run covers it
        keys = record_keys(data)
        if keys is None:
            return False
        latest = newest.get(_key_digest(keys), -1)
        has_body = _body_length(data) > 0
        return unit.queue_offset >= latest and has_body

    def _apply_swap(self, plan: SwapPlan) -> None:
        """Replace the files of ``plan`` by the compacted ones: first delete the old, then (that
        phase recorded) move the new up. Each step may be repeated after a crash."""
        marker = self.log_dir / COMPACTING / SWAP_MARKER
        if plan.phase == "delete":
            for name in plan.replace:
                (self.log_dir / name).unlink(missing_ok=True)
                (self.cq_dir / name).unlink(missing_ok=True)
            _fsync_dir(self.log_dir)
            _fsync_dir(self.cq_dir)
            plan = SwapPlan(plan.replace, plan.add, "move")
            _write_synced(marker, plan.to_json())
        for name in plan.add:
            for folder in (self.log_dir, self.cq_dir):
                src = folder / COMPACTING / name
                if src.exists():
                    os.replace(src, folder / name)
        _fsync_dir(self.log_dir)
        _fsync_dir(self.cq_dir)
        marker.unlink(missing_ok=True)

    # == reporting =============================================================================
    def progress(self, compacted_offset: int) -> Progress:
        cq = self.current.cq
        return Progress(
            self.topic,
            self.queue_id,
            self.fed_offset,
            cq.count,
            self.current.bytes_on_disk,
            compacted_offset,
            self.runs,
        )

    def flush(self) -> None:
        self.current.flush()


def close_file(mf: MappedFile) -> None:
    """End a log file: a blank marker saying how many bytes are left, the rest counted as written."""
    if mf.remaining >= BLANK_SIZE:
        mf.append(_BLANK.pack(mf.remaining, BLANK_MAGIC))
    mf.wrote = mf.size


def _body_length(data: bytes) -> int:
    try:
        return read_layout(data, 0, len(data)).body_len
    except RecordError:
        return 0


def _write_synced(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    if not path.is_dir():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
