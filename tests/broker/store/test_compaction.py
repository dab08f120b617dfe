"""Compaction topics in the store: the newest message per key survives compaction, restarts and a
SIGKILL in the middle of a compaction; the compaction log shrinks; the head reads everything."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from broker.protocol.message import decode_records
from broker.store.compaction_store import COMPACTION_DIR
from broker.store.message_store import GetStatus, MessageStore, PutMessage
from cli.main import app
from tests.broker.store.helpers import open_store

TOPIC = "Prices"
KEYS = 50
NEW_VALUES = 300
# the moments of a compaction the crash test kills it at (see tests/broker/store/compaction_worker.py)
MOMENTS = ("rewriting", "marked", "deleted", "moving", "finished")


def new_values(attempt: int) -> int:
    """The first seq a crash-test child writes on ``attempt``."""
    return 10_000 + attempt * NEW_VALUES


def compaction_settings() -> dict[str, object]:
    # 46 units a queue file: 5 of them make a log file of ~10 KiB, so a few hundred messages fill many
    return {
        "compaction_cq_mapped_file_size": 46 * 46,
        "compaction_mapped_file_size": 1,
        "compaction_schedule_interval_ms": 3_600_000,  # the tests compact when they choose
    }


def open_compacting(root: Path) -> MessageStore:
    """A store whose topic ``TOPIC`` is a COMPACTION topic; its compaction never rests for sends (the
    tests call feed and compact themselves)."""
    store = open_store(root, **compaction_settings())
    store.set_topic_policies(frozenset({TOPIC}), {})
    store.compaction.busy = lambda: False
    return store


def price(seq: int) -> PutMessage:
    body = f"{seq % KEYS}={seq}".encode() + b"." * 100
    return PutMessage(TOPIC, 0, body, {"KEYS": f"k{seq % KEYS}", "UNIQ_KEY": f"{seq:032X}"})


def write(store: MessageStore, first: int, count: int) -> None:
    for start in range(first, first + count, 50):
        assert store.put_messages([price(s) for s in range(start, min(first + count, start + 50))]).ok


def read_all(store: MessageStore, offset: int = 0) -> dict[str, int]:
    """Key -> newest seq seen reading the queue from ``offset`` to its end."""
    latest: dict[str, int] = {}
    while True:
        got = store.get_messages(TOPIC, 0, offset, 32)
        if got.status is not GetStatus.FOUND:
            assert got.status in (GetStatus.OFFSET_OVERFLOW_ONE, GetStatus.NO_MATCHED_MESSAGE), got.status
            if got.next_begin_offset <= offset:
                return latest
        for rec in decode_records(got.body):
            key, seq = rec.body.split(b".")[0].decode().split("=")
            latest[f"k{key}"] = max(latest.get(f"k{key}", -1), int(seq))
        offset = got.next_begin_offset


def compaction_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / COMPACTION_DIR).rglob("*") if p.is_file())


def test_compaction_keeps_each_keys_newest_and_shrinks(tmp_path: Path) -> None:
    store = open_compacting(tmp_path)
    write(store, 0, 1000)
    store.compaction.feed()
    before = compaction_bytes(tmp_path)
    expected = {f"k{k}": max(s for s in range(1000) if s % KEYS == k) for k in range(KEYS)}
    assert read_all(store) == expected
    runs = store.compaction.compact_all()
    assert runs and runs[0].messages_kept < runs[0].messages_in
    assert compaction_bytes(tmp_path) < before
    assert read_all(store) == expected
    # a reader from the start now gets few more messages than there are keys
    got = store.get_messages(TOPIC, 0, 0, 1000)
    assert got.count < 1000
    # messages sent after the compaction are read from the head at once, before they are copied
    write(store, 1000, 10)
    head = store.get_messages(TOPIC, 0, 1000, 32)
    assert head.count == 10
    store.shutdown()
    reopened = open_compacting(tmp_path)
    expected.update({f"k{s % KEYS}": s for s in range(1000, 1010)})
    assert read_all(reopened) == expected
    reopened.shutdown()


def test_empty_body_deletes_its_key(tmp_path: Path) -> None:
    store = open_compacting(tmp_path)
    write(store, 0, 600)
    assert store.put_messages([PutMessage(TOPIC, 0, b"", {"KEYS": "k7"})]).ok
    filler = [PutMessage(TOPIC, 0, b"0=0." + b"." * 100, {"KEYS": "k0"}) for _ in range(400)]
    assert store.put_messages(filler).ok  # closes the file that holds the empty message
    store.compaction.feed()
    store.compaction.compact_all()
    keys = read_all(store)
    assert "k7" not in keys and len(keys) == KEYS - 1 and keys["k1"] == 551
    store.shutdown()


def test_sigkill_mid_compaction_loses_no_newest_value(tmp_path: Path) -> None:
    store = open_compacting(tmp_path)
    write(store, 0, 3000)
    store.compaction.feed()
    expected = read_all(store)
    store.shutdown()
    # a child compacts the same store and is SIGKILLed at each moment of a compaction in turn
    for attempt, moment in enumerate(MOMENTS):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.broker.store.compaction_worker", str(tmp_path), str(attempt)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "compacting"
        if moment == "finished":
            assert child.stdout.readline().strip() == "done"
            child.send_signal(signal.SIGKILL)
        assert child.wait(60) == -signal.SIGKILL, moment
        markers = list(tmp_path.glob(f"{COMPACTION_DIR}/compactionLog/*/*/compacting/SWAP"))
        assert bool(markers) == (moment in ("marked", "deleted", "moving")), moment
        first = new_values(attempt)
        expected.update({f"k{s % KEYS}": s for s in range(first, first + NEW_VALUES)})
        reopened = open_compacting(tmp_path)
        assert read_all(reopened) == expected, moment
        assert not list(tmp_path.glob("compaction/*/*/*/compacting")), moment
        reopened.shutdown()


def test_store_tools_read_the_compacted_data(tmp_path: Path) -> None:
    store = open_compacting(tmp_path)
    write(store, 0, 1000)
    store.compaction.feed()
    store.compaction.compact_all()
    store.shutdown()
    runner = CliRunner()
    info = json.loads(runner.invoke(app, ["store", "info", str(tmp_path), "-o", "json"]).stdout)
    (log,) = info["compaction"]
    assert (log["topic"], log["queueId"], log["fedOffset"]) == (TOPIC, 0, 1000)
    assert log["messages"] < 1000 and log["compactedOffset"] >= 0
    dumped = runner.invoke(
        app, ["store", "dump", str(tmp_path), "-t", TOPIC, "--compacted", "-n", "5000", "-o", "json"]
    )
    assert dumped.exit_code == 0, dumped.stderr
    values = {m["keys"]: m["body"] for m in json.loads(dumped.stdout)["messages"]}
    assert values["k3"].startswith("3=953")
    assert len(json.loads(dumped.stdout)["messages"]) == log["messages"]
    # mqadmin dumpCompactionLog prints every record of one compaction log file
    first = sorted((tmp_path / COMPACTION_DIR / "compactionLog" / TOPIC / "0").iterdir())[0]
    printed = runner.invoke(app, ["dumpCompactionLog", "-f", str(first)])
    assert printed.exit_code == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines and all(line.startswith("MessageExt [") and f"topic='{TOPIC}'" in line for line in lines)
    missing = runner.invoke(app, ["dumpCompactionLog", "-f", str(tmp_path / "nope")])
    assert missing.exit_code != 0 and "not exist" in missing.stderr
