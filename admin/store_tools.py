"""Offline store tools: inspect, verify, search and dump a RocketMQ store folder without a broker.

Everything here is read-only (the store is opened with ``MessageStore.open_read_only``, which runs
the broker's own recovery logic without writing), so these are safe on a copy, on a folder written by
Apache RocketMQ, or next to a running broker. Failures are raised as :mod:`admin.errors`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from admin.errors import BadInput, NotFound, OperationFailed
from broker.protocol.message import MessageRecord, RecordError, check_crc, decode_record
from broker.protocol.msgid import MessageIdError, decode_offset_msg_id
from broker.store.checkpoint import CheckpointValues, read_checkpoint
from broker.store.commitlog import CommitLog
from broker.store.consume_queue import UNIT, ConsumeQueue
from broker.store.dispatch import ConsumeQueueTable, TagsCodeRule, request_from_record
from broker.store.errors import NotAStoreError, StoreError
from broker.store.index_file import IndexFileError
from broker.store.mapped_file import MappedFile
from broker.store.message_store import MessageStore, RecoveryReport

MAX_TIMESTAMP = (1 << 63) - 1  # Java's Long.MAX_VALUE, the "no upper bound" of a time range
DEFAULT_MAX_RESULTS = 64  # mqadmin queryMsgByKey's default maxNum
_BLANK_UNIT_SIZE = 0x7FFFFFFF  # size of the filler units before a queue's first real unit
_PROGRESS_STEP = 4 << 20  # report CommitLog progress every 4 MiB
_FILE_NAME = re.compile(r"\d{20}")

Progress = Callable[[str, int, int], None]
"""Called as ``progress(label, done, total)`` while long work runs."""


# == results =======================================================================================
@dataclass(frozen=True, slots=True)
class CommitLogFileInfo:
    name: str
    start_offset: int
    size: int
    used: int  # bytes of valid records (and the end-of-file marker) that recovery keeps


@dataclass(frozen=True, slots=True)
class QueueInfo:
    topic: str
    queue_id: int
    min_offset: int
    max_offset: int  # the next queue offset to be written


@dataclass(frozen=True, slots=True)
class IndexInfo:
    name: str
    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slots_used: int
    entries: int


@dataclass(frozen=True, slots=True)
class RecoveryInfo:
    """What the broker's recovery would do on start: where the CommitLog would end, what it cuts."""

    scanned_from: int
    commitlog_end: int
    truncated_bytes: int
    problem: str | None  # why the scan stopped early, with file and offset


@dataclass(frozen=True, slots=True)
class CompactionLogInfo:
    """One queue's compaction log (``compaction/compactionLog/<topic>/<queue>``)."""

    topic: str
    queue_id: int
    files: int
    messages: int  # kept: each key's newest, plus what no compaction covered yet
    min_offset: int  # queue offset of the first kept message (-1: none)
    fed_offset: int  # queue offsets below it were copied in
    compacted_offset: int  # the newest queue offset a compaction covered (-1: none yet)
    disk_bytes: int


@dataclass(frozen=True, slots=True)
class StoreInfo:
    path: str
    clean_shutdown: bool  # no ``abort`` file: the last broker stopped cleanly (or none runs)
    min_offset: int
    max_offset: int
    commitlog_files: list[CommitLogFileInfo]
    queues: list[QueueInfo]
    index_files: list[IndexInfo]
    checkpoint: CheckpointValues
    recovery: RecoveryInfo
    compaction: list[CompactionLogInfo]


@dataclass(frozen=True, slots=True)
class Problem:
    area: str  # "commitlog" or "consumequeue"
    file: str  # relative to the store folder
    offset: int  # CommitLog byte offset, or queue offset for a consume queue
    reason: str


@dataclass(frozen=True, slots=True)
class VerifyResult:
    path: str
    ok: bool
    records: int
    bytes: int
    queues: int
    units: int
    problems: list[Problem]
    more_problems: int  # found beyond the reported limit
    recovery: RecoveryInfo


@dataclass(frozen=True, slots=True)
class LookupResult:
    messages: list[MessageRecord]

    def to_dict(self) -> dict[str, Any]:
        return {"messages": [message_to_dict(m) for m in self.messages]}


