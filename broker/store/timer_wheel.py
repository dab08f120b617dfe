"""RocketMQ 5's TimerWheel: ``<store>/timerwheel``, one 32-byte slot per precision step.

A slot (big-endian, as upstream): its time in precision steps, the TimerLog positions of its first
and last unit, how many units it holds, and a magic (upstream keeps it 0; here bit ``MAGIC_DELETE``
says the slot holds cancel units, so delivery reads the slot twice only then). The file has
``2 * 7 days`` of 1 s slots (604,800 x 2 x 32 bytes = 37 MiB whatever the precision), a slot is found
by ``time / precision % slots``, and a slot whose stored time is not the asked one is empty: the
wheel is reused lap after lap without clearing.

Slots are read and written with ``pread``/``pwrite`` on a sparse file: nothing of the wheel is held
in memory or mapped, so its cost to the broker is the same for ten timers and for ten million.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from broker.store.errors import CorruptFileError

SLOT = struct.Struct(">qqqii")
SLOT_SIZE = SLOT.size  # 32
TTL_DAYS = 7
SLOTS_TOTAL = TTL_DAYS * 86_400  # upstream's slotsTotal; the file holds twice as many
_SCAN_SLOTS = 8192  # slots read per pread when scanning (256 KiB)


class Slot(NamedTuple):
    time_ms: int
    first_pos: int
    last_pos: int
    num: int
    magic: int


def empty_slot(time_ms: int) -> Slot:
    return Slot(time_ms, -1, -1, 0, 0)


class TimerWheel:
    def __init__(self, path: Path, precision_ms: int) -> None:
        self.path = path
        self.precision = precision_ms
        self.slots = SLOTS_TOTAL * 2
        self.length = self.slots * SLOT_SIZE
        self._fd = -1

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(fd).st_size
        if size not in (0, self.length):
            os.close(fd)
            raise CorruptFileError(f"{self.path}: size {size} bytes, expected {self.length}")
        if size == 0:
            os.ftruncate(fd, self.length)  # sparse: untouched slots cost no disk
        self._fd = fd

    @property
    def span_ms(self) -> int:
        """How far ahead of the slot being delivered a unit may be placed without meeting itself."""
        return self.slots * self.precision

    def _index(self, time_ms: int) -> int:
        return time_ms // self.precision % self.slots

    def get(self, time_ms: int) -> Slot:
        """The slot of ``time_ms`` (a multiple of the precision); empty when it holds another lap."""
        raw = os.pread(self._fd, SLOT_SIZE, self._index(time_ms) * SLOT_SIZE)
        steps, first, last, num, magic = SLOT.unpack(raw)
        if steps != time_ms // self.precision or last < 0:
            return empty_slot(time_ms)
        return Slot(time_ms, first, last, num, magic)

    def put(self, slot: Slot) -> None:
        data = SLOT.pack(slot.time_ms // self.precision, slot.first_pos, slot.last_pos, slot.num, slot.magic)
        os.pwrite(self._fd, data, self._index(slot.time_ms) * SLOT_SIZE)

    def scan(self, from_ms: int, count: int) -> Iterator[Slot]:
        """The non-empty slots among the ``count`` from ``from_ms`` on, in time order."""
        count = min(count, self.slots)
        step = self.precision
        start = from_ms // step
        done = 0
        while done < count:
            index = (start + done) % self.slots
            n = min(_SCAN_SLOTS, count - done, self.slots - index)
            raw = os.pread(self._fd, n * SLOT_SIZE, index * SLOT_SIZE)
            for i, (steps, first, last, num, magic) in enumerate(SLOT.iter_unpack(raw)):
                if steps == start + done + i and last >= 0:
                    yield Slot(steps * step, first, last, num, magic)
            done += n

    def flush(self) -> None:
        os.fdatasync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
