"""SIGKILL a SYNC_FLUSH writer at random moments; recovery must keep every acknowledged message
byte-for-byte, keep ConsumeQueue and IndexFile in agreement with the CommitLog, and never return a
partial record."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from broker.protocol.message import decode_record
from tests.broker.store.helpers import TOPIC, body_for, open_store, seq_of

ROUNDS = 20
REPO = Path(__file__).resolve().parents[3]


def _run_writer(root: Path, first_seq: int, run_for: float) -> set[int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.broker.store.crash_writer", str(root), str(first_seq)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    time.sleep(run_for)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    reader.join()
    acked: set[int] = set()
    for line in lines:
        assert not line.startswith("error"), line
        if line.startswith("ack ") and line.endswith("\n"):
            acked.add(int(line[4:]))
    return acked


def _check_store(root: Path, acked: set[int]) -> int:
    """Recover the store and check it; returns the next unused seq."""
    store = open_store(root)
    try:
        assert store.recovery is not None and not store.recovery.clean_shutdown
        seen: set[int] = set()
        for cq in store.queues.of_topic(TOPIC):
            expected_offset = cq.min_offset
            for q_off, phys, size, _tags in cq.iter_units(cq.min_offset):
                assert q_off == expected_offset
                expected_offset += 1
                raw = store.record_at(phys)
                assert raw is not None and len(raw) == size, f"unit {q_off} points at no record"
                rec = decode_record(raw, verify_crc=True)
                assert (rec.topic, rec.queue_id, rec.queue_offset) == (TOPIC, cq.queue_id, q_off)
                seq = seq_of(rec.uniq_key or "")
                assert rec.body == body_for(seq), f"message {seq} differs"
                seen.add(seq)
        missing = acked - seen
        assert not missing, f"acknowledged messages lost: {sorted(missing)[:10]}"
        # every message found through the CommitLog walk is in its queue, and the index finds it
        walked = 0
        for mf, pos, layout in store.commitlog.walk(store.commitlog.min_offset):
            walked += 1
            del mf, pos, layout
        assert walked == len(seen)
        for seq in random.Random(len(seen)).sample(sorted(seen), min(30, len(seen))):
            found = store.query_by_key(TOPIC, f"key-{seq}", 4, 0, 2**62)
            assert [seq_of(r.uniq_key or "") for r in found] == [seq]
            assert found[0].body == body_for(seq)
        return max(seen | acked, default=-1) + 1
    finally:
        store.shutdown()


def test_sigkill_under_sync_flush_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = random.Random(7)
    next_seq = 0
    all_acked: set[int] = set()
    for _ in range(ROUNDS):
        all_acked |= _run_writer(tmp_path, next_seq, rng.uniform(0.05, 0.4))
        # simulate the crash: the writer left its abort marker; recovery runs in a fresh process
        next_seq = _check_store_after_crash(tmp_path, all_acked)
    assert len(all_acked) > 100


def _check_store_after_crash(root: Path, acked: set[int]) -> int:
    assert (root / "abort").exists()
    next_seq = _check_store(root, acked)
    # the clean shutdown after the check removed the marker; the next writer starts normally
    return next_seq
