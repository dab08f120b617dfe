"""The store facade the broker uses: append, read, search, recover, flush and retention.

Blocking by design: the broker calls it from worker threads. One lock orders appends, so queue
offsets and CommitLog positions are assigned exactly once; readers need no lock because files,
queues and file lists are only ever replaced, never changed under them.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import struct
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from enum import Enum
from itertools import accumulate, compress, pairwise
from operator import add, ne
from pathlib import Path

from broker.protocol import properties as message_properties
from broker.protocol.message import (
    MAX_PROPERTIES_BYTES,
    MAX_RETRY_TOPIC_BYTES,
    MAX_TOPIC_BYTES,
    MessageRecord,
    RecordError,
    decode_record,
    encode_record,
    host_flags,
    pack_host,
    record_length,
)
from broker.protocol.names import is_group_topic
from broker.protocol.properties import encode_properties
from broker.store.checkpoint import Checkpoint, CheckpointValues, read_checkpoint
from broker.store.commitlog import CommitLog, ScanResult
from broker.store.compaction_log import CompactionLog
from broker.store.compaction_store import CompactionStore
from broker.store.config import StoreConfig
from broker.store.consume_queue import Boundary, ConsumeQueue
from broker.store.dispatch import (
    ConsumeQueueTable,
    Dispatcher,
    DispatchRequest,
    TagsCodeRule,
    in_consume_queue,
    request_from_record,
)
from broker.store.errors import NotAStoreError
from broker.store.flush import FlushService
from broker.store.index_service import IndexService
from broker.store.mapped_file import ADVICE_NORMAL, ADVICE_RANDOM, MappedFile
from broker.store.retention import Retention, RetentionReport
from broker.store.store_lock import StoreLock

log = logging.getLogger(__name__)


class PutStatus(Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetStatus(Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


_LOOPBACK_HOST = b"\x7f\x00\x00\x01\x00\x00\x00\x00"
CACHE_DROP_STEP = 8 << 20  # commitLogCacheWindow evicts in steps at least this big: few syscalls


# init=False with a hand-written __init__: mypyc compiles that one, while the one dataclass would
# generate stays interpreted, a Python call per message appended.
@dataclass(slots=True, init=False)
class PutMessage:
    """One message to append. ``born_host`` is a packed socket address (see ``pack_host``)."""

    topic: str
    queue_id: int
    body: bytes
    properties: dict[str, str]
    flag: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    reconsume_times: int
    prepared_transaction_offset: int
    store_timestamp: int
    # ``properties`` encoded, where the send path already holds that text (and then leaves
    # ``properties`` alone); None: the store encodes ``properties``
    properties_text: str | None

    def __init__(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: dict[str, str],
        flag: int = 0,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        born_host: bytes = _LOOPBACK_HOST,
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
        store_timestamp: int = 0,  # 0 = now; a commit keeps its half message's time
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.body = body
        self.properties = properties
        self.flag = flag
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        self.store_timestamp = store_timestamp
        self.properties_text = None


@dataclass(slots=True, init=False)
class PutResult:
    status: PutStatus
    remark: str
    offsets: list[int]
    sizes: list[int]
    queue_offsets: list[int]
    store_timestamp: int
    end_offset: int
    store_host_raw: bytes

    def __init__(
        self,
        status: PutStatus,
        remark: str = "",
        offsets: list[int] | None = None,
        sizes: list[int] | None = None,
        queue_offsets: list[int] | None = None,
        store_timestamp: int = 0,
        end_offset: int = 0,
        store_host_raw: bytes = b"",
    ) -> None:
        self.status = status
        self.remark = remark
        self.offsets = [] if offsets is None else offsets
        self.sizes = [] if sizes is None else sizes
        self.queue_offsets = [] if queue_offsets is None else queue_offsets
        self.store_timestamp = store_timestamp
        self.end_offset = end_offset
        self.store_host_raw = store_host_raw

    @property
    def ok(self) -> bool:
        return self.status is PutStatus.PUT_OK

    @property
    def msg_ids(self) -> list[str]:
        """Offset MessageIds of the appended records (built on demand: most callers need one)."""
        prefix = self.store_host_raw.hex().upper()
        # one pack and one hex for all of them: a format spec per id costs more
        digits = struct.pack(f">{len(self.offsets)}q", *self.offsets).hex().upper()
        return [prefix + digits[i : i + 16] for i in range(0, len(digits), 16)]


@dataclass(slots=True)
class GetResult:
    """Found records are kept as the CommitLog slices that hold them (one slice when they are
    consecutive there, as they usually are), so a pull answer's body needs no copy or join."""

    status: GetStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    queue_offsets: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # of each record, in order
    chunks: list[bytes] = field(default_factory=list)  # the records back to back
    _records: list[bytes] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def count(self) -> int:
        return len(self.sizes)

    @property
    def body(self) -> bytes:
        return self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)

    @property
    def records(self) -> list[bytes]:
        """Each record on its own (split on first use)."""
        if self._records is None:
            records: list[bytes] = []
            sizes = iter(self.sizes)
            for chunk in self.chunks:
                pos = 0
                while pos < len(chunk):
                    size = next(sizes)
                    records.append(chunk[pos : pos + size])
                    pos += size
            self._records = records
        return self._records


