"""RocketMQ 5's TimerCheckpoint: ``<store>/config/timercheck``, big-endian longs.

Upstream's seven (the read time, the TimerLog position every unit before which is on disk, the timer
queue offset enqueued up to, the same offset as a master last saw it, and a data version) are kept at
their offsets, so either side can read the other's file. One more long follows, which upstream does
not read: where delivery stopped inside the slot at the read time, plus one (0 = the slot has not been
started), so a big slot cut short by a restart is neither repeated nor skipped.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

_LAYOUT = struct.Struct(">8q")
FILE_SIZE = 4096  # upstream maps one page


@dataclass(slots=True)
class TimerProgress:
    read_ms: int = 0  # the slot being delivered, or the next one
    log_end: int = 0  # TimerLog position: every unit before it belongs to an offset below queue_offset
    queue_offset: int = 0  # rmq_sys_wheel_timer queue 0: every unit below it is in the log or delivered
    slot_resume: int = -1  # TimerLog position to continue the read slot at; -1 = from its last unit
    version: int = 0


def load_checkpoint(path: Path) -> TimerProgress:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return TimerProgress()
    if len(raw) < _LAYOUT.size:
        raw = raw.ljust(_LAYOUT.size, b"\0")
    read_ms, log_end, queue_offset, _master, _state, _stamp, counter, resume = _LAYOUT.unpack_from(raw)
    return TimerProgress(read_ms, log_end, queue_offset, resume - 1, counter)


def save_checkpoint(path: Path, progress: TimerProgress) -> None:
    """Write and sync the checkpoint in place (one page; a kill cannot tear a single ``pwrite``)."""
    data = _LAYOUT.pack(
        progress.read_ms, progress.log_end, progress.queue_offset, progress.queue_offset,
        0, int(time.time() * 1000), progress.version, progress.slot_resume + 1,
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size < FILE_SIZE:
            os.ftruncate(fd, FILE_SIZE)
        os.pwrite(fd, data, 0)
        os.fdatasync(fd)
    finally:
        os.close(fd)
