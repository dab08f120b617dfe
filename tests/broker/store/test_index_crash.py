"""A put cut after any of its mmap writes (what a killed process leaves behind) loses nothing.

The cut is simulated by swapping the module's struct packers for ones that raise after a budget of
writes; the mmap then holds exactly the bytes a process killed at that point would have left.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from broker.store import index_file
from broker.store.index_service import IndexService
from tests.broker.store.test_index_service import ALL_TIME, T0, Message, _check_all_found, _expected, _put_all

SLOTS, ENTRIES = 4, 64  # few slots: keys of different messages share chains
MESSAGES: list[Message] = [
    ("T", "u0", ["Aa", "BB", "x"], 100, T0),  # first of the file; "Aa"/"BB" share a hash
    ("T", "u1", [], 200, T0 + 1000),
    ("T", "u2", ["BB", "y", "Aa"], 300, T0 + 2000),
    ("T", "u3", [], 400, T0 + 3000),
    ("T", None, ["x", "z"], 500, T0 + 4000),
    ("T", "u5", ["y"], 600, T0 + 5000),
]
_PACKERS = ("_ENTRY", "_I32", "_I64", "_COUNTS")


class _Cut(Exception):
    pass


class _CuttingStruct:
    def __init__(self, inner: struct.Struct, budget: list[int]) -> None:
        self._inner = inner
        self._budget = budget

    def pack_into(self, buffer: Any, offset: int, *values: Any) -> None:
        if self._budget[0] == 0:
            raise _Cut
        self._budget[0] -= 1
        self._inner.pack_into(buffer, offset, *values)

    def unpack_from(self, buffer: Any, offset: int = 0) -> tuple[Any, ...]:
        return self._inner.unpack_from(buffer, offset)


@contextmanager
def _writes_allowed(monkeypatch: pytest.MonkeyPatch, budget: int) -> Iterator[list[int]]:
    left = [budget]
    with monkeypatch.context() as patch:
        for name in _PACKERS:
            patch.setattr(index_file, name, _CuttingStruct(getattr(index_file, name), left))
        yield left


def _check_found(service: IndexService, must: list[Message], victim: Message) -> None:
    """Keys of ``must`` find all their offsets; the interrupted ``victim`` may or may not be found,
    depending on whether the cut came after its indexCount was written."""
    for topic, uniq, keys, _, _ in must:
        for key in ([uniq] if uniq else []) + keys:
            found = set(service.query(topic, key, 10_000, *ALL_TIME))
            assert _expected(must, topic, key) <= found <= _expected([*must, victim], topic, key), key


def _writes_of_put(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: int) -> int:
    service = IndexService(tmp_path / "count", SLOTS, ENTRIES)
    service.load()
    _put_all(service, MESSAGES[:victim])
    with _writes_allowed(monkeypatch, 1 << 30) as left:
        _put_all(service, [MESSAGES[victim]])
    service.close()
    return (1 << 30) - left[0]


def _cut_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: int, budget: int) -> IndexService:
    service = IndexService(tmp_path, SLOTS, ENTRIES)
    service.load()
    _put_all(service, MESSAGES[:victim])
    with _writes_allowed(monkeypatch, budget), pytest.raises(_Cut):
        _put_all(service, [MESSAGES[victim]])
    return service


def _cut_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, int, Path]]:
    for victim in range(len(MESSAGES)):
        writes = _writes_of_put(tmp_path / f"m{victim}", monkeypatch, victim)
        assert writes >= 4  # entry, slot, counts, end offsets (and more for multi-key messages)
        for budget in range(writes):
            yield victim, budget, tmp_path / f"m{victim}" / f"cut{budget}"


def test_reput_in_the_same_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for victim, budget, folder in _cut_points(tmp_path, monkeypatch):
        service = _cut_service(folder, monkeypatch, victim, budget)
        _put_all(service, MESSAGES[victim:])
        _check_all_found(service, MESSAGES)
        service.close()


def test_redispatch_after_reopen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for victim, budget, folder in _cut_points(tmp_path, monkeypatch):
        _cut_service(folder, monkeypatch, victim, budget).close()  # killed: the map is all that is left
        reader = IndexService(folder, SLOTS, ENTRIES, read_only=True)
        reader.load()
        _check_found(reader, MESSAGES[:victim], MESSAGES[victim])  # readers see through dangling slots
        reader.close()
        recovered = IndexService(folder, SLOTS, ENTRIES)
        recovered.load(clean_shutdown=False, checkpoint_index_ts=T0 + 10_000)
        _put_all(recovered, MESSAGES)  # recovery replays from the start; done messages are skipped
        _check_all_found(recovered, MESSAGES)
        recovered.close()


def test_a_different_message_after_reopen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The interrupted message is gone (e.g. its CommitLog record did not survive): the slots it
    touched must not hide older entries from the messages put next."""
    for victim, budget, folder in _cut_points(tmp_path, monkeypatch):
        _cut_service(folder, monkeypatch, victim, budget).close()
        survivors = MESSAGES[:victim] + MESSAGES[victim + 1 :]
        recovered = IndexService(folder, SLOTS, ENTRIES)
        recovered.load(clean_shutdown=False, checkpoint_index_ts=T0 + 10_000)
        _put_all(recovered, survivors)
        _check_found(recovered, survivors, MESSAGES[victim])
        recovered.close()


def test_reader_resolves_a_slot_left_dangling(tmp_path: Path) -> None:
    """Bytes written by hand: an uncounted entry whose slot points at it, as a kill leaves them."""
    service = IndexService(tmp_path, SLOTS, ENTRIES)
    service.load()
    service.put_message("T", None, "k", 100, T0)
    (f,) = service._files
    base = 40 + SLOTS * 4
    key_hash = f._mm[base + 20 : base + 24]  # entry 1's
    f._mm[base + 2 * 20 : base + 3 * 20] = key_hash + struct.pack(">qii", 200, 0, 1)  # uncounted entry 2
    slot = int.from_bytes(key_hash, "big") % SLOTS
    f._mm[40 + slot * 4 : 44 + slot * 4] = struct.pack(">i", 2)
    assert service.query("T", "k", 10, *ALL_TIME) == [100]
    service.close()
