"""The ``checkpoint`` file: store times of the last flushed CommitLog, ConsumeQueue and index data."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

_LAYOUT = struct.Struct(">qqqqq")
FILE_SIZE = 4096


@dataclass(slots=True)
class CheckpointValues:
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0

    @property
    def min_timestamp(self) -> int:
        """Where abnormal recovery may start: the older of CommitLog and ConsumeQueue, less 3 s."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)


def read_checkpoint(path: Path) -> CheckpointValues:
    """Read without mapping for write (offline tools); a missing or short file reads as zeros."""
    try:
        data = path.read_bytes()[: _LAYOUT.size]
    except FileNotFoundError:
        return CheckpointValues()
    if len(data) < _LAYOUT.size:
        return CheckpointValues()
    return CheckpointValues(*_LAYOUT.unpack(data))


class Checkpoint:
    """The checkpoint written in place with ``pwrite`` + ``fdatasync``, which release the GIL (an
    ``msync`` of a mapped page holds it while the disk answers)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.values = read_checkpoint(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(self._fd).st_size < FILE_SIZE:
                os.ftruncate(self._fd, FILE_SIZE)
        except OSError:
            os.close(self._fd)
            raise

    def flush(self) -> None:
        v = self.values
        packed = _LAYOUT.pack(
            v.physic_msg_timestamp,
            v.logics_msg_timestamp,
            v.index_msg_timestamp,
            v.master_flushed_offset,
            v.confirm_phy_offset,
        )
        os.pwrite(self._fd, packed, 0)
        os.fdatasync(self._fd)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            os.close(self._fd)
