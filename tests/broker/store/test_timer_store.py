"""The timer files: units linked per slot in RocketMQ 5's TimerLog/TimerWheel formats, a crash's
half-written tail undone, TimerLog files no slot reaches deleted, the checkpoint at upstream's offsets."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from broker.store.errors import CorruptFileError
from broker.store.timer_checkpoint import TimerProgress, load_checkpoint, save_checkpoint
from broker.store.timer_log import BLANK_MAGIC, UNIT_SIZE, pack_unit
from broker.store.timer_store import Placement, TimerStore
from broker.store.timer_wheel import SLOT, SLOTS_TOTAL

P = 1000
T0 = 1_800_000_000_000


def _store(root: Path, file_size: int = 52 * 10 + 16) -> TimerStore:
    store = TimerStore(root, P, file_size)
    store.open()
    return store


def _place(store: TimerStore, *slots_and_offsets: tuple[int, int], deletes: bool = False) -> int:
    return store.place([Placement(off, 100, T0 + s * P, 7, deletes) for s, off in slots_and_offsets], T0)


def _offsets(store: TimerStore, slot: int) -> list[int]:
    found = store.wheel.get(T0 + slot * P)
    return [u.offset_py for u in store.units(found.last_pos)]


def test_units_are_linked_per_slot_newest_first(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _place(store, (1, 100), (2, 200), (1, 300))
    _place(store, (1, 400))
    assert _offsets(store, 1) == [400, 300, 100] and _offsets(store, 2) == [200]
    slot = store.wheel.get(T0 + P)
    assert (slot.num, slot.first_pos) == (3, 0)
    assert store.wheel.get(T0 + 3 * P).last_pos == -1  # empty
    assert store.next_busy(T0, T0 + 10 * P) == slot
    assert store.next_busy(T0 + 3 * P, T0 + 10 * P) is None
    batch, rest = store.walk(slot.last_pos, 2)
    assert [u.offset_py for u in batch] == [400, 300] and rest == 0
    store.close()


def test_a_unit_never_straddles_two_files(tmp_path: Path) -> None:
    store = _store(tmp_path)  # room for 10 units and the blank marker per file
    end = _place(store, *((1, i) for i in range(12)))
    first, second = store.log.queue.files
    assert end == second.file_from + 2 * UNIT_SIZE
    size, _zero, magic = struct.unpack_from(">iqi", first.mm, 10 * UNIT_SIZE)
    assert magic == BLANK_MAGIC and size == first.size - 10 * UNIT_SIZE
    assert _offsets(store, 1) == list(range(11, -1, -1))
    store.close()


def test_recovery_cuts_units_written_after_the_checkpoint(tmp_path: Path) -> None:
    store = _store(tmp_path)
    saved_end = _place(store, (1, 10), (2, 20))
    store.checkpoint(TimerProgress(read_ms=T0, log_end=saved_end, queue_offset=2))
    _place(store, (1, 11), (3, 30))
    # a kill after a unit reached the log but before its slot pointed at it
    store.log.append(pack_unit(store.wheel.get(T0 + 2 * P).last_pos, 1, T0, T0 + 2 * P, 21, 100, 7))
    store.log.commit()
    store.close()

    again = _store(tmp_path)
    assert again.log.end == saved_end
    assert _offsets(again, 1) == [10] and _offsets(again, 2) == [20] and _offsets(again, 3) == []
    assert again.wheel.get(T0 + P).num == 1
    assert again.log.unit_at(saved_end) is None  # zeroed, not left to be mistaken for a unit later
    _place(again, (1, 12))
    assert _offsets(again, 1) == [12, 10]
    again.close()


def test_files_no_pending_slot_reaches_are_deleted(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _place(store, *((1, i) for i in range(10)))  # fills the first file
    _place(store, (5, 99))
    assert len(store.log.queue.files) == 2
    assert store.clean(T0 + P) == 0  # slot 1 is still pending
    assert store.clean(T0 + 2 * P) == 1
    assert [f.file_from for f in store.log.queue.files] == [536]
    assert _offsets(store, 5) == [99]
    store.close()


def test_checkpoint_keeps_upstreams_offsets(tmp_path: Path) -> None:
    path = tmp_path / "config" / "timercheck"
    save_checkpoint(path, TimerProgress(read_ms=T0, log_end=52, queue_offset=9, slot_resume=104, version=3))
    raw = path.read_bytes()
    assert len(raw) == 4096
    read_ms, flush_pos, queue_offset, master_offset = struct.unpack_from(">4q", raw)
    assert (read_ms, flush_pos, queue_offset, master_offset) == (T0, 52, 9, 9)
    assert struct.unpack_from(">q", raw, 48)[0] == 3  # the data version's counter
    assert load_checkpoint(path) == TimerProgress(T0, 52, 9, 104, 3)
    upstream = struct.pack(">7q", T0, 52, 9, 9, 0, 0, 1).ljust(4096, b"\0")  # no slot position
    path.write_bytes(upstream)
    assert load_checkpoint(path).slot_resume == -1


def test_a_wheel_of_another_size_is_refused(tmp_path: Path) -> None:
    (tmp_path / "timerwheel").write_bytes(SLOT.pack(0, -1, -1, 0, 0) * 10)
    with pytest.raises(CorruptFileError, match="timerwheel"):
        _store(tmp_path)
    (tmp_path / "timerwheel").unlink()
    store = _store(tmp_path)
    assert (tmp_path / "timerwheel").stat().st_size == SLOTS_TOTAL * 2 * 32
    store.close()
