"""Messages, records, compression, batches, subscriptions, process queues and local offsets."""

from __future__ import annotations

import asyncio
import itertools
import zlib
from pathlib import Path

import pytest

from broker.client.message import Message, MessageExt, MQClientError
from broker.client.offset_store import LocalFileOffsetStore
from broker.client.process_queue import ProcessQueue
from broker.client.producer import Producer, batch_item_size, check_message, hash_selector, split_batch
from broker.client.pull import build_subscription
from broker.protocol import properties as P
from broker.protocol.bodies import MessageQueue
from broker.protocol.javahash import java_hash
from broker.protocol.message import (
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    RecordError,
    decode_record,
    encode_record,
    pack_host,
    scan_records,
)


def encoded(
    body: bytes,
    props: dict[str, str],
    sys_flag: int = 0,
    offset: int = 7,
    *,
    topic: bytes = b"T",
    born: str = "10.0.0.1:5000",
    store: str = "10.154.0.38:10911",
) -> bytes:
    return encode_record(
        topic=topic,
        queue_id=1,
        flag=3,
        queue_offset=offset,
        physical_offset=9001,
        sys_flag=sys_flag,
        born_timestamp=1,
        born_host=pack_host(born),
        store_timestamp=2,
        store_host=pack_host(store),
        reconsume_times=4,
        prepared_transaction_offset=0,
        body=body,
        properties=P.encode_properties(props).encode(),
    )


def record(body: bytes, props: dict[str, str], sys_flag: int = 0, offset: int = 7) -> MessageExt:
    return MessageExt(decode_record(encoded(body, props, sys_flag, offset)), "broker-a")


def test_message_properties_are_the_source_of_truth() -> None:
    msg = Message("T", b"x", tags="a", keys=["k1", "k2"], delay_time_level=3)
    assert msg.properties == {P.TAGS: "a", P.KEYS: "k1 k2", P.DELAY: "3"}
    msg.tags = None
    msg.delay_time_level = 0
    msg.sharding_key = "order-1"
    assert msg.properties == {P.KEYS: "k1 k2", P.SHARDING_KEY: "order-1"}
    assert Message("T", b"x", keys="one").keys == ["one"]


def test_message_ext_from_record() -> None:
    msg = record(b"hello", {P.TAGS: "a", P.KEYS: "k", P.UNIQ_KEY: "AC14151100001234"})
    assert (msg.topic, msg.body, msg.tags, msg.keys, msg.flag) == ("T", b"hello", "a", ["k"], 3)
    assert (msg.queue_id, msg.queue_offset, msg.commit_log_offset, msg.reconsume_times) == (1, 7, 9001, 4)
    assert msg.offset_msg_id == "0A9A002600002A9F0000000000002329"
    assert msg.msg_id == "AC14151100001234"
    assert msg.queue == MessageQueue("T", "broker-a", 1)
    assert (msg.born_host, msg.store_host, msg.born_timestamp, msg.store_timestamp) == (
        "10.0.0.1:5000", "10.154.0.38:10911", 1, 2,
    )  # fmt: skip
    assert record(b"x", {}).msg_id == "0A9A002600002A9F0000000000002329"


def _attributes(msg: MessageExt) -> tuple[object, ...]:
    return (
        msg.topic, msg.body, msg.flag, msg.properties, msg.tags, msg.keys, msg.sys_flag, msg.broker_name,
        msg.queue_id, msg.queue_offset, msg.commit_log_offset, msg.offset_msg_id, msg.msg_id,
        msg.born_timestamp, msg.born_host, msg.store_timestamp, msg.store_host, msg.reconsume_times,
        msg.prepared_transaction_offset, msg.body_crc, msg.queue,
    )  # fmt: skip


def pulled(raw: bytes, extra: dict[str, str] | None = None) -> list[MessageExt]:
    return MessageExt.received(raw, scan_records(raw), "broker-a", extra)