@dataclass(frozen=True, slots=True)
class UnreadableUnit:
    """A ConsumeQueue unit whose message could not be read."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    reason: str


@dataclass(frozen=True, slots=True)
class DumpResult:
    topic: str
    messages: list[MessageRecord]
    unreadable: list[UnreadableUnit]

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "messages": [message_to_dict(m) for m in self.messages],
            "unreadable": self.unreadable,
        }


def message_to_dict(rec: MessageRecord) -> dict[str, Any]:
    """A stored message with RocketMQ's field names (MessageExt), for JSON output.

    The body is UTF-8 text when it decodes, else base64; ``bodyEncoding`` says which. It is the body
    as stored (still compressed when sysFlag has COMPRESSED_FLAG).
    """
    try:
        body, encoding = rec.body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        body, encoding = base64.b64encode(rec.body).decode("ascii"), "base64"
    return {
        "topic": rec.topic,
        "queueId": rec.queue_id,
        "queueOffset": rec.queue_offset,
        "commitLogOffset": rec.physical_offset,
        "msgId": rec.offset_msg_id,
        "uniqKey": rec.uniq_key,
        "tags": rec.tags,
        "keys": rec.properties.get("KEYS"),
        "flag": rec.flag,
        "sysFlag": rec.sys_flag,
        "bornTimestamp": rec.born_timestamp,
        "bornHost": rec.born_host,
        "storeTimestamp": rec.store_timestamp,
        "storeHost": rec.store_host,
        "reconsumeTimes": rec.reconsume_times,
        "preparedTransactionOffset": rec.prepared_transaction_offset,
        "bodyCRC": rec.body_crc,
        "storeSize": rec.total_size,
        "properties": dict(rec.properties),
        "body": body,
        "bodyEncoding": encoding,
    }


# == opening =======================================================================================
@contextmanager
def _open(path: Path) -> Iterator[MessageStore]:
    """The store at ``path``, read-only, with store failures turned into admin errors."""
    try:
        store = MessageStore.open_read_only(path)
    except NotAStoreError as exc:
        raise NotFound(str(exc)) from exc
    except (StoreError, IndexFileError, OSError) as exc:
        raise OperationFailed(f"cannot open store {path}: {exc}") from exc
    try:
        yield store
    finally:
        store.shutdown()


def _recovery_info(report: RecoveryReport | None) -> RecoveryInfo:
    assert report is not None, "open_read_only always recovers"
    return RecoveryInfo(report.scanned_from, report.commitlog_end, report.truncated_bytes, report.problem)


def _has_data(mf: MappedFile) -> bool:
    return mf.mm[:8] != bytes(8)


def _dump_compacted(
    store: MessageStore, topic: str, queue: int | None, from_offset: int, limit: int
) -> DumpResult:
    logs = sorted((q, clog) for (t, q), clog in store.compaction.logs.items() if t == topic)
    if not logs:
        raise NotFound(f"topic {topic!r} has no compaction log in store {store.root}")
    if queue is not None:
        logs = [(q, clog) for q, clog in logs if q == queue]
        if not logs:
            raise NotFound(f"topic {topic!r} has no compaction log for queue {queue} in store {store.root}")
    messages: list[MessageRecord] = []
    unreadable: list[UnreadableUnit] = []
    for qid, clog in logs:
        for unit in clog.current.cq.iter_from(from_offset):
            if len(messages) + len(unreadable) >= limit:
                break
            data = clog.current.log.read(unit.position, unit.size)
            try:
                messages.append(decode_record(data or b""))
            except RecordError:
                unreadable.append(
                    UnreadableUnit(topic, qid, unit.queue_offset, unit.position, "no valid record there")
                )
    return DumpResult(topic, messages, unreadable)


def compaction_log_messages(file: Path) -> list[MessageRecord]:
    """The records of one compaction log file, from its start to its first non-record (mqadmin
    dumpCompactionLog)."""
    if not file.exists():
        raise NotFound(f"file {file} not exist.")
    if file.is_dir():
        raise BadInput(f"file {file} is a directory.")
    data = file.read_bytes()
    found: list[MessageRecord] = []
    pos = 0
    while pos + 8 <= len(data):
        size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        if size <= 0 or pos + size > len(data):
            break
        try:
            found.append(decode_record(data, pos))
        except RecordError:
            break
        pos += size
    return found


# == info ==========================================================================================
def store_info(path: Path) -> StoreInfo:
    """Files, offsets, queues, index files, checkpoint and what recovery would do."""
    with _open(path) as store:
        kept = {mf.path.name: mf.wrote for mf in store.commitlog.files.files}
        names = sorted(p.name for p in (path / "commitlog").iterdir() if _FILE_NAME.fullmatch(p.name))
        files = [
            CommitLogFileInfo(name, int(name), (path / "commitlog" / name).stat().st_size, kept.get(name, 0))
            for name in names
        ]
        queues = [
            QueueInfo(topic, qid, cq.min_offset, cq.max_offset)
            for (topic, qid), cq in sorted(store.queues.queues.items())
        ]
        index = [
            IndexInfo(
                f.name,
                f.begin_timestamp,
                f.end_timestamp,
                f.begin_phy_offset,
                f.end_phy_offset,
                f.hash_slot_count,
                f.index_count - 1,  # entry 0 is never used
            )
            for f in (store.index.files() if store.index is not None else [])
        ]
        return StoreInfo(
            path=str(path),
            clean_shutdown=not (path / "abort").exists(),
            min_offset=store.commitlog.min_offset,
            max_offset=store.commitlog.max_offset,
            commitlog_files=files,
            queues=queues,
            index_files=index,
            checkpoint=read_checkpoint(path / "checkpoint"),
            recovery=_recovery_info(store.recovery),
            compaction=[
                CompactionLogInfo(
                    topic,
                    qid,
                    len(clog.current.log.files.files),
                    clog.current.cq.count,
                    -1 if (first := clog.min_offset()) is None else first,
                    clog.fed_offset,
                    store.compaction.position(topic, qid),
                    clog.current.bytes_on_disk,
                )
                for (topic, qid), clog in sorted(store.compaction.logs.items())
            ],
        )


# == verify ========================================================================================
class _Problems:
    """Collects problems up to a limit and counts the rest (a wrecked queue can have millions)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: list[Problem] = []
        self.more = 0

    def add(self, problem: Problem) -> None:
        if len(self.items) < self.limit:
            self.items.append(problem)
        else:
            self.more += 1


