"""IndexFile byte layout, hash vectors and corrupt-file errors."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.protocol.javahash import index_key_hash, java_hash
from broker.store.index_file import IndexFile, IndexFileError, index_file_size
from broker.store.index_service import IndexService, _key_hash
from tests.vectors import load

HASHES = load("java_hash_crc_vectors.json")["string_hash"]
T0 = 1_700_000_000_000
HEADER = struct.Struct(">qqqqii")
ENTRY = struct.Struct(">iqii")
SLOT = struct.Struct(">i")


def _only_file(index_dir: Path) -> Path:
    (path,) = index_dir.iterdir()
    return path


def test_key_hash_vectors() -> None:
    for item in HASHES:
        assert _key_hash(0, item["string"]) == item["index_keyHash"], item["string"]


def test_slot_and_hash_vectors_land_in_the_file(tmp_path: Path) -> None:
    """Keys of the form topic#key go where RocketMQ puts them in a default-geometry file."""
    service = IndexService(tmp_path, slots=5_000_000, entries=16)
    service.load()
    items = [item for item in HASHES if "#" in item["string"]]
    assert items
    for n, item in enumerate(items, start=1):
        topic, key = item["string"].split("#", 1)
        service.put_message(topic, key, None, 1000 * n, T0)
    service.close()
    data = _only_file(tmp_path).read_bytes()
    base = 40 + 5_000_000 * 4
    for n, item in enumerate(items, start=1):
        assert SLOT.unpack_from(data, 40 + item["index_slot_5000000"] * 4)[0] == n
        key_hash, phy, _, _ = ENTRY.unpack_from(data, base + n * 20)
        assert (key_hash, phy) == (item["index_keyHash"], 1000 * n)


@given(st.text(max_size=40), st.text(max_size=300))
def test_prefix_hash_algebra(topic: str, key: str) -> None:
    prefix = java_hash(topic + "#") & 0xFFFFFFFF
    assert _key_hash(prefix, key) == index_key_hash(f"{topic}#{key}")


def test_uniq_key_hash_uses_cached_head(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=100, entries=400)
    prefix = java_hash("TopicTest#") & 0xFFFFFFFF
    for uniq in ("7F0000010F4C18B4AAC2593C02B10000", "7F0000010F4C18B4AAC2593C02B10001", "short", "ключ" * 9):
        assert service._uniq_hash(prefix, uniq) == index_key_hash(f"TopicTest#{uniq}")


def test_exact_header_and_entry_layout(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=100, entries=400)
    service.load()
    service.put_message("T", "U1", "a b", 4096, T0)
    service.put_message("T", "U2", None, 8192, T0 + 5_500)
    service.close()
    path = _only_file(tmp_path)
    assert re.fullmatch(r"\d{17}", path.name)
    data = path.read_bytes()
    assert len(data) == 40 + 100 * 4 + 400 * 20 == index_file_size(100, 400)
    hashes = [index_key_hash(k) for k in ("T#U1", "T#a", "T#b", "T#U2")]
    used = len({h % 100 for h in hashes})
    assert HEADER.unpack_from(data, 0) == (T0, T0 + 5_500, 4096, 8192, used, 5)
    base = 40 + 100 * 4
    expected = [(hashes[0], 4096, 0), (hashes[1], 4096, 0), (hashes[2], 4096, 0), (hashes[3], 8192, 5)]
    for n, (key_hash, phy, diff) in enumerate(expected, start=1):
        assert ENTRY.unpack_from(data, base + n * 20)[:3] == (key_hash, phy, diff)
        assert SLOT.unpack_from(data, 40 + (key_hash % 100) * 4)[0] == n
    assert data[base : base + 20] == bytes(20)  # entry 0 is never used
    assert data[base + 5 * 20 :] == bytes(len(data) - base - 100)


def test_same_slot_keys_of_one_message_are_chained(tmp_path: Path) -> None:
    """Keys "Aa" and "BB" share a Java hash: both entries, newest first, linked through prevIndex."""
    service = IndexService(tmp_path, slots=100, entries=400)
    service.load()
    service.put_message("T", None, "Aa BB", 100, T0)
    service.close()
    data = _only_file(tmp_path).read_bytes()
    key_hash = index_key_hash("T#Aa")
    assert key_hash == index_key_hash("T#BB")
    base = 40 + 100 * 4
    assert SLOT.unpack_from(data, 40 + (key_hash % 100) * 4)[0] == 2
    assert ENTRY.unpack_from(data, base + 20) == (key_hash, 100, 0, 0)
    assert ENTRY.unpack_from(data, base + 40) == (key_hash, 100, 0, 1)
    assert HEADER.unpack_from(data, 0)[4:] == (1, 3)


def test_time_diff_is_clamped(tmp_path: Path) -> None:
    f = IndexFile.create(tmp_path / "00000000000000000", 10, 10, 0, 0)
    f.put_one(1, 10, T0)  # first message sets begin: diff 0
    f.put_one(2, 20, T0 - 5_000)  # before begin: 0
    f.put_one(3, 30, T0 + 3_999)  # truncated to whole seconds
    f.put_one(4, 40, T0 + (1 << 31) * 1000 + 7_000)  # beyond i32: Integer.MAX_VALUE
    diffs = [ENTRY.unpack_from(f._mm, 40 + 40 + n * 20)[2] for n in range(1, 5)]
    f.close()
    assert diffs == [0, 0, 3, 0x7FFFFFFF]


def test_new_file_header_starts_at_previous_end(tmp_path: Path) -> None:
    f = IndexFile.create(tmp_path / "20240101000000000", 10, 10, 5000, T0)
    assert not list(tmp_path.glob("*.tmp"))
    info = f.info()
    f.close()
    assert (info.begin_phy_offset, info.end_phy_offset, info.begin_timestamp, info.end_timestamp) == (
        5000,
        5000,
        T0,
        T0,
    )
    assert (info.index_count, info.hash_slot_count) == (1, 0)


def test_loaded_index_count_of_zero_means_one(tmp_path: Path) -> None:
    path = tmp_path / "20240101000000000"
    path.write_bytes(bytes(index_file_size(10, 10)))
    f = IndexFile.open(path, 10, 10)
    assert f.index_count == 1
    f.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", r"20240101000000000: 0 bytes, shorter than the 40-byte header"),
        (bytes(39), r"20240101000000000: 39 bytes, shorter than the 40-byte header"),
        (bytes(index_file_size(10, 10) - 1), r"20240101000000000: 279 bytes, expected 280 for 10 hash slots"),
        (HEADER.pack(0, 0, 0, 0, 0, 11) + bytes(240), r"000000: indexCount 11 is beyond its 10"),
        (HEADER.pack(0, 0, 0, 0, 11, 2) + bytes(240), r"000000: hashSlotCount 11 is outside 0\.\.10"),
    ],
)
def test_corrupt_file_errors_name_the_file(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "20240101000000000").write_bytes(content)
    service = IndexService(tmp_path, slots=10, entries=10)
    with pytest.raises(IndexFileError, match=message):
        service.load()
