import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.protocol import message as M
from broker.protocol.properties import decode_properties, encode_properties, encodes_exactly
from tests.vectors import wire_item

VEC = wire_item("message_record_v1")


def _vector_record() -> bytes:
    f = VEC["fields"]
    props = bytes.fromhex(VEC["hex"])[-97:]
    return M.encode_record(
        topic=f["topic"].encode(),
        queue_id=f["queueId"],
        flag=f["flag"],
        queue_offset=f["queueOffset"],
        physical_offset=f["physicalOffset"],
        sys_flag=f["sysFlag"],
        born_timestamp=f["bornTimestamp"],
        born_host=M.pack_host(f["bornHost"]),
        store_timestamp=f["storeTimestamp"],
        store_host=M.pack_host(f["storeHost"]),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=f["body"].encode(),
        properties=props,
    )


def test_record_vector_bytes() -> None:
    assert _vector_record() == bytes.fromhex(VEC["hex"])


def test_record_vector_decodes() -> None:
    rec = M.decode_record(bytes.fromhex(VEC["hex"]), verify_crc=True)
    f = VEC["fields"]
    assert rec.total_size == VEC["length"] == 211
    assert rec.body_crc == f["bodyCRC"]
    assert (rec.queue_id, rec.queue_offset, rec.physical_offset) == (1, 5, 4096)
    assert rec.born_host == f["bornHost"] and rec.store_host == f["storeHost"]
    assert rec.topic == "TopicTest" and rec.tags == "TagA" and rec.keys == ["order-0001"]
    assert rec.offset_msg_id == VEC["offset_msg_id"]


def test_ipv6_hosts_set_sysflag_and_sizes() -> None:
    raw = M.encode_record(
        topic=b"T", queue_id=0, flag=0, queue_offset=0, physical_offset=0, sys_flag=0, born_timestamp=1,
        born_host=M.pack_host("[::1]:1234"), store_timestamp=2, store_host=M.pack_host("[fe80::2]:10911"),
        reconsume_times=0, prepared_transaction_offset=0, body=b"b", properties=b"",
    )  # fmt: skip
    rec = M.decode_record(raw)
    assert rec.sys_flag & (M.BORNHOST_V6_FLAG | M.STOREHOST_V6_FLAG) == 0x30
    assert rec.born_host == "[::1]:1234" and rec.store_host == "[fe80::2]:10911"
    assert len(rec.offset_msg_id) == 56


def test_long_topic_uses_v2_magic() -> None:
    topic = ("%RETRY%" + "g" * 200).encode()
    raw = M.encode_record(
        topic=topic, queue_id=0, flag=0, queue_offset=0, physical_offset=0, sys_flag=0, born_timestamp=1,
        born_host=M.pack_host("1.2.3.4:5"), store_timestamp=2, store_host=M.pack_host("1.2.3.4:6"),
        reconsume_times=0, prepared_transaction_offset=0, body=b"", properties=b"",
    )  # fmt: skip
    assert struct.unpack_from(">i", raw, 4)[0] == M.MAGIC_V2
    assert M.decode_record(raw).topic == topic.decode()


def test_bad_records_raise_precise_errors() -> None:
    raw = bytearray(_vector_record())
    with pytest.raises(M.RecordError, match="runs past the end"):
        M.decode_record(raw[:-1])
    bad_magic = bytearray(raw)
    bad_magic[4] = 0
    with pytest.raises(M.RecordError, match="bad magic"):
        M.decode_record(bad_magic)
    flipped = bytearray(raw)
    flipped[90] ^= 0xFF  # inside the body
    with pytest.raises(M.RecordError, match="CRC"):
        M.decode_record(flipped, verify_crc=True)


prop_text = st.text(alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)))


@given(st.dictionaries(prop_text.filter(lambda s: len(s) > 0), prop_text.filter(lambda s: len(s) > 0)))
def test_properties_round_trip(props: dict[str, str]) -> None:
    encoded = encode_properties(props)
    decoded = decode_properties(encoded)
    # Java drops segments shorter than 3 characters; everything else survives unchanged
    assert decoded == {k: v for k, v in props.items() if len(k) + len(v) + 1 >= 3}


@given(st.text(alphabet="ab\x01\x02", max_size=12))
def test_encodes_exactly_tells_a_canonical_text_from_its_map_alone(text: str) -> None:
    props = decode_properties(text)
    assert encodes_exactly(text, props) == (encode_properties(props) == text)


@given(
    topic=st.text(min_size=1, max_size=60).filter(lambda s: len(s.encode()) <= 127),
    body=st.binary(max_size=512),
    queue_id=st.integers(0, 1023),
    offsets=st.tuples(st.integers(0, 2**62), st.integers(0, 2**62)),
    sys_flag=st.sampled_from([0, 1, 2, 8]),
    props=st.dictionaries(
        st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a1"]), st.text("abc xyz", min_size=2)
    ),
)
def test_record_round_trip(
    topic: str, body: bytes, queue_id: int, offsets: tuple[int, int], sys_flag: int, props: dict[str, str]
) -> None:
    raw = M.encode_record(
        topic=topic.encode(), queue_id=queue_id, flag=7, queue_offset=offsets[0], physical_offset=offsets[1],
        sys_flag=sys_flag, born_timestamp=11, born_host=M.pack_host("10.0.0.1:1"), store_timestamp=12,
        store_host=M.pack_host("10.0.0.2:2"), reconsume_times=3, prepared_transaction_offset=4, body=body,
        properties=encode_properties(props).encode(),
    )  # fmt: skip
    rec = M.decode_record(raw, verify_crc=True)
    assert (rec.topic, rec.body, rec.queue_id, rec.flag) == (topic, body, queue_id, 7)
    assert (rec.queue_offset, rec.physical_offset, rec.sys_flag) == (offsets[0], offsets[1], sys_flag)
    assert rec.properties == props
    assert rec.total_size == len(raw)