def store_verify(path: Path, progress: Progress | None = None, max_problems: int = 1000) -> VerifyResult:
    """Check every CommitLog record (magic, sizes, offsets, body CRC) and every ConsumeQueue unit.

    Unlike recovery, which stops at the first bad record, the walk resumes at the next file with
    data, so every broken file is reported. A unit must point at a record of its own topic and
    queue with its size and queue offset; units past the end recovery keeps are counted per queue.
    """
    with _open(path) as store:
        recovery = _recovery_info(store.recovery)
        config = store.config
    # Recovery has trimmed the store's view at the first problem; the check needs the whole files.
    commitlog = CommitLog(path / "commitlog", config.mapped_file_size_commit_log, read_only=True)
    queues = ConsumeQueueTable(
        path / "consumequeue", config.mapped_file_size_consume_queue_units, read_only=True
    )
    problems = _Problems(max_problems)
    try:
        commitlog.load()
        queues.load()
        records, size = _verify_commitlog(commitlog, problems, progress)
        rule = TagsCodeRule(config.delay_levels_ms)
        units = 0
        all_queues = [cq for _key, cq in sorted(queues.queues.items())]
        for done, cq in enumerate(all_queues):
            if progress is not None:
                progress("ConsumeQueue", done, len(all_queues))
            units += _verify_queue(path, commitlog, cq, rule, recovery.commitlog_end, problems)
    except (StoreError, OSError) as exc:
        raise OperationFailed(f"cannot verify store {path}: {exc}") from exc
    finally:
        commitlog.close()
        queues.close()
    return VerifyResult(
        path=str(path),
        ok=not problems.items and not problems.more,
        records=records,
        bytes=size,
        queues=len(all_queues),
        units=units,
        problems=problems.items,
        more_problems=problems.more,
        recovery=recovery,
    )