def test_pulled_messages_equal_decoded_records() -> None:
    """A pulled batch is scanned in one pass and the rest read on demand; what a message shows is what
    a fully decoded record shows, for every record layout (IPv6 hosts, long topics, compressed bodies)."""
    raws = [
        encoded(b"plain", {P.TAGS: "a", P.KEYS: "k1 k2", P.UNIQ_KEY: "AC14151100001234"}),
        encoded(b"six", {P.TAGS: "b"}, born="[::1]:5000", store="[fe80::2]:10911"),
        encoded(b"long", {}, topic=b"t" * 200),
        encoded(zlib.compress(b"inflated"), {}, COMPRESSED_FLAG | 0x300),
        encoded("ü".encode(), {"user": "wert ü"}, topic="Tü".encode()),
    ]
    bounds = {P.MIN_OFFSET: "0", P.MAX_OFFSET: "99"}
    messages = pulled(b"".join(raws), bounds)
    for msg, raw in zip(messages, raws, strict=True):
        expected = MessageExt(decode_record(raw), "broker-a")
        expected.properties.update(bounds)
        assert _attributes(msg) == _attributes(expected)
    assert messages[3].body == b"inflated" and messages[3].sys_flag == 0
    assert bounds == {P.MIN_OFFSET: "0", P.MAX_OFFSET: "99"}  # shared by the batch, never changed


def test_pulled_message_fields_stay_writable() -> None:
    msg = pulled(encoded(b"x", {P.TAGS: "a"}))[0]
    msg.reconsume_times = 9  # before the deferred fields are read: reading them keeps it
    msg.tags = "b"
    assert (msg.queue_id, msg.reconsume_times, msg.properties) == (1, 9, {P.TAGS: "b"})
    msg.properties = {P.KEYS: "k"}
    assert msg.keys == ["k"]
    assert not hasattr(msg, "no_such_field")


def test_pulled_properties_that_are_not_utf8_read_as_replacement_characters() -> None:
    """Like Java's client, such a message is delivered (its neighbours too) instead of failing the pull."""
    bad = encoded(b"x", {"user": "ab", P.TAGS: "t"}).replace(b"ab", b"\xff\xfe")
    first, second = pulled(bad + encoded(b"y", {P.TAGS: "u"}, offset=8))
    assert (first.body, first.properties["user"], first.tags) == (b"x", "\ufffd\ufffd", "t")
    assert (second.body, second.tags, second.queue_offset) == (b"y", "u", 8)


def test_scan_records_reports_bad_records_like_decode_record() -> None:
    good = encoded(b"x", {})
    for bad in (good[:-1], good[:4] + b"\0\0\0\0" + good[8:], encoded(b"x", {}, topic=b"\xff")):
        with pytest.raises(RecordError) as scan_error:
            scan_records(good + bad)
        with pytest.raises(RecordError) as decode_error:
            decode_record(good + bad, len(good))
        assert str(scan_error.value) == str(decode_error.value)


def test_compression_round_trip() -> None:
    producer = Producer("g", "127.0.0.1:9876")
    body = b"0123456789" * 1000
    msg = Message("T", body)
    payload = producer._prepare(msg)
    assert payload.sys_flag & COMPRESSED_FLAG
    assert (payload.sys_flag & COMPRESSION_TYPE_MASK) >> 8 == 3  # ZLIB
    assert zlib.decompress(payload.body) == body
    received = record(payload.body, msg.properties, payload.sys_flag)
    assert received.body == body
    assert received.sys_flag & (COMPRESSED_FLAG | COMPRESSION_TYPE_MASK) == 0
    small = producer._prepare(Message("T", b"tiny"))
    assert small.sys_flag == 0 and small.body == b"tiny"
    assert P.UNIQ_KEY in msg.properties and len(msg.properties[P.UNIQ_KEY]) == 32


def test_legacy_compression_type_zero_is_zlib() -> None:
    received = record(zlib.compress(b"abc"), {}, COMPRESSED_FLAG)
    assert received.body == b"abc"