@dataclass(slots=True)
class RecoveryReport:
    clean_shutdown: bool
    scanned_from: int
    commitlog_end: int
    truncated_bytes: int
    redispatched: int
    problem: str | None
    seconds: float


@functools.cache
def _in_memory_bytes() -> int:
    """40% of the RAM, as accessMessageInMemoryMaxRatio defaults to."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.4)
    except (ValueError, OSError):
        return 1 << 30


def default_disk_usage(path: Path) -> float:
    """Used fraction of the disk as ``df`` and RocketMQ count it: used / (used + available).

    Blocks reserved for root count as neither: on a disk with a large reservation, "total minus
    available" would look far fuller than it is and make retention delete files early.
    """
    usage = shutil.disk_usage(path)  # used = total - all free blocks; free = blocks available to us
    entire = usage.used + usage.free
    return usage.used / entire if entire else 0.0


# A message ready to be written: its topic and properties as bytes, and its record size.
_Encoded = tuple[PutMessage, bytes, bytes, int]


class MessageStore:
    def __init__(
        self,
        config: StoreConfig,
        *,
        store_host: str = "127.0.0.1:10911",
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
        disk_usage: Callable[[Path], float] = default_disk_usage,
    ) -> None:
        self.config = config
        self.root = config.store_path
        self.read_only = read_only
        self.clock = clock
        self.store_host_raw = pack_host(store_host)
        self.commitlog = CommitLog(
            self.root / "commitlog",
            config.mapped_file_size_commit_log,
            read_only=read_only,
            max_body_size=config.max_message_size,
        )
        if not config.data_read_ahead_enable:
            self.commitlog.files.advice = ADVICE_RANDOM
        self.queues = ConsumeQueueTable(
            self.root / "consumequeue",
            config.mapped_file_size_consume_queue_units,
            read_only=read_only,
            max_mapped=config.max_mapped_consume_queue_files,
        )
        self.index: IndexService | None = (
            IndexService(
                self.root / "index", config.max_hash_slot_num, config.max_index_num, read_only=read_only
            )
            if config.message_index_enable
            else None
        )
        self.dispatcher = Dispatcher(self.queues, self.index)
        self.tags_rule = TagsCodeRule(config.delay_levels_ms)
        self.retention = Retention(config, clock=clock, disk_usage=disk_usage)
        self.compaction = CompactionStore(
            config, self.queues, self.commitlog, read_only=read_only, busy=self._taking_sends
        )
        self.topic_reserve_hours: dict[str, int] = {}  # reserve.time of the topics that set one
        self._lock = StoreLock(self.root)
        self._write_lock = threading.Lock()
        self._queue_offsets: dict[tuple[str, int], int] = {}
        self._checkpoint: Checkpoint | None = None
        self._flush: FlushService | None = None
        self._housekeeper: threading.Thread | None = None
        self._stop = threading.Event()
        self.running = False
        self.disk_full = False
        self.begin_time_in_lock = 0.0  # monotonic start of the append holding the write lock, 0 = none
        self.recovery: RecoveryReport | None = None
        self.put_count = 0
        self.put_bytes = 0
        self._last_put_ts = 0
        self._cq_flushed_ts = 0
        self.replica = False  # a slave's store: only replicated bytes are appended
        self._replica_end = -1  # where the last complete replicated record ends (-1 = not yet known)

    # == life cycle ============================================================================
    def start(self) -> RecoveryReport:
        """Lock the store, recover it and start the flush and clean-up threads."""
        if self.read_only:
            raise ValueError("a read-only store is opened with open_read_only()")
        clean = self._lock.acquire()
        try:
            self.config.write_geometry()
            self._checkpoint = Checkpoint(self.root / "checkpoint")
            self.recovery = self._recover(clean, self._checkpoint.values)
        except BaseException:
            self._lock.release(clean=False)
            raise
        self._flush = FlushService(
            self._flush_commitlog,
            self._flush_rest,
            interval_ms=self.config.flush_interval_commit_log_ms,
            rest_interval_ms=self.config.flush_interval_consume_queue_ms,
        )
        self._flush.flushed_offset = self.commitlog.max_offset
        self._flush.start()
        self._housekeeper = threading.Thread(target=self._housekeeping, name="store-clean", daemon=True)
        self._housekeeper.start()
        self.compaction.start()
        self.running = True
        return self.recovery

    @classmethod
    def open_read_only(cls, root: Path, *, trust_queues: bool = False) -> MessageStore:
        """Open any RocketMQ store folder for reading, broker running or not; nothing is written.

        ``trust_queues``: when the store was closed cleanly or a broker of this project holds it now
        (its pages are what this process reads), its ConsumeQueues index only whole records, so only
        the CommitLog past their end is checked, not the newest files whole (~1 s per GiB): what a
        planner needs. Otherwise, and by default, the CommitLog is checked as a writer's recovery would.
        """
        if not root.is_dir():
            raise NotAStoreError(f"{root}: no such folder")
        if not (root / "commitlog").is_dir():
            raise NotAStoreError(f"{root}: not a RocketMQ store (no commitlog folder)")
        store = cls(StoreConfig.for_existing(root), read_only=True)
        clean = not (root / "abort").exists()
        trusted = trust_queues and (clean or store._lock.held_by_a_writer())
        store.recovery = store._recover(clean, read_checkpoint(root / "checkpoint"), trust_queues=trusted)
        return store

    def shutdown(self) -> None:
        """Flush everything, write the checkpoint and remove the abort marker."""
        if self.read_only:
            self._close_files()
            return
        if not self.running:
            return
        self.running = False
        self._stop.set()
        if self._housekeeper is not None:
            self._housekeeper.join()
        self.compaction.shutdown()
        if self._flush is not None:
            self._flush.stop()
        self._close_files()
        if self._checkpoint is not None:
            self._checkpoint.close()
        self._lock.release(clean=True)

    def _close_files(self) -> None:
        if self.read_only:
            self.compaction.shutdown()
        self.commitlog.close()
        self.queues.close()
        if self.index is not None:
            self.index.close()

    # == recovery ==============================================================================
    def _recover(self, clean: bool, cp: CheckpointValues, *, trust_queues: bool = False) -> RecoveryReport:
        started = time.monotonic()
        self.commitlog.load()
        self.queues.load()
        if self.index is not None:
            self.index.load(clean, cp.index_msg_timestamp)
        files = self.commitlog.files.files
        if not files:
            scan_from = 0
        elif clean:
            scan_from = files[max(0, len(files) - 3)].file_from
        else:
            scan_from = files[0].file_from
            for mf in reversed(files):
                ts = self.commitlog.store_timestamp_at(mf.file_from)
                if ts is not None and ts <= cp.min_timestamp:
                    scan_from = mf.file_from
                    break
        if trust_queues:
            limit = self.commitlog.max_offset
            ends = [cq.indexed_end(limit) for cq in self.queues.queues.values()]
            scan_from = max([scan_from, *ends])
        scan: ScanResult = self.commitlog.scan(scan_from, check_body_crc=self.config.check_crc_on_recover)
        end = scan.end if files else 0
        # Bytes written past the valid end are a crash's interrupted append, which a writer reports
        # after a crash (reading only them and a bounded run of zeros after, never the rest of the
        # preallocated file); a read-only open (a live broker's store, Spark) looks only when the scan
        # stopped at a broken record (which, trusting the queues of a running broker, is the append
        # it is making).
        needs_tail = not trust_queues and (scan.problem is not None or not (clean or self.read_only))
        written_end = self.commitlog.files.written_end(end) if needs_tail else end
        self.commitlog.truncate(end)
        for cq in list(self.queues.queues.values()):
            cq.recover(self.commitlog.min_offset, end)
        redispatch_from = scan_from if not clean else self._dispatched_upto(scan_from)
        if self.index is not None:
            # the index may have dropped files the checkpoint did not cover: rebuild from its end
            indexed = self.index.end_phy_offset()
            redispatch_from = min(redispatch_from, self.commitlog.min_offset if indexed is None else indexed)
        redispatch_from = max(redispatch_from, self.commitlog.min_offset)
        # a read-only open shows the files as they are; only a writer rebuilds what is missing
        redispatched = 0 if self.read_only else self._redispatch(redispatch_from)
        self._queue_offsets = {key: cq.max_offset for key, cq in self.queues.queues.items()}
        self.compaction.load()
        report = RecoveryReport(
            clean_shutdown=clean,
            scanned_from=scan_from,
            commitlog_end=end,
            truncated_bytes=max(0, written_end - end),
            redispatched=redispatched,
            problem=None
            if scan.problem is None
            else f"{scan.problem.file} @ {scan.problem.offset}: {scan.problem.reason}",
            seconds=time.monotonic() - started,
        )
        if report.problem and not self.read_only:
            log.warning("recovery truncated the CommitLog at %d (%s)", end, report.problem)
        return report

    def _dispatched_upto(self, scan_from: int) -> int:
        """After a clean shutdown: where dispatch stopped (re-dispatch is idempotent from earlier)."""
        ends = [cq.max_physic_end for cq in self.queues.queues.values() if cq.max_physic_end >= 0]
        return min(max(ends) if ends else scan_from, self.commitlog.max_offset)

    def _redispatch(self, start: int) -> int:
        if start >= self.commitlog.max_offset:
            return 0
        count = 0
        batch: list[DispatchRequest] = []
        rule = self.tags_rule
        for mf, pos, layout in self.commitlog.walk(start, check_body_crc=False):
            batch.append(request_from_record(mf.mm, pos, layout, mf.file_from + pos, rule))
            if len(batch) >= 1024:
                self.dispatcher.dispatch(batch)
                count += len(batch)
                batch = []
        self.dispatcher.dispatch(batch)
        return count + len(batch)

    # == appending =============================================================================
    def _check(self, msg: PutMessage, topic_raw: bytes, props_raw: bytes) -> tuple[PutStatus, str] | None:
        limit = MAX_RETRY_TOPIC_BYTES if is_group_topic(msg.topic) else MAX_TOPIC_BYTES
        if not topic_raw or len(topic_raw) > limit:
            return PutStatus.MESSAGE_ILLEGAL, f"topic length {len(topic_raw)} is not within 1..{limit} bytes"
        if len(msg.body) > self.config.max_message_size:
            return (
                PutStatus.MESSAGE_ILLEGAL,
                f"message body of {len(msg.body)} bytes exceeds the maximum {self.config.max_message_size}",
            )
        if len(props_raw) > MAX_PROPERTIES_BYTES:
            return (
                PutStatus.PROPERTIES_SIZE_EXCEEDED,
                f"properties of {len(props_raw)} bytes exceed the maximum {MAX_PROPERTIES_BYTES}",
            )
        return None

    def _refusal(self) -> PutResult | None:
        """Why the store takes no write now, or None."""
        if not self.running:
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, "the store is not running")
        if self.replica:
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, "the store is a slave's: it takes no writes")
        if self.disk_full:
            return PutResult(
                PutStatus.SERVICE_NOT_AVAILABLE,
                f"disk of {self.root} is more than {self.config.disk_space_warning_level_ratio}% full; "
                "writes are refused until space is freed",
            )
        return None

    def _encode(self, msgs: Sequence[PutMessage], store_host: bytes) -> list[_Encoded] | PutResult:
        """Each message's topic and properties bytes and record size, or why the batch is refused."""
        encoded: list[_Encoded] = []
        for msg in msgs:
            topic_raw = msg.topic.encode("utf-8")
            text = msg.properties_text
            props_raw = (encode_properties(msg.properties) if text is None else text).encode("utf-8")
            problem = self._check(msg, topic_raw, props_raw)
            if problem is not None:
                return PutResult(problem[0], problem[1])
            size = record_length(
                host_flags(msg.born_host, store_host), len(msg.body), len(topic_raw), len(props_raw)
            )
            if size + 8 > self.commitlog.file_size:
                return PutResult(
                    PutStatus.MESSAGE_ILLEGAL, f"message of {size} bytes does not fit a CommitLog file"
                )
            encoded.append((msg, topic_raw, props_raw, size))
        return encoded

    def append(self, msgs: Sequence[PutMessage]) -> PutResult:
        """Append messages (a batch is atomic: all are checked before any is written)."""
        return self.append_all((msgs,))[0]

    def append_all(self, batches: Sequence[Sequence[PutMessage]]) -> list[PutResult]:
        """Append several batches (the sends that reached the writer together) under one lock, one
        CommitLog write and one dispatch. Each batch is atomic and checked on its own: a refused one
        leaves the others to be written."""
        refused = self._refusal()
        if refused is not None:
            return [PutResult(refused.status, refused.remark) for _ in batches]
        store_host = self.store_host_raw
        results: list[PutResult] = []
        accepted: list[tuple[PutResult, list[_Encoded]]] = []
        for msgs in batches:
            encoded = self._encode(msgs, store_host)
            if isinstance(encoded, PutResult):
                results.append(encoded)
            else:
                result = PutResult(PutStatus.PUT_OK, store_host_raw=store_host)
                results.append(result)
                accepted.append((result, encoded))
        if not accepted:
            return results
        rule = self.tags_rule
        requests: list[DispatchRequest] = []
        with self._timed_write_lock():
            now = int(self.clock() * 1000)
            offsets = self._queue_offsets
            chunk: list[bytes] = []
            pending = 0  # bytes in ``chunk``, not yet copied into ``chunk_file``
            room = 0  # bytes ``chunk_file`` had left when the chunk began
            chunk_file = None
            written = 0
            for result, encoded in accepted:
                result.store_timestamp = now
                offsets_out = result.offsets
                sizes_out = result.sizes
                queue_offsets_out = result.queue_offsets
                for msg, topic_raw, props_raw, size in encoded:
                    topic = msg.topic
                    queue_id = msg.queue_id
                    sys_flag = msg.sys_flag
                    in_cq = in_consume_queue(sys_flag)
                    key = (topic, queue_id)
                    queue_offset = offsets.get(key, 0) if in_cq else 0
                    if chunk_file is None or size + 8 > room - pending:
                        if chunk and chunk_file is not None:
                            chunk_file.append(b"".join(chunk))
                            chunk = []
                            pending = 0
                        chunk_file = self.commitlog.writable(size)
                        room = chunk_file.remaining
                    phys = chunk_file.file_from + chunk_file.wrote + pending
                    store_ts = msg.store_timestamp or now
                    chunk.append(
                        encode_record(
                            topic=topic_raw,
                            queue_id=queue_id,
                            flag=msg.flag,
                            queue_offset=queue_offset,
                            physical_offset=phys,
                            sys_flag=sys_flag,
                            born_timestamp=msg.born_timestamp,
                            born_host=msg.born_host,
                            store_timestamp=store_ts,
                            store_host=store_host,
                            reconsume_times=msg.reconsume_times,
                            prepared_transaction_offset=msg.prepared_transaction_offset,
                            body=msg.body,
                            properties=props_raw,
                        )
                    )
                    pending += size
                    written += size
                    if in_cq:
                        offsets[key] = queue_offset + 1
                    props = msg.properties
                    requests.append(
                        DispatchRequest(
                            topic,
                            queue_id,
                            phys,
                            size,
                            rule(topic, props, store_ts),
                            store_ts,
                            queue_offset,
                            props.get(message_properties.KEYS),
                            props.get(message_properties.UNIQ_KEY),
                            sys_flag,
                        )
                    )
                    offsets_out.append(phys)
                    sizes_out.append(size)
                    queue_offsets_out.append(queue_offset)
                # its own end, so that a sync flush or a slave releases it without waiting for the rest
                result.end_offset = (
                    offsets_out[-1] + sizes_out[-1] if offsets_out else self.commitlog.max_offset
                )
            if chunk and chunk_file is not None:
                chunk_file.append(b"".join(chunk))
            self.dispatcher.dispatch(requests)
            self.put_count += len(requests)
            self.put_bytes += written
            self._last_put_ts = now
        return results

    @contextlib.contextmanager
    def _timed_write_lock(self) -> Iterator[None]:
        """The write lock, noting since when it is held (CommitLog.beginTimeInLock)."""
        with self._write_lock:
            self.begin_time_in_lock = time.monotonic()
            try:
                yield
            finally:
                self.begin_time_in_lock = 0.0

    def lock_held_ms(self) -> float:
        """How long the running append has held the write lock; 0 when none runs (isOSPageCacheBusy)."""
        begin = self.begin_time_in_lock
        return (time.monotonic() - begin) * 1000 if begin else 0.0

    def flushed(self, end_offset: int) -> Future[bool]:
        """Completes once ``end_offset`` is on disk (sync flush group commit)."""
        assert self._flush is not None
        return self._flush.request(end_offset)

    def put_messages(self, msgs: Sequence[PutMessage], *, wait_store: bool = True) -> PutResult:
        """Append, and under SYNC_FLUSH wait for the disk (FLUSH_DISK_TIMEOUT when it is too slow)."""
        result = self.append(msgs)
        if result.ok and self.config.sync_flush and wait_store:
            try:
                done = self.flushed(result.end_offset).result(self.config.sync_flush_timeout_ms / 1000)
            except FutureTimeout:
                done = False
            if not done:
                result.status = PutStatus.FLUSH_DISK_TIMEOUT
                result.remark = f"flush to disk took longer than {self.config.sync_flush_timeout_ms} ms"
        return result

    # == replication (slave side) ==============================================================
    def append_replicated(self, offset: int, data: bytes | memoryview) -> list[DispatchRequest]:
        """Append CommitLog bytes a master sent at ``offset`` and dispatch the records they complete.

        A record split across frames waits in the CommitLog past the dispatched end until its last
        byte arrives. Returns what was dispatched (so held pulls can be woken).
        """
        cl = self.commitlog
        with self._write_lock:
            if not cl.files.files and offset:
                cl.files.create_file(offset - offset % cl.file_size)  # the master no longer has offset 0
            if self._replica_end < 0:
                self._replica_end = cl.max_offset
            cl.append_raw(offset, data)
            end = self._replica_end
            rule = self.tags_rule
            requests: list[DispatchRequest] = []
            for mf, pos, layout in cl.walk(end, check_body_crc=False):
                requests.append(request_from_record(mf.mm, pos, layout, mf.file_from + pos, rule))
                end = mf.file_from + pos + layout.total_size
            self.dispatcher.dispatch(requests)
            self._replica_end = end
            if requests:
                self._last_put_ts = requests[-1].store_timestamp
        return requests

    def truncate_replica(self, offset: int) -> int:
        """Cut the CommitLog at record boundary ``offset`` and the queue units past it; bytes cut."""
        with self._write_lock:
            cut = max(0, self.commitlog.max_offset - offset)
            self.commitlog.truncate(offset)
            for cq in list(self.queues.queues.values()):
                cq.recover(self.commitlog.min_offset, offset)
            self._replica_end = min(self._replica_end, offset)
        return cut

    def promote(self) -> int:
        """A replica becomes the writer (controller mode): a record cut short at the tail goes, the next
        queue offsets come from the queues; returns where the CommitLog ends."""
        with self._write_lock:
            if 0 <= self._replica_end < self.commitlog.max_offset:
                self.commitlog.truncate(self._replica_end)
            self._queue_offsets = {key: cq.max_offset for key, cq in self.queues.queues.items()}
            self.replica = False
            self._replica_end = -1
            return self.commitlog.max_offset

    def demote(self) -> None:
        """The writer becomes a replica: from now on only replicated bytes are appended."""
        with self._write_lock:
            self.replica = True
            self._replica_end = -1

    # == flushing and housekeeping =============================================================
    def _flush_commitlog(self) -> int:
        """Flush the CommitLog, then take what fell ``commitLogCacheWindow`` behind the flushed
        position out of the page cache, a few MiB at a time: consumers mostly read near the head,
        and where every new page of cache costs a fresh page of memory (a VM whose host reclaims
        freed guest memory, a container whose limit counts the cache) the broker then reuses the
        pages it gave back instead of growing."""
        flushed = self.commitlog.flush()
        window = self.config.commit_log_cache_window
        if window > 0 and flushed - window >= self.commitlog.files.cached_from + CACHE_DROP_STEP:
            self.commitlog.files.drop_cached(flushed - window)
        return flushed

    def _flush_rest(self) -> None:
        self.queues.flush()
        index_ts = self.index.flush() if self.index is not None else 0
        cp = self._checkpoint
        if cp is not None:
            ts = self._last_put_ts
            cp.values.physic_msg_timestamp = ts
            cp.values.logics_msg_timestamp = ts
            if index_ts:
                cp.values.index_msg_timestamp = index_ts
            cp.flush()

    def _taking_sends(self) -> bool:
        """Whether a message was appended within the last second."""
        return self.clock() * 1000 - self._last_put_ts < 1000

    def set_topic_policies(self, compaction: frozenset[str], reserve_hours: dict[str, int]) -> None:
        """The topics whose ``cleanup.policy`` is COMPACTION and the ``reserve.time`` (hours) of those
        that set one; the broker tells the store whenever a topic changes."""
        self.compaction.topics = compaction
        self.topic_reserve_hours = reserve_hours

    def _housekeeping(self) -> None:
        interval = self.config.clean_resource_interval_ms / 1000
        while not self._stop.wait(interval):
            try:
                self.clean_expired()
            except Exception:  # a failed clean-up must not stop the broker; it is retried
                log.exception("store clean-up failed")

    def set_read_ahead(self, enabled: bool) -> int:
        """Let the kernel read ahead in the CommitLog maps (MADV_NORMAL) or not (MADV_RANDOM, for
        brokers whose consumers mostly read old messages at random), for every file now and every file
        created later; how many files took the advice (0 where the platform has no madvise)."""
        self.config.data_read_ahead_enable = enabled
        advised = self.commitlog.files.set_advice(ADVICE_NORMAL if enabled else ADVICE_RANDOM)
        log.info("CommitLog read-ahead %s on %d files", "on" if enabled else "off", advised)
        return advised

    def clean_expired(self, *, manual: bool = False) -> RetentionReport:
        """Apply the retention rules once (also run every ``clean_resource_interval_ms``)."""
        report = self.retention.run(self.commitlog, manual=manual)
        self.disk_full = report.disk_full
        self.expire_by_topic()
        if report.deleted_files:
            min_offset = self.commitlog.min_offset
            for cq in list(self.queues.queues.values()):
                cq.delete_expired(min_offset)
            if self.index is not None:
                self.index.delete_files_before(min_offset)
        return report

    def expire_by_topic(self) -> int:
        """Apply each topic's ``reserve.time``: its queues no longer serve messages stored longer ago,
        and their ConsumeQueue files holding only such messages go. CommitLog files are shared by
        every topic and follow ``fileReservedTime`` alone (as in RocketMQ's tiered store, where a
        topic's reserve time governs only files of its own). How many queues moved their first offset."""
        now_ms = int(self.clock() * 1000)
        moved = 0
        for topic, hours in list(self.topic_reserve_hours.items()):
            if hours <= 0:
                continue
            for cq in self.queues.of_topic(topic):
                since = now_ms - hours * 3_600_000
                cut = cq.search_by_time(since, Boundary.LOWER, self.commitlog.store_timestamp_at)
                if cut > cq.min_offset:
                    cq.expire_before(cut)
                    moved += 1
        return moved

    # == reading ===============================================================================
    def consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.queues.get(topic, queue_id)

    def max_offset(self, topic: str, queue_id: int) -> int:
        cq = self.queues.get(topic, queue_id)
        clog = self.compaction.log_for(topic, queue_id)
        return max(cq.max_offset if cq else 0, clog.fed_offset if clog is not None else 0)

    def min_offset(self, topic: str, queue_id: int) -> int:
        clog = self.compaction.log_for(topic, queue_id)
        kept = clog.min_offset() if clog is not None else None
        if kept is not None:
            return kept
        cq = self.queues.get(topic, queue_id)
        return cq.min_offset if cq else 0

    def store_time_at(self, topic: str, queue_id: int, queue_offset: int) -> int | None:
        cq = self.queues.get(topic, queue_id)
        unit = cq.unit_at(queue_offset) if cq else None
        return None if unit is None else self.commitlog.store_timestamp_at(unit.commitlog_offset)

    def earliest_store_time(self, topic: str, queue_id: int) -> int | None:
        return self.store_time_at(topic, queue_id, self.min_offset(topic, queue_id))

    def offset_by_time(
        self, topic: str, queue_id: int, timestamp: int, boundary: Boundary = Boundary.LOWER
    ) -> int:
        cq = self.queues.get(topic, queue_id)
        if cq is None:
            return 0
        return cq.search_by_time(timestamp, boundary, self.commitlog.store_timestamp_at)

    def in_page_cache(self, topic: str, queue_id: int, offset: int) -> bool:
        """Whether a read of the queue from ``offset`` stays within the newest CommitLog bytes, which
        the page cache holds (RocketMQ's accessMessageInMemoryMaxRatio): such a read cannot block."""
        cq = self.queues.get(topic, queue_id)
        unit = cq.unit_at(offset) if cq is not None else None
        return unit is None or self.commitlog.max_offset - unit.commitlog_offset < _in_memory_bytes()

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msgs: int,
        *,
        max_bytes: int | None = None,
        tag_filter: Callable[[int], bool] | None = None,
        record_filter: Callable[[bytes], bool] | None = None,
    ) -> GetResult:
        """Messages of a queue from ``offset`` with the statuses a pull answers."""
        cq = self.queues.get(topic, queue_id)
        clog = self.compaction.log_for(topic, queue_id)
        if clog is not None and offset < clog.fed_offset:
            # the compaction log outlives the ConsumeQueue, which retention may have removed
            hi = max(clog.fed_offset, cq.max_offset if cq is not None else 0)
            return self._get_compacted(clog, hi, offset, max_msgs, max_bytes, tag_filter, record_filter)
        if cq is None:
            return GetResult(GetStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        lo, hi = cq.min_offset, cq.max_offset
        if hi == 0:
            return GetResult(GetStatus.NO_MESSAGE_IN_QUEUE, 0, lo, hi)
        if offset < lo:
            return GetResult(GetStatus.OFFSET_TOO_SMALL, lo, lo, hi)
        if offset == hi:
            return GetResult(GetStatus.OFFSET_OVERFLOW_ONE, offset, lo, hi)
        if offset > hi:
            return GetResult(GetStatus.OFFSET_OVERFLOW_BADLY, hi, lo, hi)
        max_msgs = max(1, min(max_msgs, self.config.max_transfer_count_on_message * 32))
        byte_limit = max_bytes or self.config.max_transfer_bytes_on_message
        result = GetResult(GetStatus.NO_MATCHED_MESSAGE, offset, lo, hi)
        if (
            tag_filter is None
            and record_filter is None
            and self._get_plain(cq, offset, max_msgs, byte_limit, result)
        ):
            return result
        sizes, chunks, queue_offsets = result.sizes, result.chunks, result.queue_offsets
        total = 0
        cl_min = self.commitlog.min_offset
        next_offset = offset
        removed = False
        files = self.commitlog.files
        mf: MappedFile | None = None
        mf_from = mf_end = 0  # absolute span of the written bytes of ``mf``
        run_from = run_to = 0  # consecutive records of ``mf`` not yet sliced into ``chunks``
        for q_off, phys, size, tags in cq.iter_units(offset, self.config.max_filter_message_count):
            if len(sizes) >= max_msgs or (sizes and total + size > byte_limit):
                break
            next_offset = q_off + 1
            if phys < cl_min:
                removed = True
                continue
            if tag_filter is not None and not tag_filter(tags):
                continue
            if mf is None or phys < mf_from or phys + size > mf_end:
                if mf is not None and run_to > run_from:
                    chunks.append(mf.mm[run_from - mf_from : run_to - mf_from])
                mf = files.find(phys)
                if mf is None or phys + size > mf.file_from + mf.wrote:
                    mf = None
                    removed = True
                    continue
                mf_from, mf_end = mf.file_from, mf.file_from + mf.wrote
                run_from = run_to = phys
            if record_filter is not None:
                data = mf.mm[phys - mf_from : phys - mf_from + size]
                if not record_filter(data):
                    continue
                chunks.append(data)
            elif phys == run_to:
                run_to += size
            else:
                if run_to > run_from:
                    chunks.append(mf.mm[run_from - mf_from : run_to - mf_from])
                run_from, run_to = phys, phys + size
            sizes.append(size)
            queue_offsets.append(q_off)
            total += size
        if mf is not None and run_to > run_from:
            chunks.append(mf.mm[run_from - mf_from : run_to - mf_from])
        result.next_begin_offset = next_offset
        if sizes:
            result.status = GetStatus.FOUND
        elif removed:
            result.status = GetStatus.MESSAGE_WAS_REMOVING
        return result

    def _get_compacted(
        self,
        clog: CompactionLog,
        hi: int,
        offset: int,
        max_msgs: int,
        max_bytes: int | None,
        tag_filter: Callable[[int], bool] | None,
        record_filter: Callable[[bytes], bool] | None,
    ) -> GetResult:
        """A read of a COMPACTION topic below the fed offset: from its compaction log, where each
        key's newest message is kept (later offsets come from the ConsumeQueue)."""
        lo = clog.min_offset()
        result = GetResult(GetStatus.NO_MATCHED_MESSAGE, offset, offset if lo is None else lo, hi)
        offsets, records, next_offset = clog.read(
            max(offset, 0),
            max(1, min(max_msgs, self.config.max_transfer_count_on_message * 32)),
            max_bytes or self.config.max_transfer_bytes_on_message,
            tag_filter,
            record_filter,
            self.config.max_filter_message_count,
        )
        result.queue_offsets = offsets
        result.chunks = records
        result.sizes = [len(r) for r in records]
        result.next_begin_offset = next_offset
        if lo is not None:
            result.min_offset = lo
        if records:
            result.status = GetStatus.FOUND
        return result

    def _get_plain(
        self, cq: ConsumeQueue, offset: int, max_msgs: int, byte_limit: int, result: GetResult
    ) -> bool:
        """``get_messages`` without filters, on whole lists instead of unit by unit (a pull's hot path):
        fills ``result`` and returns True when the records lie in one CommitLog file (units are in
        CommitLog order: dispatch writes them so); False leaves the rest (removed records, file ends)
        to the general loop, which gives the same answer unit by unit."""
        units = cq.read_units(offset, min(max_msgs, self.config.max_filter_message_count))
        if not units:
            return False
        phys, sizes, _ = zip(*units, strict=True)
        first = phys[0]
        mf = self.commitlog.files.find(first)
        if first < self.commitlog.min_offset or mf is None:
            return False
        ends = list(map(add, phys, sizes))
        n = max(1, bisect_right(list(accumulate(sizes)), byte_limit))  # the first always
        if ends[n - 1] > mf.file_from + mf.wrote:
            return False  # the later ones are in the next file
        starts = [0, *compress(range(1, n), map(ne, ends[: n - 1], phys[1:n])), n]
        base = mf.file_from
        result.chunks = [mf.mm[phys[a] - base : ends[b - 1] - base] for a, b in pairwise(starts)]
        result.sizes = list(sizes[:n])
        result.queue_offsets = list(range(offset, offset + n))
        result.next_begin_offset = offset + n
        result.status = GetStatus.FOUND
        return True

    def record_at(self, phys: int) -> bytes | None:
        """The stored record that starts exactly at CommitLog offset ``phys``."""
        return self.commitlog.record_at(phys)

    def message_at(self, phys: int) -> MessageRecord | None:
        data = self.commitlog.record_at(phys)
        if data is None:
            return None
        try:
            return decode_record(data)
        except RecordError:
            return None

    def query_by_key(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int, *, unique: bool = False
    ) -> list[MessageRecord]:
        """Messages of ``topic`` whose KEYS (or UNIQ_KEY when ``unique``) contain ``key``, newest first."""
        if self.index is None:
            return []
        found: list[MessageRecord] = []
        for phys in self.index.query(topic, key, max_num * 2 if max_num > 0 else 64, begin_ms, end_ms):
            rec = self.message_at(phys)
            if rec is None or rec.topic != topic:
                continue
            if (rec.uniq_key == key) if unique else (key in rec.keys or rec.uniq_key == key):
                found.append(rec)
                if len(found) >= max_num > 0:
                    break
        return found

    def topic_queue_ids(self, topic: str) -> list[int]:
        return [cq.queue_id for cq in self.queues.of_topic(topic)]

    def drop_expired_queues(self, keep: Callable[[str], bool]) -> int:
        """Delete the ConsumeQueues whose every message lies below the CommitLog's first offset (their
        CommitLog files are gone), except those of topics ``keep`` names; how many went. Their next
        queue offsets stay, so a queue written again continues where it stopped."""
        with self._write_lock:
            floor = self.commitlog.min_offset
            doomed = [
                cq
                for (topic, _qid), cq in list(self.queues.queues.items())
                if not keep(topic) and cq.max_offset > 0 and _ends_below(cq, floor)
            ]
            self.queues.remove(doomed)
        return len(doomed)

    def delete_topic(self, topic: str) -> None:
        self.compaction.remove_topic(topic)
        with self._write_lock:
            self.queues.remove_topic(topic)
            self._queue_offsets = {k: v for k, v in self._queue_offsets.items() if k[0] != topic}


def _ends_below(cq: ConsumeQueue, floor: int) -> bool:
    last = cq.unit_at(cq.max_offset - 1)
    return last is not None and last.commitlog_offset + last.size <= floor