def _verify_commitlog(
    commitlog: CommitLog, problems: _Problems, progress: Progress | None
) -> tuple[int, int]:
    """Walk all records; returns (records, bytes).

    A body CRC mismatch leaves the record's framing intact, so the walk checks CRCs itself and goes
    on; a broken frame ends the walk of that file (nothing after it can be trusted to be a record).
    """
    files = commitlog.files.files
    base = commitlog.min_offset
    total = commitlog.max_offset - base
    records = size = 0
    reported = base
    start: int | None = base if files else None
    while start is not None:
        end = start
        for mf, pos, layout in commitlog.walk(start, check_body_crc=False):
            at = mf.file_from + pos
            end = at + layout.total_size
            records += 1
            size += layout.total_size
            with memoryview(mf.mm) as view:  # released at once, so the file can be unmapped later
                crc_ok = check_crc(view, layout)
            if not crc_ok:
                problems.add(Problem("commitlog", f"commitlog/{mf.path.name}", at, "body CRC mismatch"))
            if progress is not None and end - reported >= _PROGRESS_STEP:
                progress("CommitLog", end - base, total)
                reported = end
        # The walk stopped at a broken frame or at the end of the data; only the tail is re-read.
        stop = commitlog.scan(end, check_body_crc=False).problem
        stopped_in = stop.file if stop is not None else _file_at(files, end).path.name
        later = next((mf for mf in files if mf.path.name > stopped_in and _has_data(mf)), None)
        if stop is not None:
            problems.add(Problem("commitlog", f"commitlog/{stop.file}", stop.offset, stop.reason))
        elif later is not None:
            reason = f"the records end here, but {later.path.name} holds more data"
            problems.add(Problem("commitlog", f"commitlog/{stopped_in}", end, reason))
        start = later.file_from if later is not None else None
    if progress is not None:
        progress("CommitLog", total, total)
    return records, size


def _file_at(files: list[MappedFile], offset: int) -> MappedFile:
    """The file holding ``offset``, or the last one when ``offset`` is the very end."""
    return next((mf for mf in files if mf.file_from <= offset < mf.file_end), files[-1])


def _verify_queue(
    root: Path, commitlog: CommitLog, cq: ConsumeQueue, rule: TagsCodeRule, kept_end: int, problems: _Problems
) -> int:
    """Check one queue's units; returns how many were checked."""
    checked = dropped = 0
    first_dropped = -1
    cl_min = commitlog.min_offset

    def file_of(queue_offset: int) -> str:
        mf = cq.files.find(queue_offset * UNIT)
        return str((mf.path if mf is not None else cq.files.directory).relative_to(root))

    for q_off, phys, size, _tags in cq.iter_units(cq.min_offset):
        if size == 0:
            break  # the rest of the file was never written
        if (size == _BLANK_UNIT_SIZE and phys == 0) or phys < cl_min:
            continue  # filler, or a message already removed by retention
        checked += 1
        if phys + size > kept_end:
            dropped += 1
            first_dropped = q_off if first_dropped < 0 else first_dropped
            continue
        reason = _unit_problem(commitlog, rule, cq, q_off, phys, size)
        if reason is not None:
            problems.add(Problem("consumequeue", file_of(q_off), q_off, reason))
    if dropped:
        reason = (
            f"{dropped} unit(s) from queue offset {first_dropped} point past CommitLog offset {kept_end}, "
            "where recovery ends it; recovery drops them"
        )
        problems.add(Problem("consumequeue", file_of(first_dropped), first_dropped, reason))
    return checked


def _unit_problem(
    commitlog: CommitLog, rule: TagsCodeRule, cq: ConsumeQueue, q_off: int, phys: int, size: int
) -> str | None:
    found = commitlog.layout_at(phys)
    if found is None:
        return f"points at CommitLog offset {phys}, where no valid record starts"
    mf, layout = found
    if layout.total_size != size:
        return f"says size {size}, but the record at CommitLog offset {phys} has {layout.total_size}"
    with memoryview(mf.mm) as view:  # released at once, so the file can be unmapped later
        req = request_from_record(view, phys - mf.file_from, layout, phys, rule)
    if (req.topic, req.queue_id) != (cq.topic, cq.queue_id):
        return f"points at a record of {req.topic}/{req.queue_id} at CommitLog offset {phys}"
    if req.queue_offset != q_off:
        return f"points at the record with queue offset {req.queue_offset} at CommitLog offset {phys}"
    return None


# == lookup and dump ===============================================================================
def _require_topic(store: MessageStore, topic: str) -> list[ConsumeQueue]:
    queues = store.queues.of_topic(topic)
    if not queues:
        raise NotFound(f"topic {topic!r} not found in store {store.root}")
    return queues