@given(
    props=st.text("ab\x01\x02", max_size=12),
    v6=st.booleans(),
    value=st.text("0123456789 abc", min_size=1, max_size=40),
)
def test_an_added_property_joins_the_others_and_keeps_every_other_field(
    props: str, v6: bool, value: str
) -> None:
    host = M.pack_host("[::1]:1" if v6 else "10.0.0.1:1")
    raw = M.encode_record(
        topic=b"T", queue_id=2, flag=7, queue_offset=5, physical_offset=6, sys_flag=0, born_timestamp=11,
        born_host=host, store_timestamp=12, store_host=host, reconsume_times=3, prepared_transaction_offset=4,
        body=b"body", properties=props.encode(),
    )  # fmt: skip
    before = M.decode_record(raw)
    added = M.with_added_property(raw, "POP_CK", value)
    after = M.decode_record(added, verify_crc=True)
    assert after.properties == {**before.properties, "POP_CK": value}
    assert after.total_size == len(added)
    for name in ("topic", "body", "queue_id", "flag", "queue_offset", "physical_offset", "sys_flag",
                 "born_host", "store_host", "reconsume_times", "prepared_transaction_offset"):  # fmt: skip
        assert getattr(after, name) == getattr(before, name)


def test_a_property_that_does_not_fit_is_refused() -> None:
    raw = M.encode_record(
        topic=b"T", queue_id=0, flag=0, queue_offset=0, physical_offset=0, sys_flag=0, born_timestamp=0,
        born_host=M.pack_host("10.0.0.1:1"), store_timestamp=0, store_host=M.pack_host("10.0.0.1:1"),
        reconsume_times=0, prepared_transaction_offset=0, body=b"",
        properties=b"k\x01" + b"v" * 32700 + b"\x02",
    )  # fmt: skip
    with pytest.raises(M.RecordError, match=r"adding POP_CK would make the properties 3277\d bytes long"):
        M.with_added_property(raw, "POP_CK", "x" * 60)
    with pytest.raises(M.RecordError, match="bad magic"):
        M.with_added_property(b"\0" * 100, "POP_CK", "x")


@given(
    topic=st.text(min_size=1, max_size=200).filter(lambda s: len(s.encode()) <= 255),
    body=st.binary(max_size=300),
    born=st.sampled_from(["10.0.0.1:4100", "[::1]:4100"]),
    store=st.sampled_from(["10.0.0.2:10911", "[fe80::2]:10911"]),
    props=st.dictionaries(st.sampled_from(["TAGS", "KEYS", "a1"]), st.text("abc xyz", min_size=1)),
)
def test_one_record_reads_as_the_scan_and_the_head_read_it(
    topic: str, body: bytes, born: str, store: str, props: dict[str, str]
) -> None:
    raw = M.encode_record(
        topic=topic.encode(), queue_id=3, flag=7, queue_offset=77, physical_offset=4096, sys_flag=0,
        born_timestamp=11, born_host=M.pack_host(born), store_timestamp=12, store_host=M.pack_host(store),
        reconsume_times=2, prepared_transaction_offset=4, body=body,
        properties=encode_properties(props).encode(),
    )  # fmt: skip
    (_, _, _, scanned_body, scanned_topic, props_at, end) = M.scan_records(raw)[0]
    assert M.read_record(raw) == (M.read_head(raw), scanned_body, scanned_topic, props_at)
    assert (scanned_body, scanned_topic, end) == (body, topic, len(raw))
    with pytest.raises(M.RecordError, match="2 records where one was expected"):
        M.read_record(raw + raw)
    with pytest.raises(M.RecordError):
        M.read_record(raw[:-1])


@given(st.binary(max_size=300))
def test_random_bytes_never_crash_the_decoder(data: bytes) -> None:
    with contextlib.suppress(M.RecordError):
        M.decode_record(data)
    with contextlib.suppress(M.RecordError):
        M.read_record(data)


def test_batch_round_trip_and_errors() -> None:
    items = [M.BatchItem(0, b"one", "KEYS\x01a\x02"), M.BatchItem(5, b"", "")]
    body = M.encode_batch(items)
    assert M.decode_batch(body) == items
    with pytest.raises(M.RecordError):
        M.decode_batch(body[:-1])


@given(st.binary(max_size=200))
def test_random_batch_bodies_never_crash(data: bytes) -> None:
    with contextlib.suppress(M.RecordError):
        M.decode_batch(data)


@given(
    st.sampled_from([M.BORNHOST_V6_FLAG, M.STOREHOST_V6_FLAG, M.BORNHOST_V6_FLAG | M.STOREHOST_V6_FLAG]),
    st.integers(min_value=91, max_value=140),
    st.binary(min_size=140, max_size=140),
)
def test_short_records_claiming_ipv6_hosts_are_refused(v6: int, total: int, filler: bytes) -> None:
    """A torn or forged record whose size cannot hold IPv6 hosts is a RecordError, not a crash."""
    head = struct.pack(">iiiiiqi", total, M.MAGIC_V1, 0, 0, 0, 0, v6)
    raw = (head + filler)[:total]
    with contextlib.suppress(M.RecordError):
        M.decode_record(raw)
    with contextlib.suppress(M.RecordError):
        M.scan_records(raw)