def test_retry_topic_sends_carry_reconsume_times_in_the_header() -> None:
    producer = Producer("g", "127.0.0.1:9876")
    msg = Message("%RETRY%g", b"x", properties={P.RECONSUME_TIME: "2", P.MAX_RECONSUME_TIMES: "16"})
    payload = producer._prepare(msg)
    assert (payload.reconsume_times, payload.max_reconsume_times) == (2, 16)
    assert P.RECONSUME_TIME not in P.decode_properties(payload.properties)


def test_transactional_message_is_prepared() -> None:
    producer = Producer("g", "127.0.0.1:9876")
    payload = producer._prepare(Message("T", b"x", properties={P.TRAN_MSG: "true"}))
    assert payload.sys_flag & 0xC == 0x4


def test_check_message() -> None:
    check_message(Message("Topic_1-%|", b"x"), 10)
    for bad in (Message("", b"x"), Message("a b", b"x"), Message("T", b""), Message("T", b"x" * 11)):
        with pytest.raises(MQClientError):
            check_message(bad, 10)


def test_split_batch_stays_under_the_limit() -> None:
    msgs = [Message("T", bytes(100 + i)) for i in range(50)]
    limit = 1000
    groups = split_batch(msgs, limit)
    assert [m for g in groups for m in g] == msgs
    assert all(sum(batch_item_size(m) for m in g) <= limit for g in groups)
    assert all(
        sum(batch_item_size(m) for m in g) + batch_item_size(n[0]) > limit
        for g, n in itertools.pairwise(groups)
    )
    with pytest.raises(MQClientError):
        split_batch([Message("T", bytes(2000))], limit)


def test_hash_selector_uses_java_hash() -> None:
    mqs = [MessageQueue("T", "b", i) for i in range(8)]
    assert hash_selector(mqs, Message("T", b"x"), "order-42") == mqs[abs(java_hash("order-42")) % 8]
    assert hash_selector(mqs, Message("T", b"x"), -13) == mqs[5]


def test_build_subscription() -> None:
    sub = build_subscription("T", " a || b ||")
    assert (sub.subString, sub.tagsSet, sub.codeSet) == (" a || b ||".strip(), ["a", "b"], [97, 98])
    everything = build_subscription("T", "*")
    assert (everything.subString, everything.tagsSet) == ("*", [])
    assert build_subscription("T", "").subString == "*"


def test_process_queue_commits_behind_the_oldest_message() -> None:
    pq = ProcessQueue()
    msgs = [record(b"x", {}, offset=o) for o in (10, 11, 12)]
    pq.put(msgs)
    assert pq.remove([msgs[1]]) == 10
    assert pq.remove([msgs[0]]) == 12
    assert pq.remove([msgs[2]]) == 13
    assert pq.remove([msgs[2]]) == -1
    assert pq.count == 0 and pq.size_bytes == 0


def test_process_queue_orderly_take_commit_give_back() -> None:
    pq = ProcessQueue()
    msgs = [record(b"x", {}, offset=o) for o in (5, 6, 7)]
    assert pq.put(msgs) is True
    assert pq.put([]) is False  # already consuming
    first = pq.take(2)
    assert [m.queue_offset for m in first] == [5, 6]
    pq.give_back(first)
    assert [m.queue_offset for m in pq.take(1)] == [5]
    assert pq.commit() == 6
    assert [m.queue_offset for m in pq.take(5)] == [6, 7]
    assert pq.commit() == 8
    assert pq.take(1) == [] and not pq.consuming


def test_local_offset_store_round_trip(tmp_path: Path) -> None:
    mq = MessageQueue("T", "b", 2)
    store = LocalFileOffsetStore("10.0.0.1@x", "g", tmp_path)
    store.update(mq, 5)
    store.update(mq, 3, increase_only=True)
    asyncio.run(store.persist([mq]))
    again = LocalFileOffsetStore("10.0.0.1@x", "g", tmp_path)
    assert again.read_memory(mq) == 5
    again.remove(mq)  # broadcasting offsets are never dropped by rebalancing
    assert asyncio.run(again.read_store(mq)) == 5
    assert again.path == tmp_path / "10.0.0.1@x" / "g.json"
