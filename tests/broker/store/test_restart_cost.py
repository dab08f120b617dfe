"""A restart costs the records it checks and the torn tail it cuts, never a pass over the rest of a
preallocated CommitLog file: the bytes past the written data are neither read whole nor rewritten."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker.store.message_store import MessageStore
from tests.broker.store.helpers import message_for, open_store

pytestmark = pytest.mark.servers  # starts a writer process

REPO = Path(__file__).resolve().parents[3]
# files far larger than the bound on zeros a torn append may hold (body limit + 64 KiB)
GEOMETRY = {"mapped_file_size_commit_log": 8 << 20, "max_message_size": 16 << 10}
SENTINEL = b"\xa5" * 8  # stands for bytes a restart must not touch, far past the written data


def _kill_writer_midway(root: Path) -> None:
    args = [f"{k}={v}" for k, v in GEOMETRY.items()]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.broker.store.crash_writer", str(root), "0", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()


def _last_file(root: Path) -> Path:
    return sorted((root / "commitlog").iterdir())[-1]


def _valid_end(root: Path) -> int:
    store = MessageStore.open_read_only(root)
    try:
        assert store.recovery is not None
        return store.recovery.commitlog_end
    finally:
        store.shutdown()


def test_restart_after_sigkill_zeroes_only_the_torn_tail(tmp_path: Path) -> None:
    _kill_writer_midway(tmp_path)
    end = _valid_end(tmp_path)
    path = _last_file(tmp_path)
    cut = end - int(path.name)
    before = bytearray(path.read_bytes())
    assert 0 < cut < len(before) - (1 << 20)
    # the kill's torn record, made certain: the head of a record past the valid end
    before[cut : cut + 60] = before[:60]
    before[-len(SENTINEL) :] = SENTINEL
    path.write_bytes(before)

    store = open_store(tmp_path, **GEOMETRY)
    try:
        assert store.recovery is not None and not store.recovery.clean_shutdown
        assert store.recovery.commitlog_end == end
        assert store.recovery.truncated_bytes >= 60
    finally:
        store.shutdown()
    after = path.read_bytes()
    assert after[:cut] == before[:cut]  # every whole record kept
    assert after[cut : -len(SENTINEL)].count(0) == len(after) - cut - len(SENTINEL)  # torn tail gone
    assert after[-len(SENTINEL) :] == SENTINEL  # the region past it never rewritten


def test_clean_restart_leaves_the_commitlog_file_as_it_was(tmp_path: Path) -> None:
    store = open_store(tmp_path, **GEOMETRY)
    for seq in range(200):
        assert store.put_messages([message_for(seq)]).ok
    store.shutdown()
    path = _last_file(tmp_path)
    before = bytearray(path.read_bytes())
    before[-len(SENTINEL) :] = SENTINEL
    path.write_bytes(before)

    store = open_store(tmp_path, **GEOMETRY)
    assert store.recovery is not None and store.recovery.clean_shutdown
    store.shutdown()
    assert path.read_bytes() == before
