"""The v2 Message a consumer receives, encoded straight from a stored record, read back with protobuf."""

from __future__ import annotations

import hashlib
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.grpc import convert
from broker.grpc.schema import PB, Code
from broker.protocol import message as M
from broker.protocol import properties as P
from broker.protocol.msgid import create_offset_msg_id

_text = st.text(
    st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=20
)


def _record(
    body: bytes,
    props: dict[str, str],
    *,
    born_ms: int,
    store_ms: int,
    queue_id: int,
    reconsume: int,
    v6: bool,
) -> bytes:
    return M.encode_record(
        topic=b"Orders", queue_id=queue_id, flag=0, queue_offset=77, physical_offset=4096, sys_flag=0,
        born_timestamp=born_ms, born_host=M.pack_host("[::1]:4100" if v6 else "10.0.0.1:4100"),
        store_timestamp=store_ms, store_host=M.pack_host("10.0.0.2:10911"), reconsume_times=reconsume,
        prepared_transaction_offset=0, body=body, properties=P.encode_properties(props).encode(),
    )  # fmt: skip


@given(
    body=st.binary(max_size=300),
    user=st.dictionaries(_text.filter(lambda k: k not in convert.SYSTEM_PROPERTIES), _text, max_size=4),
    tag=st.none() | _text,
    keys=st.lists(st.text("abc123", min_size=1, max_size=6), max_size=3),
    uniq=st.booleans(),
    group=st.none() | _text,
    born_ms=st.integers(0, 2**41),
    store_ms=st.integers(0, 2**41),
    deliver_ms=st.none() | st.integers(0, 2**41),
    queue_id=st.integers(0, 1023),
    reconsume=st.integers(0, 16),
    invisible_ms=st.none() | st.integers(0, 12 * 3600 * 1000),
    attempt=st.none() | st.integers(1, 17),
    v6=st.booleans(),
)
def test_an_encoded_message_reads_back_as_the_record(
    body: bytes, user: dict[str, str], tag: str | None, keys: list[str], uniq: bool, group: str | None,
    born_ms: int, store_ms: int, deliver_ms: int | None, queue_id: int, reconsume: int,
    invisible_ms: int | None, attempt: int | None, v6: bool,
) -> None:  # fmt: skip
    props = dict(user)
    if tag is not None:
        props[P.TAGS] = tag
    if keys:
        props[P.KEYS] = " ".join(keys)
    if uniq:
        props[P.UNIQ_KEY] = "7F0000010001180C9F5A0B2C00000000"
    if group is not None:
        props[P.SHARDING_KEY] = group
    if deliver_ms is not None:
        props[P.TIMER_DELIVER_MS] = str(deliver_ms)
    record = _record(
        body, props, born_ms=born_ms, store_ms=store_ms, queue_id=queue_id, reconsume=reconsume, v6=v6
    )
    encoded = convert.encode_message(
        record, receipt_handle="0 1 2 0 0 b 3 77", invisible_ms=invisible_ms, delivery_attempt=attempt
    )
    assert encoded is not None
    msg = PB.ReceiveMessageResponse.FromString(convert.message_response(encoded)).message
    sp = msg.system_properties
    assert msg.topic.name == "Orders"
    assert dict(msg.user_properties) == user
    assert msg.body == body
    assert (sp.tag if sp.HasField("tag") else None) == (tag or None)
    assert list(sp.keys) == keys
    assert sp.message_id == (
        props.get(P.UNIQ_KEY) or create_offset_msg_id(M.pack_host("10.0.0.2:10911"), 4096)
    )
    assert (sp.body_digest.type, sp.body_digest.checksum) == (2, hashlib.md5(body).hexdigest().upper())
    assert (sp.body_encoding, sp.message_type) == (1, convert.message_type_of(props))
    assert sp.born_timestamp.ToMilliseconds() == born_ms
    assert sp.store_timestamp.ToMilliseconds() == store_ms
    assert sp.born_host == ("[::1]" if v6 else "10.0.0.1")
    assert sp.store_host == "10.0.0.2:10911"
    assert (
        sp.delivery_timestamp.ToMilliseconds() if sp.HasField("delivery_timestamp") else None
    ) == deliver_ms
    assert sp.receipt_handle == "0 1 2 0 0 b 3 77"
    assert (sp.queue_id, sp.queue_offset) == (queue_id, 77)
    assert sp.HasField("queue_offset")
    assert (
        sp.invisible_duration.ToMilliseconds() if sp.HasField("invisible_duration") else None
    ) == invisible_ms
    assert sp.delivery_attempt == (attempt if attempt is not None else reconsume + 1)
    assert (sp.message_group if sp.HasField("message_group") else None) == group


def test_a_compressed_body_arrives_inflated_and_a_renamed_topic_is_kept() -> None:
    raw = M.encode_record(
        topic=b"%RETRY%g", queue_id=0, flag=0, queue_offset=0, physical_offset=0, sys_flag=M.COMPRESSED_FLAG,
        born_timestamp=1, born_host=M.pack_host("10.0.0.1:1"), store_timestamp=2,
        store_host=M.pack_host("10.0.0.2:2"), reconsume_times=0, prepared_transaction_offset=0,
        body=zlib.compress(b"hello" * 50), properties=b"",
    )  # fmt: skip
    encoded = convert.encode_message(raw, topic="Orders")
    assert encoded is not None
    msg = PB.Message.FromString(encoded)
    assert (msg.topic.name, msg.body) == ("Orders", b"hello" * 50)


def test_a_tag_that_only_shares_its_hash_is_not_encoded() -> None:
    raw = _record(b"x", {P.TAGS: "B"}, born_ms=1, store_ms=2, queue_id=0, reconsume=0, v6=False)
    assert convert.encode_message(raw, tags=frozenset({"A"})) is None
    assert convert.encode_message(raw, tags=frozenset({"A", "B"})) is not None


def test_bytes_that_are_not_one_record_are_refused() -> None:
    raw = _record(b"x", {}, born_ms=1, store_ms=2, queue_id=0, reconsume=0, v6=False)
    with pytest.raises(M.RecordError, match="2 records where one was expected"):
        convert.encode_message(raw + raw)
    with pytest.raises(M.RecordError):
        convert.encode_message(raw[:-1])


_codes = st.sampled_from([int(c) for c in Code])


@given(
    code=_codes,
    message=st.text(max_size=30),
    entries=st.lists(st.tuples(st.text(max_size=40), st.text(max_size=60), _codes, st.text()), max_size=4),
)
def test_an_ack_response_reads_back_with_protobuf(
    code: int, message: str, entries: list[convert.AckOutcome]
) -> None:
    answer = PB.AckMessageResponse.FromString(convert.ack_response(code, message, entries))
    assert (answer.status.code, answer.status.message) == (code, message)
    read = [(e.message_id, e.receipt_handle, e.status.code, e.status.message) for e in answer.entries]
    assert read == entries


def test_the_field_numbers_written_are_the_schemas() -> None:
    numbers = {
        "Message": {f.name: f.number for f in PB.Message.DESCRIPTOR.fields},
        "SystemProperties": {f.name: f.number for f in PB.SystemProperties.DESCRIPTOR.fields},
    }
    checked = 0
    for name, value in vars(convert).items():
        for prefix, message in (("_MESSAGE_", "Message"), ("_SP_", "SystemProperties")):
            if name.startswith(prefix) and isinstance(value, int):
                assert numbers[message][name.removeprefix(prefix).lower()] == value, name
                checked += 1
    assert checked == 22