def store_lookup(
    path: Path,
    *,
    msg_id: str | None = None,
    topic: str | None = None,
    key: str | None = None,
    unique_key: str | None = None,
    begin_ms: int = 0,
    end_ms: int = MAX_TIMESTAMP,
    max_num: int = DEFAULT_MAX_RESULTS,
) -> LookupResult:
    """Messages by offset MessageId, by KEYS entry or by UNIQ_KEY (the last two need the topic).

    A MessageId is decoded to its CommitLog offset (the host in it is ignored: the store may have been
    copied). As ``mqadmin queryMsgById`` does, an id that finds nothing there is tried as a UNIQ_KEY
    when the topic is given.
    """
    if sum(x is not None for x in (msg_id, key, unique_key)) != 1:
        raise BadInput("look up by exactly one of: a message id, a key, a unique key")
    if topic is None and msg_id is None:
        raise BadInput("a key or unique key lookup needs the topic")
    if begin_ms > end_ms:
        raise BadInput(f"the time range is empty: begin {begin_ms} is after end {end_ms}")
    if max_num <= 0:
        raise BadInput(f"the maximum number of results must be positive, got {max_num}")
    with _open(path) as store:
        if topic is not None:
            _require_topic(store, topic)
        if msg_id is not None:
            found = _by_msg_id(store, msg_id, topic, begin_ms, end_ms, max_num)
            what = f"with id {msg_id}"
            hint = "" if topic is not None else " (if it is a UNIQ_KEY, give the topic too)"
        else:
            assert topic is not None
            wanted = key if key is not None else unique_key
            assert wanted is not None
            found = store.query_by_key(topic, wanted, max_num, begin_ms, end_ms, unique=key is None)
            what = f"in topic {topic!r} with {'key' if key is not None else 'unique key'} {wanted!r}"
            hint = ""
        if not found:
            raise NotFound(f"no message {what} in store {path}{hint}")
        return LookupResult(found)


def _by_msg_id(
    store: MessageStore, msg_id: str, topic: str | None, begin_ms: int, end_ms: int, max_num: int
) -> list[MessageRecord]:
    try:
        offset: int | None = decode_offset_msg_id(msg_id).offset
    except MessageIdError as exc:
        if topic is None:
            raise BadInput(str(exc)) from None
        offset = None
    rec = store.message_at(offset) if offset is not None else None
    if rec is not None:
        return [rec]
    if topic is None:
        return []
    return store.query_by_key(topic, msg_id, max_num, begin_ms, end_ms, unique=True)


def store_dump(
    path: Path,
    topic: str,
    queue: int | None = None,
    from_offset: int = 0,
    limit: int = 100,
    *,
    compacted: bool = False,
) -> DumpResult:
    """Up to ``limit`` messages of a topic (or of one queue) from queue offset ``from_offset``,
    queue by queue; units whose message cannot be read are listed, not skipped silently.
    ``compacted``: from the topic's compaction logs (each key's newest message) instead."""
    if limit <= 0:
        raise BadInput(f"the limit must be positive, got {limit}")
    if from_offset < 0:
        raise BadInput(f"the start offset must not be negative, got {from_offset}")
    with _open(path) as store:
        if compacted:
            return _dump_compacted(store, topic, queue, from_offset, limit)
        queues = _require_topic(store, topic)
        if queue is not None:
            queues = [cq for cq in queues if cq.queue_id == queue]
            if not queues:
                known = ", ".join(str(cq.queue_id) for cq in store.queues.of_topic(topic))
                raise NotFound(f"topic {topic!r} has no queue {queue} in store {path} (its queues: {known})")
        messages: list[MessageRecord] = []
        unreadable: list[UnreadableUnit] = []
        cl_min = store.commitlog.min_offset
        for cq in queues:
            remaining = limit - len(messages) - len(unreadable)
            if remaining <= 0:
                break
            for q_off, phys, _size, _tags in cq.iter_units(from_offset, remaining):
                rec = store.message_at(phys)
                if rec is not None:
                    messages.append(rec)
                else:
                    reason = "removed by retention" if phys < cl_min else "no valid record there"
                    unreadable.append(UnreadableUnit(topic, cq.queue_id, q_off, phys, reason))
        return DumpResult(topic, messages, unreadable)
