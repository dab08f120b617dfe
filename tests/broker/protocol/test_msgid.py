import datetime as dt

import pytest

from broker.protocol.msgid import (
    MessageIdError,
    UniqKeyGenerator,
    create_offset_msg_id,
    decode_offset_msg_id,
    decode_uniq_key,
)
from tests.vectors import load

IDS = load("msgid_examples.json")


def test_offset_ids_from_vectors() -> None:
    for item in IDS["offset_msg_ids"]:
        d = decode_offset_msg_id(item["msgId"])
        assert (d.host, d.port, d.offset) == (
            item["decoded"]["store_ip"],
            item["decoded"]["store_port"],
            item["decoded"]["commitlog_offset"],
        )


def test_offset_id_round_trip() -> None:
    raw_host = bytes([10, 154, 0, 38]) + (10911).to_bytes(4, "big")
    assert create_offset_msg_id(raw_host, 9001) == "0A9A002600002A9F0000000000002329"


def test_uniq_key_vector() -> None:
    item = IDS["uniq_keys"][0]
    info = decode_uniq_key(item["uniqKey"])
    assert info.ip == item["decoded"]["ip"]
    assert info.pid == item["decoded"]["pid_low16"]
    assert info.classloader_hash == item["decoded"]["classloader_hash_int32"]
    assert info.counter == 0


def test_generated_keys_count_up_and_decode() -> None:
    gen = UniqKeyGenerator(ip=bytes([172, 20, 21, 17]), pid=0x6D14)
    now = int(dt.datetime(2026, 11, 5, 12, 0).timestamp() * 1000)
    a, b = gen.next(now), gen.next(now)
    assert len(a) == 32 and a[:12] == "AC1415116D14"
    assert int(b[-4:], 16) == int(a[-4:], 16) + 1
    info = decode_uniq_key(a, now_ms=now + 1000)
    assert info.ip == "172.20.21.17" and info.pid == 0x6D14 and info.timestamp_ms == now


@pytest.mark.parametrize("bad", ["", "XYZ", "0A9A0026", "G" * 32])
def test_bad_ids_are_refused(bad: str) -> None:
    with pytest.raises(MessageIdError):
        decode_offset_msg_id(bad)


def test_uniq_keys_late_in_a_month_wrap_as_java_ints_and_decode_to_their_time() -> None:
    # 2^31 ms after the month began (day 25) Java's (int) cast wraps; keys must still be made and read
    late = int(dt.datetime(2026, 10, 30, 12, 0).astimezone().timestamp() * 1000)
    key = UniqKeyGenerator().next(late)
    assert int(key[-12:-4], 16) > 2**31  # the stored 32 bits, negative as a Java int
    assert decode_uniq_key(key, now_ms=late + 1000).timestamp_ms == late
