"""Compaction topics (``cleanup.policy=COMPACTION``): every queue's compaction log, kept up to date and
compacted by one background thread, and read in place of the ConsumeQueue below the fed offset.

On disk, as RocketMQ lays it out under the store root: ``compaction/compactionLog/<topic>/<queue>/``,
``compaction/compactionCq/<topic>/<queue>/`` and ``compaction/position-checkpoint`` (JSON
``{"queueOffsetMap": {"<topic>_<queue>": lastCompactedQueueOffset}}``).

The send path does not touch any of it: the thread copies new messages from the ConsumeQueue every
``FEED_INTERVAL`` seconds, and reads at or past the fed offset are served by the ConsumeQueue, so a
consumer at the head sees every message at once. While the broker takes sends, the thread works at
most a twentieth of the time and of the CPU the process's other threads get, so sends keep their speed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from broker.protocol.message import RecordError, read_layout
from broker.store.commitlog import CommitLog
from broker.store.compaction_log import (
    OFFSET_MAP_ENTRY,
    CompactionLog,
    CompactionRun,
    log_file_size,
)
from broker.store.config import StoreConfig
from broker.store.config_files import ConfigFile
from broker.store.consume_queue import ConsumeQueue
from broker.store.dispatch import ConsumeQueueTable
from broker.store.sparse_queue import UNIT

log = logging.getLogger(__name__)

COMPACTION_DIR: Final = "compaction"
LOG_DIR: Final = "compactionLog"
CQ_DIR: Final = "compactionCq"
POSITION_FILE: Final = "position-checkpoint"
FEED_INTERVAL: Final = 0.5
FEED_BATCH: Final = 256  # messages copied between two chances to rest
BUSY_SHARE: Final = 0.05  # the thread's share of the time while sends arrive
MAX_REST: Final = 3  # a rest lasts at most this many times the time-based one
REST_STEP: Final = 0.005  # seconds between looks at the process's CPU time while resting
PROGRESS_KEY: Final = "compactionProgress_"  # runtime info key prefix, then <topic>_<queue>


class CompactionStore:
    def __init__(
        self,
        config: StoreConfig,
        queues: ConsumeQueueTable,
        commitlog: CommitLog,
        *,
        read_only: bool = False,
        busy: Callable[[], bool] = lambda: False,
    ) -> None:
        self.config = config
        self.root = config.store_path / COMPACTION_DIR
        self.queues = queues
        self.commitlog = commitlog
        self.read_only = read_only
        self.busy = busy
        self.cq_size = config.compaction_cq_mapped_file_size - config.compaction_cq_mapped_file_size % UNIT
        self.log_size = log_file_size(self.cq_size, config.compaction_mapped_file_size)
        self.topics: frozenset[str] = frozenset()  # the COMPACTION topics, set by the broker
        self.logs: dict[tuple[str, int], CompactionLog] = {}
        self.positions: dict[str, int] = {}
        self._position_file = ConfigFile(self.root / POSITION_FILE)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_compaction = time.monotonic()
        self._worked_from = time.monotonic()  # when the work since the last rest began
        self._cpu_from = 0.0  # this thread's CPU time then (set on the thread itself)
        self._lock = threading.Lock()  # the table of logs against topic deletion

    # == life cycle ============================================================================
    def load(self) -> None:
        data = self._position_file.load()
        table = data.get("queueOffsetMap") if isinstance(data, dict) else None
        if isinstance(table, dict):
            self.positions = {str(k): int(v) for k, v in table.items() if isinstance(v, int)}
        log_root = self.root / LOG_DIR
        if not log_root.is_dir():
            return
        if self.read_only:  # a reader takes the file sizes the writer used
            self.log_size = _file_size(log_root, self.log_size)
            self.cq_size = _file_size(self.root / CQ_DIR, self.cq_size)
        for topic_dir in sorted(log_root.iterdir()):
            for queue_dir in sorted(topic_dir.iterdir()) if topic_dir.is_dir() else ():
                if queue_dir.is_dir() and queue_dir.name.isdigit():
                    self._open(topic_dir.name, int(queue_dir.name))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="store-compaction", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for clog in list(self.logs.values()):
            clog.close()
        if not self.read_only and self.logs:
            self._save_positions()

    def _open(self, topic: str, queue_id: int) -> CompactionLog:
        clog = CompactionLog(
            self.root / LOG_DIR,
            self.root / CQ_DIR,
            topic,
            queue_id,
            log_size=self.log_size,
            cq_size=self.cq_size,
            read_only=self.read_only,
        )
        clog.load()
        self.logs = {**self.logs, (topic, queue_id): clog}
        return clog

    def _save_positions(self) -> None:
        self._position_file.save(json.dumps({"queueOffsetMap": self.positions}))

    def position(self, topic: str, queue_id: int) -> int:
        return self.positions.get(f"{topic}_{queue_id}", -1)

    # == the thread ============================================================================
    def _run(self) -> None:
        while not self._stop.wait(FEED_INTERVAL):
            self._mark_work()
            try:
                self.feed()
                interval = self.config.compaction_schedule_interval_ms / 1000
                if time.monotonic() - self._last_compaction >= interval:
                    self.compact_all()
                    self._last_compaction = time.monotonic()
            except Exception:  # a failed pass must not stop compaction for good; the next one retries
                log.exception("compaction pass failed")

    def _pace(self) -> None:
        """While sends arrive, rest until the work since the last rest is within ``BUSY_SHARE`` both
        of the time and of the CPU the broker's other threads had meanwhile (the thread holds the GIL
        while it works, and on a crowded machine the process gets less CPU than the clock says); at
        most ``MAX_REST`` times the time-based rest, so a trickle of sends cannot stop compaction."""
        if self.busy():
            worked = time.monotonic() - self._worked_from
            rest = worked * (1 - BUSY_SHARE) / BUSY_SHARE
            cpu_until = (
                time.process_time() + (time.thread_time() - self._cpu_from) * (1 - BUSY_SHARE) / BUSY_SHARE
            )
            began = time.monotonic()
            while not self._stop.is_set() and self.busy():
                waited = time.monotonic() - began
                if waited >= rest * MAX_REST or (waited >= rest and time.process_time() >= cpu_until):
                    break
                self._stop.wait(min(rest, REST_STEP))
        self._mark_work()

    def _mark_work(self) -> None:
        """Work starts now: the next rest is measured from here."""
        self._worked_from = time.monotonic()
        self._cpu_from = time.thread_time()

    def feed(self) -> int:
        """Copy what the COMPACTION topics' queues got since the last pass; how many messages."""
        copied = 0
        for cq in [q for (topic, _q), q in self.queues.queues.items() if topic in self.topics]:
            key = (cq.topic, cq.queue_id)
            with self._lock:
                clog = self.logs.get(key) or self._open(*key)
                copied += self._feed_queue(clog, cq)
        return copied

    def _feed_queue(self, clog: CompactionLog, cq: ConsumeQueue) -> int:
        copied = 0
        clog.skip_to(cq.min_offset)
        while clog.fed_offset < cq.max_offset and not self._stop.is_set():
            units = cq.read_units(clog.fed_offset, FEED_BATCH)
            if not units:
                break
            offset = clog.fed_offset
            for q_off, (phys, size, tags) in enumerate(units, offset):
                record = self.commitlog.read(phys, size)
                if record is None:
                    clog.skip_to(q_off + 1)
                elif clog.feed(record, q_off, tags, _store_timestamp(record)):
                    copied += 1
            self._pace()
        return copied

    def compact_all(self) -> list[CompactionRun]:
        runs: list[CompactionRun] = []
        capacity = max(100, self.config.max_offset_map_size // OFFSET_MAP_ENTRY)
        for (topic, queue_id), clog in list(self.logs.items()):
            if topic not in self.topics or self._stop.is_set():
                continue
            with self._lock:
                if self.logs.get((topic, queue_id)) is not clog:
                    continue  # its topic was deleted meanwhile
                clog.flush()
                run = clog.compact(self.position(topic, queue_id), capacity, self._pace)
            if run is not None:
                self.positions[f"{topic}_{queue_id}"] = run.last_offset
                self._save_positions()
                runs.append(run)
                log.info(
                    "compacted %s/%d: %d of %d messages kept, %d -> %d bytes",
                    topic, queue_id, run.messages_kept, run.messages_in, run.bytes_before, run.bytes_after,
                )  # fmt: skip
        return runs

    # == reading ===============================================================================
    def log_for(self, topic: str, queue_id: int) -> CompactionLog | None:
        """The compaction log that serves reads of this queue, if it is a COMPACTION topic's."""
        if topic not in self.topics or not self.config.enable_compaction:
            return None
        return self.logs.get((topic, queue_id))

    def running_stats(self) -> dict[str, str]:
        """``compactionProgress_<topic>_<queue>`` = "fedOffset,messages,diskBytes,compactedOffset,runs"
        for GET_BROKER_RUNTIME_INFO (one key per queue of a COMPACTION topic)."""
        stats: dict[str, str] = {}
        for (topic, queue_id), clog in sorted(self.logs.items()):
            p = clog.progress(self.position(topic, queue_id))
            figures = (p.fed_offset, p.messages, p.disk_bytes, p.compacted_offset, p.runs)
            stats[f"{PROGRESS_KEY}{topic}_{queue_id}"] = ",".join(map(str, figures))
        return stats

    # == upkeep ================================================================================
    def flush(self) -> None:
        for clog in list(self.logs.values()):
            clog.flush()

    def remove_topic(self, topic: str) -> None:
        with self._lock:
            doomed = [clog for (t, _q), clog in self.logs.items() if t == topic]
            self.logs = {k: v for k, v in self.logs.items() if k[0] != topic}
            for clog in doomed:
                clog.destroy()
                self.positions.pop(f"{topic}_{clog.queue_id}", None)
        for sub in (LOG_DIR, CQ_DIR):
            folder = self.root / sub / topic
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()


def _file_size(root: Path, default: int) -> int:
    """The size of the first store file under ``root/<topic>/<queue>/``, or ``default``."""
    found = next(root.glob("*/*/" + "[0-9]" * 20), None)
    return found.stat().st_size if found is not None else default


def _store_timestamp(record: bytes) -> int:
    try:
        return read_layout(record, 0, len(record)).store_timestamp
    except RecordError:
        return 0
