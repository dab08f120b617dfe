"""Store behaviour a broker relies on: layout on disk, reads, searches, limits, flush, recovery."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol.javahash import tags_code
from broker.protocol.message import BLANK_MAGIC, TRANSACTION_PREPARED_TYPE, decode_record
from broker.store.config_files import ConfigFile, decode_offset_file, encode_offset_file
from broker.store.consume_queue import Boundary
from broker.store.errors import StoreLockedError
from broker.store.message_store import GetStatus, MessageStore, PutMessage, PutStatus
from tests.store.helpers import open_store, small_config
from tests.vectors import wire_item


def msg(topic: str = "T", queue: int = 0, body: bytes = b"x" * 100, **props: str) -> PutMessage:
    return PutMessage(topic, queue, body, dict(props))


def test_files_are_named_by_offset_and_closed_by_a_blank_marker(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    for _ in range(200):
        assert store.put_messages([msg(body=b"y" * 900)]).ok
    names = sorted(p.name for p in (tmp_path / "commitlog").iterdir())
    assert names[:3] == ["00000000000000000000", "00000000000000065536", "00000000000000131072"]
    first = store.commitlog.files.files[0]
    scan_end = store.commitlog.scan(0).end
    assert scan_end == store.commitlog.max_offset
    # the last record of file 0 is followed by "remaining, BLANK_MAGIC"
    pos = 0
    while True:
        size, magic = struct.unpack_from(">ii", first.mm, pos)
        if magic == BLANK_MAGIC:
            assert size == first.size - pos
            break
        pos += size
    store.shutdown()


def test_consume_queue_unit_layout_matches_vector(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.put_messages([msg("TopicTest", 1, b"Hello RocketMQ", TAGS="TagA")])
    raw = (tmp_path / "consumequeue" / "TopicTest" / "1" / "00000000000000000000").read_bytes()[:20]
    size = store.commitlog.scan(0).end
    expected = bytes.fromhex(wire_item("consume_queue_unit")["hex"])
    assert raw[8:] == struct.pack(">i", size) + expected[12:]
    assert struct.unpack(">q", raw[:8])[0] == 0
    store.shutdown()


def test_get_messages_statuses_and_tag_filter(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    assert store.get_messages("T", 0, 0, 32).status is GetStatus.NO_MATCHED_LOGIC_QUEUE
    for i in range(10):
        store.put_messages([msg(TAGS="a" if i % 2 else "b", KEYS=f"k{i}")])
    r = store.get_messages("T", 0, 0, 4)
    assert (r.status, r.next_begin_offset, r.min_offset, r.max_offset) == (GetStatus.FOUND, 4, 0, 10)
    assert [decode_record(b).queue_offset for b in r.records] == [0, 1, 2, 3]
    only_a = store.get_messages("T", 0, 0, 32, tag_filter=lambda code: code == tags_code("a"))
    assert [decode_record(b).tags for b in only_a.records] == ["a"] * 5
    none = store.get_messages("T", 0, 0, 32, tag_filter=lambda code: False)
    assert (none.status, none.next_begin_offset) == (GetStatus.NO_MATCHED_MESSAGE, 10)
    assert store.get_messages("T", 0, 10, 32).status is GetStatus.OFFSET_OVERFLOW_ONE
    bad = store.get_messages("T", 0, 99, 32)
    assert (bad.status, bad.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_BADLY, 10)
    store.shutdown()


def test_search_offset_by_time_lower_and_upper(tmp_path: Path) -> None:
    now = [1000.0]
    store = MessageStore(small_config(tmp_path), clock=lambda: now[0])
    store.start()
    for t in (1000, 1000, 2000, 3000, 3000, 4000):
        now[0] = t
        store.put_messages([msg()])
    search = store.offset_by_time
    assert search("T", 0, 3000_000, Boundary.LOWER) == 3
    assert search("T", 0, 3000_000, Boundary.UPPER) == 4
    assert search("T", 0, 2500_000, Boundary.LOWER) == 3
    assert search("T", 0, 2500_000, Boundary.UPPER) == 2
    assert search("T", 0, 1, Boundary.LOWER) == 0
    assert search("T", 0, 1, Boundary.UPPER) == 0
    assert search("T", 0, 9999_000, Boundary.LOWER) == 6
    assert search("T", 0, 9999_000, Boundary.UPPER) == 5
    assert store.earliest_store_time("T", 0) == 1000_000
    store.shutdown()


def test_limits_are_refused_with_precise_remarks(tmp_path: Path) -> None:
    store = open_store(tmp_path, max_message_size=1000)
    big = store.put_messages([msg(body=b"x" * 1001)])
    assert big.status is PutStatus.MESSAGE_ILLEGAL and "1001 bytes exceeds the maximum 1000" in big.remark
    props = store.put_messages([PutMessage("T", 0, b"", {"p": "v" * 33000})])
    assert props.status is PutStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.put_messages([msg(topic="t" * 128)]).status is PutStatus.MESSAGE_ILLEGAL
    assert store.put_messages([msg(topic="%RETRY%" + "g" * 200)]).ok
    # a refused batch writes nothing at all
    before = store.commitlog.max_offset
    assert not store.put_messages([msg(), msg(body=b"x" * 5000)]).ok
    assert store.commitlog.max_offset == before
    store.shutdown()


def test_half_messages_have_no_queue_unit_and_delay_units_carry_delivery_time(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path, message_delay_level="1s 5s"), clock=lambda: 100.0)
    store.start()
    half = PutMessage("T", 0, b"h", {}, sys_flag=TRANSACTION_PREPARED_TYPE)
    res = store.put_messages([half, msg()])
    assert res.queue_offsets == [0, 0] and store.max_offset("T", 0) == 1
    store.put_messages([msg("SCHEDULE_TOPIC_XXXX", 1, DELAY="2", REAL_TOPIC="T")])
    cq = store.consume_queue("SCHEDULE_TOPIC_XXXX", 1)
    assert cq is not None and (unit := cq.unit_at(0)) is not None
    assert unit.tags_code == 100_000 + 5_000
    store.shutdown()


def test_torn_tail_is_truncated_exactly(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    for i in range(30):
        store.put_messages([msg(queue=i % 2, KEYS=f"k{i}")])
    end = store.commitlog.max_offset
    last_record = store.record_at(store.put_messages([msg()]).offsets[0])
    assert last_record is not None
    store.shutdown()
    # a crash in the middle of the next append: half a record after the valid end
    cl = tmp_path / "commitlog" / "00000000000000000000"
    data = bytearray(cl.read_bytes())
    valid_end = end + len(last_record)
    data[valid_end : valid_end + 60] = last_record[:60]
    cl.write_bytes(bytes(data))
    (tmp_path / "abort").write_text("1")
    store = open_store(tmp_path)
    assert store.recovery is not None
    assert store.recovery.commitlog_end == valid_end
    assert store.recovery.truncated_bytes == 60
    assert store.max_offset("T", 0) == 16 and store.max_offset("T", 1) == 15
    assert store.put_messages([msg()]).offsets == [valid_end]
    store.shutdown()


def test_a_record_whose_properties_were_cut_is_truncated(tmp_path: Path) -> None:
    """A kill during a write that crosses a page leaves the record's sizes and body whole and its
    last bytes zero: recovery must drop that record, not hand out one missing its properties."""
    store = open_store(tmp_path)
    offsets = [store.put_messages([msg(KEYS=f"k{i}")]).offsets[0] for i in range(5)]
    last = store.record_at(offsets[-1])
    assert last is not None
    store.shutdown()
    cl = tmp_path / "commitlog" / "00000000000000000000"
    data = bytearray(cl.read_bytes())
    end = offsets[-1] + len(last)
    data[end - 3 : end] = bytes(3)  # the tail of its properties never reached the file
    cl.write_bytes(bytes(data))
    (tmp_path / "abort").write_text("1")
    store = open_store(tmp_path)
    assert store.recovery is not None and "separator" in (store.recovery.problem or "")
    assert store.commitlog.max_offset == offsets[-1]
    assert store.max_offset("T", 0) == 4
    store.shutdown()


def test_flipped_byte_truncates_from_that_record_and_queues_follow(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    offsets = [store.put_messages([msg(body=bytes([i]) * 50)]).offsets[0] for i in range(10)]
    store.shutdown()
    cl = tmp_path / "commitlog" / "00000000000000000000"
    data = bytearray(cl.read_bytes())
    data[offsets[6] + 100] ^= 0x55  # inside the body of message 6
    cl.write_bytes(bytes(data))
    (tmp_path / "abort").write_text("1")
    store = open_store(tmp_path)
    assert store.recovery is not None and "CRC" in (store.recovery.problem or "")
    assert store.commitlog.max_offset == offsets[6]
    assert store.max_offset("T", 0) == 6
    got = store.get_messages("T", 0, 0, 32)
    assert [decode_record(r, verify_crc=True).body[0] for r in got.records] == list(range(6))
    store.shutdown()


def test_a_planner_trusts_the_queues_of_a_running_or_cleanly_closed_store(tmp_path: Path) -> None:
    """``open_read_only(trust_queues=True)`` checks only the CommitLog past what the queues index when
    a broker holds the store or closed it cleanly, and sees the same queues as a full check."""
    store = open_store(tmp_path)
    for i in range(40):
        store.put_messages([msg(queue=i % 2, body=bytes([i]) * 500)])
    indexed_end = store.commitlog.max_offset
    for trust in (False, True):  # while the writer runs (its abort marker exists)
        view = MessageStore.open_read_only(tmp_path, trust_queues=trust)
        assert view.recovery is not None
        assert view.recovery.scanned_from == (indexed_end if trust else 0)
        assert (view.recovery.commitlog_end, view.max_offset("T", 0), view.max_offset("T", 1)) == (
            indexed_end, 20, 20,
        )  # fmt: skip
        view.shutdown()
    store.shutdown()
    view = MessageStore.open_read_only(tmp_path, trust_queues=True)
    assert view.recovery is not None and view.recovery.scanned_from == indexed_end
    assert decode_record(view.get_messages("T", 1, 19, 1).records[0]).body == bytes([39]) * 500
    view.shutdown()


def test_a_planner_checks_a_crashed_copy_whole(tmp_path: Path) -> None:
    """A crash's queues may index CommitLog bytes that never reached the disk: with an abort marker
    and no broker holding the store, trusting the queues is refused and the torn tail is cut."""
    store = open_store(tmp_path)
    offsets = [store.put_messages([msg(body=bytes([i]) * 50)]).offsets[0] for i in range(10)]
    store.shutdown()
    cl = tmp_path / "commitlog" / "00000000000000000000"
    data = bytearray(cl.read_bytes())
    data[offsets[6] + 100] ^= 0x55  # inside the body of message 6, which the queue indexes
    cl.write_bytes(bytes(data))
    (tmp_path / "abort").write_text("1")
    view = MessageStore.open_read_only(tmp_path, trust_queues=True)
    assert view.recovery is not None and view.recovery.scanned_from == 0
    assert view.commitlog.max_offset == offsets[6] and view.max_offset("T", 0) == 6
    view.shutdown()


def test_second_process_on_the_store_is_refused(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    with pytest.raises(StoreLockedError, match=rf"{tmp_path}.*pid \d+"):
        MessageStore(small_config(tmp_path)).start()
    store.shutdown()


def test_sync_flush_too_slow_answers_flush_disk_timeout(tmp_path: Path) -> None:
    store = open_store(tmp_path, flush_disk_type="SYNC_FLUSH", sync_flush_timeout_ms=50)
    assert store.put_messages([msg()]).ok
    flush = store._flush
    assert flush is not None
    real = flush._flush_commitlog

    def slow_flush() -> int:
        time.sleep(0.3)
        return real()

    flush._flush_commitlog = slow_flush
    time.sleep(0.05)
    result = store.put_messages([msg()])
    assert result.status is PutStatus.FLUSH_DISK_TIMEOUT and "50 ms" in result.remark
    store.shutdown()


def test_async_flush_reaches_disk_without_being_asked(tmp_path: Path) -> None:
    store = open_store(tmp_path, flush_interval_commit_log_ms=20)
    end = store.put_messages([msg()]).end_offset
    flush = store._flush
    assert flush is not None
    deadline = time.monotonic() + 5
    while store.commitlog.files.flushed_offset < end and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.commitlog.files.flushed_offset >= end
    store.shutdown()


def test_config_file_falls_back_to_bak(tmp_path: Path) -> None:
    cf = ConfigFile(tmp_path / "config" / "consumerOffset.json")
    assert cf.load() is None
    cf.save(encode_offset_file({"T@g": {0: 5}}, {"counter": 1}))
    cf.save(encode_offset_file({"T@g": {0: 7, 1: 2}}, {"counter": 2}))
    assert "0:7" in cf.path.read_text()
    assert decode_offset_file(cf.load()) == {"T@g": {0: 7, 1: 2}}
    cf.path.write_text("")
    assert decode_offset_file(cf.load()) == {"T@g": {0: 5}}
    cf.path.write_text("{garbage")
    assert decode_offset_file(cf.load()) == {"T@g": {0: 5}}


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    batches=st.lists(st.lists(st.tuples(st.integers(0, 2), st.binary(max_size=2500)), min_size=1, max_size=6))
)
def test_everything_written_reads_back_after_reopen(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[tuple[int, bytes]]]
) -> None:
    root = tmp_path_factory.mktemp("prop")
    store = open_store(root)
    expected: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for batch in batches:
        assert store.put_messages([msg(queue=q, body=b) for q, b in batch]).ok
        for q, b in batch:
            expected[q].append(b)
    store.shutdown()
    store = open_store(root)
    for q, bodies in expected.items():
        got: list[bytes] = []
        offset = 0
        while True:
            r = store.get_messages("T", q, offset, 32)
            if r.status is not GetStatus.FOUND:
                break
            got += [decode_record(x).body for x in r.records]
            offset = r.next_begin_offset
        assert got == bodies
    store.shutdown()


def test_batches_appended_together_are_each_atomic(tmp_path: Path) -> None:
    """What a burst of sends becomes on the writer thread: one refused batch leaves the others written,
    each with its own offsets and end (what a sync flush waits for), in order, found by key."""
    store = open_store(tmp_path, max_message_size=1000)
    before = store.commitlog.max_offset
    first, refused, third = store.append_all(
        [[msg(KEYS="a")], [msg(KEYS="b"), msg(body=b"x" * 1001)], [msg(queue=1), msg(queue=1, KEYS="c")]]
    )
    assert (first.status, refused.status, third.status) == (PutStatus.PUT_OK, PutStatus.MESSAGE_ILLEGAL,
                                                            PutStatus.PUT_OK)  # fmt: skip
    assert "1001 bytes exceeds the maximum 1000" in refused.remark and refused.offsets == []
    assert (first.queue_offsets, third.queue_offsets) == ([0], [0, 1])
    assert first.offsets[0] == before and third.offsets[0] == before + first.sizes[0]
    assert (first.end_offset, third.end_offset) == (third.offsets[0], store.commitlog.max_offset)
    assert (store.max_offset("T", 0), store.max_offset("T", 1)) == (1, 2)
    assert [m.physical_offset for m in store.query_by_key("T", "c", 10, 0, 2**62)] == [third.offsets[1]]
    assert store.query_by_key("T", "b", 10, 0, 2**62) == []
    store.disk_full = True
    refusals = store.append_all([[msg()], [msg()]])
    assert [r.status for r in refusals] == [PutStatus.SERVICE_NOT_AVAILABLE] * 2
    store.shutdown()
