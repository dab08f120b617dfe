"""The epoch file of a controller-mode broker (``epochFileCheckpoint`` in the store root), in RocketMQ's
CheckpointFile format: the entry count, the CRC32 of the entry lines (masked to 31 bits as Java's
UtilAll.crc32), then one ``epoch-startOffset`` line per master epoch, oldest first. A ``.bak`` copy is
written first and read when the main file is torn.

Each entry says where in the CommitLog a master epoch began; two brokers agree on everything before
the end of the last epoch they share with the same start (:func:`consistent_point`), and a replica cuts
its CommitLog there before following a new master.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "epochFileCheckpoint"
OPEN_END = 2**63 - 1  # the last epoch has no end yet (Long.MAX_VALUE)


@dataclass(frozen=True, slots=True)
class Epoch:
    epoch: int
    start: int


def encode(entries: Sequence[Epoch]) -> bytes:
    lines = "".join(f"{e.epoch}-{e.start}{os.linesep}" for e in entries).encode()
    crc = zlib.crc32(lines) & 0x7FFFFFFF
    return f"{len(entries)}{os.linesep}{crc}{os.linesep}".encode() + lines


def decode(data: bytes) -> list[Epoch]:
    """Entries of a file's bytes; ValueError when the count or the CRC does not match (a torn write)."""
    lines = data.decode().splitlines()
    if len(lines) < 2:
        raise ValueError("epoch file too short")
    count, crc = int(lines[0]), int(lines[1])
    body = "".join(line + os.linesep for line in lines[2:]).encode()
    entries = []
    for line in lines[2:]:
        epoch, sep, start = line.partition("-")
        if sep:
            entries.append(Epoch(int(epoch), int(start)))
    if len(entries) != count or (crc != 0 and zlib.crc32(body) & 0x7FFFFFFF != crc):
        raise ValueError("epoch file entries do not match their count or CRC")
    return entries


def ends(entries: Sequence[Epoch]) -> dict[int, tuple[int, int]]:
    """epoch -> (start, end): each epoch ends where the next begins, the last one never."""
    result = {}
    for i, entry in enumerate(entries):
        end = entries[i + 1].start if i + 1 < len(entries) else OPEN_END
        result[entry.epoch] = (entry.start, end)
    return result


def consistent_point(mine: Sequence[Epoch], theirs: Sequence[Epoch], their_max_offset: int) -> int:
    """Up to where two logs agree: the end of the newest epoch both have with the same start
    (bounded by what the other side holds); -1 when they share none."""
    other = ends(theirs)
    for epoch, (start, end) in sorted(ends(mine).items(), reverse=True):
        match = other.get(epoch)
        if match is not None and match[0] == start:
            return min(end, match[1], their_max_offset)
    return -1


class EpochFile:
    def __init__(self, store_root: Path) -> None:
        self.path = store_root / FILE_NAME
        self.entries: list[Epoch] = self._read()

    def _read(self) -> list[Epoch]:
        for path in (self.path, self.path.with_name(FILE_NAME + ".bak")):
            try:
                entries = decode(path.read_bytes())
            except (OSError, ValueError):
                continue
            if entries:
                return entries
        return []

    @property
    def last_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else 0

    def append(self, epoch: int, start: int) -> bool:
        """Record that ``epoch`` began at ``start``; False (nothing written) unless it is newer."""
        if self.entries and (epoch <= self.entries[-1].epoch or start <= self.entries[-1].start):
            return False
        self.entries.append(Epoch(epoch, start))
        self._write()
        return True

    def adopt(self, entries: Sequence[Epoch]) -> None:
        """Take the master's epochs (a replica follows its history)."""
        if list(entries) != self.entries:
            self.entries = list(entries)
            self._write()

    def truncate_from(self, offset: int) -> None:
        """Forget epochs that began at or after ``offset`` (the CommitLog was cut there, or a new master
        starts its epoch there)."""
        kept = [e for e in self.entries if e.start < offset]
        if kept != self.entries:
            self.entries = kept
            self._write()

    def _write(self) -> None:
        data = encode(self.entries)
        for path in (self.path.with_name(FILE_NAME + ".bak"), self.path):
            tmp = path.with_suffix(".tmp")
            with tmp.open("wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            tmp.replace(path)
