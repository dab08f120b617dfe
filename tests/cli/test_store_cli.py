"""``rmq store …`` against a real store folder: output formats, exit codes, damage detection."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from tests.cli.conftest import BINARY_BODY, BINARY_TOPIC, COUNT, TOPIC, BuiltStore

Rmq = Callable[..., Result]
MESSAGE_KEYS = {
    "topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "uniqKey", "tags", "keys", "flag",
    "sysFlag", "bornTimestamp", "bornHost", "storeTimestamp", "storeHost", "reconsumeTimes",
    "preparedTransactionOffset", "bodyCRC", "storeSize", "properties", "body", "bodyEncoding",
}  # fmt: skip
RMQ = Path(sys.executable).with_name("rmq")


def ok_json(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def one_error_line(result: Result, code: int) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rmq: error: "), result.stderr
    return lines[0]


# -- info -------------------------------------------------------------------------------------------
def test_info_json(rmq: Rmq, built: BuiltStore) -> None:
    doc = ok_json(rmq("store", "info", built.path, "-o", "json"))
    assert set(doc) == {
        "path", "cleanShutdown", "minOffset", "maxOffset", "commitlogFiles", "queues", "indexFiles",
        "checkpoint", "recovery", "compaction",
    }  # fmt: skip
    last = built.messages[-1]
    assert doc["cleanShutdown"] is True
    assert doc["minOffset"] == 0
    assert doc["maxOffset"] == last.offset + last.size
    files = doc["commitlogFiles"]
    assert [f["name"] for f in files] == ["00000000000000000000", "00000000000000065536"]
    assert files[1] == {
        "name": "00000000000000065536",
        "startOffset": 65536,
        "size": 65536,
        "used": last.offset + last.size - 65536,
    }
    assert doc["queues"] == [
        {"topic": BINARY_TOPIC, "queueId": 0, "minOffset": 0, "maxOffset": 1},
        {"topic": TOPIC, "queueId": 0, "minOffset": 0, "maxOffset": COUNT // 2},
        {"topic": TOPIC, "queueId": 1, "minOffset": 0, "maxOffset": COUNT // 2},
    ]
    index = doc["indexFiles"]
    assert index and sum(f["entries"] for f in index) == 3 * COUNT + 1  # UNIQ_KEY + 2 keys each, + Bin
    assert set(index[0]) == {
        "name", "beginTimestamp", "endTimestamp", "beginPhyOffset", "endPhyOffset", "hashSlotsUsed", "entries"
    }  # fmt: skip
    assert set(doc["checkpoint"]) == {
        "physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp", "masterFlushedOffset",
        "confirmPhyOffset",
    }  # fmt: skip
    assert doc["checkpoint"]["physicMsgTimestamp"] > 0
    assert doc["recovery"] == {
        "scannedFrom": 0,
        "commitlogEnd": last.offset + last.size,
        "truncatedBytes": 0,
        "problem": None,
    }


def test_info_table_and_text(rmq: Rmq, built: BuiltStore) -> None:
    table = rmq("store", "info", built.path)
    assert table.exit_code == 0
    assert "\x1b[" not in table.stdout  # no colour when stdout is not a terminal
    for expected in ("00000000000000065536", "ConsumeQueues", "IndexFiles", str(COUNT // 2)):
        assert expected in table.stdout
    text = rmq("store", "info", built.path, "-o", "text")
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert "clean shutdown       yes" in lines
    assert any(line.split() == [TOPIC, "1", "0", str(COUNT // 2)] for line in lines)


def test_abort_file_means_unclean(rmq: Rmq, damaged: BuiltStore) -> None:
    (damaged.path / "abort").write_text("4242")
    assert ok_json(rmq("store", "info", damaged.path, "-o", "json"))["cleanShutdown"] is False


# -- verify -----------------------------------------------------------------------------------------
def test_verify_clean_store(rmq: Rmq, built: BuiltStore) -> None:
    doc = ok_json(rmq("store", "verify", built.path, "-o", "json"))
    assert doc["ok"] is True
    assert doc["problems"] == [] and doc["moreProblems"] == 0
    assert doc["records"] == COUNT + 1
    assert doc["units"] == COUNT + 1 and doc["queues"] == 3
    assert doc["bytes"] == sum(m.size for m in built.messages)


def test_verify_finds_crc_flip_and_torn_tail(rmq: Rmq, damaged: BuiltStore) -> None:
    flipped = damaged.messages[3]  # in the first file
    last = damaged.messages[-1]  # the tail of the second file
    assert flipped.offset < 65536 <= last.offset
    first = damaged.path / "commitlog" / "00000000000000000000"
    second = damaged.path / "commitlog" / "00000000000000065536"
    with first.open("r+b") as f:
        f.seek(flipped.offset + 100)  # inside the body (it starts at 88 with IPv4 hosts)
        byte = f.read(1)
        f.seek(flipped.offset + 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    with second.open("r+b") as f:  # a write cut short: the record's second half never arrived
        f.seek(last.offset - 65536 + last.size // 2)
        f.write(bytes(last.size - last.size // 2))

    result = rmq("store", "verify", damaged.path, "-o", "json")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"rmq: error: {len(json.loads(result.stdout)['problems'])} problem(s) found in store {damaged.path}"
    ]
    doc = json.loads(result.stdout)
    assert doc["ok"] is False
    commitlog = [p for p in doc["problems"] if p["area"] == "commitlog"]
    assert commitlog[0] == {
        "area": "commitlog",
        "file": "commitlog/00000000000000000000",
        "offset": flipped.offset,
        "reason": "body CRC mismatch",
    }
    assert commitlog[1]["file"] == "commitlog/00000000000000065536"
    assert commitlog[1]["offset"] == last.offset
    assert len(commitlog) == 2
    # recovery stops at the flipped record and would cut everything after it
    assert doc["recovery"]["commitlogEnd"] == flipped.offset
    assert doc["recovery"]["truncatedBytes"] > 0
    dropped = [p for p in doc["problems"] if p["area"] == "consumequeue"]
    assert {p["file"].rsplit("/", 1)[0] for p in dropped} == {
        "consumequeue/T/0",
        "consumequeue/T/1",
        "consumequeue/Bin/0",
    }
    assert all("recovery drops them" in p["reason"] for p in dropped)

    table = rmq("store", "verify", damaged.path)
    assert table.exit_code == 1
    assert "body CRC mismatch" in table.stdout and str(flipped.offset) in table.stdout


def test_verify_finds_unit_pointing_at_wrong_record(rmq: Rmq, damaged: BuiltStore) -> None:
    victim, other = damaged.of_topic(TOPIC)[4], damaged.of_topic(TOPIC)[5]  # queue 0 offset 2, queue 1
    cq_file = damaged.path / "consumequeue" / TOPIC / "0" / "00000000000000000000"
    with cq_file.open("r+b") as f:
        f.seek(victim.queue_offset * 20)
        f.write(other.offset.to_bytes(8, "big"))
    doc = json.loads(rmq("store", "verify", damaged.path, "-o", "json").stdout)
    assert doc["problems"] == [
        {
            "area": "consumequeue",
            "file": f"consumequeue/{TOPIC}/0/00000000000000000000",
            "offset": victim.queue_offset,
            "reason": f"points at a record of {TOPIC}/1 at CommitLog offset {other.offset}",
        }
    ]


# -- lookup -----------------------------------------------------------------------------------------
def test_lookup_by_msg_id(rmq: Rmq, built: BuiltStore) -> None:
    m = built.messages[7]
    doc = ok_json(rmq("store", "lookup", built.path, "--msg-id", m.msg_id, "-o", "json"))
    [found] = doc["messages"]
    assert set(found) == MESSAGE_KEYS
    assert found["topic"] == TOPIC
    assert found["queueId"] == m.queue_id == 1
    assert found["queueOffset"] == m.queue_offset == 3
    assert found["commitLogOffset"] == m.offset
    assert found["msgId"] == m.msg_id
    assert found["uniqKey"] == m.uniq_key
    assert found["tags"] == "tag1"
    assert found["keys"] == "k7 shared"
    assert found["storeSize"] == m.size
    assert found["storeHost"] == "127.0.0.1:10911"
    assert found["properties"] == {"TAGS": "tag1", "KEYS": "k7 shared", "UNIQ_KEY": m.uniq_key}
    assert found["body"] == m.body.decode() and found["bodyEncoding"] == "utf-8"


def test_lookup_single_message_table(rmq: Rmq, built: BuiltStore) -> None:
    m = built.messages[7]
    result = rmq("store", "lookup", built.path, "--msg-id", m.msg_id)
    assert result.exit_code == 0
    for expected in (m.msg_id, m.uniq_key, "k7 shared", "message 7"):
        assert expected in result.stdout


def test_lookup_by_key_newest_first(rmq: Rmq, built: BuiltStore) -> None:
    doc = ok_json(rmq("store", "lookup", built.path, "-t", TOPIC, "-k", "shared", "--max", "5", "-o", "json"))
    offsets = [m["commitLogOffset"] for m in doc["messages"]]
    assert offsets == [m.offset for m in built.of_topic(TOPIC)[-5:]][::-1]
    one = ok_json(rmq("store", "lookup", built.path, "-t", TOPIC, "-k", "k11", "-o", "json"))
    assert [m["keys"] for m in one["messages"]] == ["k11 shared"]


def test_lookup_by_unique_key_and_uniq_key_as_msg_id(rmq: Rmq, built: BuiltStore) -> None:
    m = built.messages[20]
    by_key = ok_json(
        rmq("store", "lookup", built.path, "-t", TOPIC, "--unique-key", m.uniq_key, "-o", "json")
    )
    assert [x["commitLogOffset"] for x in by_key["messages"]] == [m.offset]
    # as mqadmin queryMsgById does: an id that is no offset id is tried as a UNIQ_KEY of the topic
    by_id = ok_json(rmq("store", "lookup", built.path, "-t", TOPIC, "--msg-id", m.uniq_key, "-o", "json"))
    assert by_id == by_key


def test_lookup_time_range_excludes(rmq: Rmq, built: BuiltStore) -> None:
    result = rmq("store", "lookup", built.path, "-t", TOPIC, "-k", "k11", "--begin", "1", "--end", "2")
    assert "no message" in one_error_line(result, 1)


def test_binary_body_is_base64(rmq: Rmq, built: BuiltStore) -> None:
    m = built.messages[-1]
    doc = ok_json(rmq("store", "lookup", built.path, "--msg-id", m.msg_id, "-o", "json"))
    [found] = doc["messages"]
    assert found["bodyEncoding"] == "base64"
    assert base64.b64decode(found["body"]) == BINARY_BODY
    text = rmq("store", "lookup", built.path, "--msg-id", m.msg_id, "-o", "text")
    assert text.exit_code == 0
    assert "\x00" not in text.stdout and "\\x00\\x01" in text.stdout  # escaped, never raw


# -- dump -------------------------------------------------------------------------------------------
def test_dump_queue_from_limit(rmq: Rmq, built: BuiltStore) -> None:
    doc = ok_json(
        rmq("store", "dump", built.path, "-t", TOPIC, "-q", "1", "--from", "4", "-n", "3", "-o", "json")
    )
    assert doc["topic"] == TOPIC and doc["unreadable"] == []
    queue1 = [m for m in built.of_topic(TOPIC) if m.queue_id == 1]
    assert [(m["queueId"], m["queueOffset"]) for m in doc["messages"]] == [(1, 4), (1, 5), (1, 6)]
    assert [m["msgId"] for m in doc["messages"]] == [m.msg_id for m in queue1[4:7]]
    assert all(set(m) == MESSAGE_KEYS for m in doc["messages"])


def test_dump_all_queues_in_order(rmq: Rmq, built: BuiltStore) -> None:
    doc = ok_json(rmq("store", "dump", built.path, "--topic", TOPIC, "--limit", "1000", "-o", "json"))
    got = [(m["queueId"], m["queueOffset"]) for m in doc["messages"]]
    assert got == [(q, o) for q in (0, 1) for o in range(COUNT // 2)]


def test_dump_table_and_text(rmq: Rmq, built: BuiltStore) -> None:
    first = built.of_topic(TOPIC)[0]
    for fmt in ("table", "text"):
        result = rmq("store", "dump", built.path, "-t", TOPIC, "-n", "2", "-o", fmt)
        assert result.exit_code == 0
        assert first.msg_id in result.stdout and "k0 shared" in result.stdout and "tag0" in result.stdout
    text = rmq("store", "dump", built.path, "-t", TOPIC, "-n", "2", "-o", "text").stdout.splitlines()
    assert text[1].split()[:3] == ["QUEUE", "OFFSET", "MSG"] and len(text) == 4


# -- errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (("store", "info", "{missing}"), 1, "no such folder"),
        (("store", "verify", "{not_store}"), 1, "not a RocketMQ store"),
        (("store", "lookup", "{store}", "--msg-id", "XYZ"), 2, "32 or 56 hex digits"),
        (
            ("store", "lookup", "{store}", "--msg-id", "7F00000100002A9F00000000DEADBEEF"),
            1,
            "no message with id",
        ),
        (("store", "lookup", "{store}", "-k", "k1"), 2, "needs the topic"),
        (("store", "lookup", "{store}", "-t", TOPIC), 2, "exactly one of"),
        (("store", "lookup", "{store}", "-t", "Nope", "-k", "k1"), 1, "topic 'Nope' not found"),
        (("store", "dump", "{store}", "-t", "Nope"), 1, "topic 'Nope' not found"),
        (("store", "dump", "{store}", "-t", TOPIC, "-q", "9"), 1, "its queues: 0, 1"),
        (("store", "dump", "{store}", "-t", TOPIC, "-n", "0"), 2, "limit must be positive"),
        (("store", "dump", "{store}"), 2, "Missing option '--topic'"),
        (("store", "info", "{store}", "-o", "xml"), 2, "'xml' is not one of"),
        (("store", "nope"), 2, "No such command"),
        (("--nope",), 2, "No such option"),
    ],
)
def test_errors_are_one_line(
    rmq: Rmq, built: BuiltStore, tmp_path: Path, args: tuple[str, ...], code: int, fragment: str
) -> None:
    places = {"missing": tmp_path / "missing", "not_store": tmp_path, "store": built.path}
    line = one_error_line(rmq(*(a.format(**places) for a in args)), code)
    assert fragment in line


def test_debug_shows_traceback(rmq: Rmq, tmp_path: Path) -> None:
    plain = rmq("store", "info", tmp_path / "missing")
    assert "Traceback" not in plain.stderr
    debug = rmq("--debug", "store", "info", tmp_path / "missing")
    assert debug.exit_code == 1
    assert "Traceback" in debug.stderr and "NotFound" in debug.stderr
    assert debug.stderr.splitlines()[-1].startswith("rmq: error: ")


# -- the installed console script -------------------------------------------------------------------
def test_console_script(built: BuiltStore, tmp_path: Path) -> None:
    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(RMQ), *map(str, args)], capture_output=True, text=True, timeout=60)

    info = run("store", "info", built.path, "-o", "json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["maxOffset"] == built.messages[-1].offset + built.messages[-1].size
    missing = run("store", "lookup", tmp_path / "missing", "--msg-id", built.messages[0].msg_id)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == f"rmq: error: {tmp_path / 'missing'}: no such folder\n"
    usage = run("store", "dump", built.path)
    assert usage.returncode == 2 and len(usage.stderr.splitlines()) == 1
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("rmq ")
    assert version.stdout.rstrip().endswith(("(hot modules compiled with mypyc)", "(plain Python sources)"))
