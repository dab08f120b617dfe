"""IndexService: lookups, rollover, time bounds, read-only readers, recovery load and retention."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.protocol.javahash import index_key_hash
from broker.store.index_service import IndexService

T0 = 1_700_000_000_000
ALL_TIME = (0, 1 << 62)

Message = tuple[str, str | None, list[str], int, int]  # topic, uniq key, keys, phy offset, store ts


def _put_all(service: IndexService, messages: list[Message]) -> None:
    for topic, uniq, keys, phy, ts in messages:
        service.put_message(topic, uniq, " ".join(keys) if keys else None, phy, ts)


def _expected(messages: list[Message], topic: str, key: str) -> set[int]:
    """Offsets a lookup must return: every message with a key of the same index hash (the caller
    re-checks real keys, so hash twins are part of the answer)."""
    want = index_key_hash(f"{topic}#{key}")
    return {
        phy
        for t, uniq, keys, phy, _ in messages
        if any(index_key_hash(f"{t}#{k}") == want for k in ([uniq] if uniq else []) + keys)
    }


def _check_all_found(service: IndexService, messages: list[Message]) -> None:
    for topic, uniq, keys, _, _ in messages:
        for key in ([uniq] if uniq else []) + keys:
            found = service.query(topic, key, 10_000, *ALL_TIME)
            assert len(found) == len(set(found))
            assert set(found) == _expected(messages, topic, key), (topic, key)


_key = st.text(st.characters(exclude_categories=["Cs"], exclude_characters=" "), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["TopicA", "TopicB", "%RETRY%g"]),
            st.one_of(st.none(), _key),
            st.lists(_key, max_size=3),
            st.integers(1, 10_000),
            st.integers(0, 10**7),
        ),
        max_size=60,
    )
)
def test_every_key_finds_exactly_its_offsets(raw: list[tuple[str, str | None, list[str], int, int]]) -> None:
    messages: list[Message] = []
    phy = 0
    for topic, uniq, keys, gap, ts_step in raw:
        phy += gap
        messages.append((topic, uniq, keys, phy, T0 + ts_step))
    with tempfile.TemporaryDirectory() as tmp:
        service = IndexService(Path(tmp), slots=7, entries=12)
        service.load()
        _put_all(service, messages)
        _check_all_found(service, messages)
        service.close()
        reopened = IndexService(Path(tmp), slots=7, entries=12, read_only=True)
        reopened.load()
        _check_all_found(reopened, messages)
        reopened.close()


def test_rollover_when_full(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=10, entries=5)  # 4 usable entries per file
    service.load()
    messages: list[Message] = [("T", f"u{i}", [], 100 * (i + 1), T0 + 1000 * i) for i in range(10)]
    _put_all(service, messages)
    files = service.files()
    assert [f.index_count for f in files] == [5, 5, 3]
    assert [f.name for f in files] == sorted(f.name for f in files)
    assert len({f.name for f in files}) == 3
    for older, newer in itertools.pairwise(files):
        assert newer.begin_phy_offset > older.end_phy_offset
        assert newer.begin_timestamp >= older.end_timestamp
    assert (files[1].begin_phy_offset, files[1].end_phy_offset) == (500, 800)
    _check_all_found(service, messages)


def test_message_keys_never_span_files(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=10, entries=5)
    service.load()
    service.put_message("T", "u1", "a b", 100, T0)
    service.put_message("T", "u2", "c d", 200, T0)  # 3 keys, 1 free entry: goes to a new file
    service.put_message("T", "u3", "e f g h i", 300, T0)  # 6 keys, 4 fit in any file: first 4 kept
    assert [f.index_count for f in service.files()] == [4, 4, 5]
    assert service.query("T", "d", 10, *ALL_TIME) == [200]
    assert service.query("T", "h", 10, *ALL_TIME) == []
    assert service.query("T", "g", 10, *ALL_TIME) == [300]


def test_newest_first_and_max_num_across_files(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=3, entries=4)
    service.load()
    for i in range(10):
        service.put_message("T", None, "k", 10 * (i + 1), T0 + i)
    assert len(service.files()) == 4
    assert service.query("T", "k", 100, *ALL_TIME) == [100, 90, 80, 70, 60, 50, 40, 30, 20, 10]
    assert service.query("T", "k", 3, *ALL_TIME) == [100, 90, 80]
    assert service.query("T", "k", 0, *ALL_TIME) == []
    assert service.query("Other", "k", 100, *ALL_TIME) == []


def test_time_bounded_query(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=5, entries=4)
    service.load()
    for i in range(10):
        service.put_message("T", None, "k", 10 * (i + 1), T0 + 1000 * i)
    assert service.query("T", "k", 100, T0 + 3000, T0 + 6000) == [70, 60, 50, 40]
    assert service.query("T", "k", 100, T0 + 9001, T0 + 20_000) == []
    assert service.query("T", "k", 100, 0, T0 - 1) == []


def test_hash_twins_return_both_offsets(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=100, entries=400)
    service.load()
    service.put_message("T", None, "Aa", 100, T0)
    service.put_message("T", None, "BB", 200, T0)
    service.put_message("T", None, "Ab", 300, T0)
    assert service.query("T", "Aa", 10, *ALL_TIME) == [200, 100]
    assert service.query("T", "BB", 10, *ALL_TIME) == [200, 100]


def test_redispatch_is_idempotent(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=10, entries=100)
    service.load()
    messages: list[Message] = [("T", f"u{i}", ["k"], 100 * (i + 1), T0 + i) for i in range(5)]
    _put_all(service, messages)
    assert service.end_phy_offset() == 500
    _put_all(service, messages)
    service.close()
    reopened = IndexService(tmp_path, slots=10, entries=100)
    reopened.load()
    _put_all(reopened, messages)
    assert reopened.files()[0].index_count == 11
    assert reopened.query("T", "k", 100, *ALL_TIME) == [500, 400, 300, 200, 100]


def test_read_only_reader_follows_a_live_writer(tmp_path: Path) -> None:
    writer = IndexService(tmp_path, slots=10, entries=100)
    writer.load()
    writer.put_message("T", "u1", None, 100, T0)
    reader = IndexService(tmp_path, slots=10, entries=100, read_only=True)
    reader.load()
    assert reader.query("T", "u1", 10, *ALL_TIME) == [100]
    writer.put_message("T", "u2", None, 200, T0 + 1000)
    assert reader.query("T", "u2", 10, *ALL_TIME) == [200]
    assert reader.files()[0].index_count == 3
    with pytest.raises(PermissionError):
        reader.put_message("T", "u3", None, 300, T0)  # no file of its own to write
    reader.close()
    writer.close()


def test_read_only_on_a_missing_folder_creates_nothing(tmp_path: Path) -> None:
    reader = IndexService(tmp_path / "index", read_only=True)
    reader.load()
    assert reader.files() == []
    assert reader.query("T", "k", 10, *ALL_TIME) == []
    assert not (tmp_path / "index").exists()


def test_abnormal_load_drops_files_begun_after_the_checkpoint(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=10, entries=5)
    service.load()
    messages: list[Message] = [("T", f"u{i}", [], 100 * (i + 1), T0 + 1000 * i) for i in range(10)]
    _put_all(service, messages[:6])
    checkpoint = service.flush()
    assert checkpoint == T0 + 5000
    _put_all(service, messages[6:])
    service.close()
    (tmp_path / "20000101000000000.tmp").write_bytes(b"half-created")

    recovered = IndexService(tmp_path, slots=10, entries=5)
    recovered.load(clean_shutdown=False, checkpoint_index_ts=checkpoint)
    assert not list(tmp_path.glob("*.tmp"))
    assert [f.end_phy_offset for f in recovered.files()] == [400, 800]  # the third file began after it
    assert recovered.end_phy_offset() == 800
    _put_all(recovered, messages)  # recovery re-dispatches; the rest is skipped
    _check_all_found(recovered, messages)
    assert [f.index_count for f in recovered.files()] == [5, 5, 3]


def test_clean_load_keeps_everything(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=10, entries=5)
    service.load()
    _put_all(service, [("T", f"u{i}", [], 100 * (i + 1), T0 + i) for i in range(10)])
    service.close()
    reopened = IndexService(tmp_path, slots=10, entries=5)
    reopened.load(clean_shutdown=True, checkpoint_index_ts=0)
    assert len(reopened.files()) == 3
    assert reopened.end_phy_offset() == 1000


def test_retention_deletes_old_files_but_never_the_newest(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=10, entries=5)
    service.load()
    _put_all(service, [("T", f"u{i}", [], 100 * (i + 1), T0 + i) for i in range(10)])
    assert service.delete_files_before(400) == 0  # first file ends at 400
    assert service.delete_files_before(401) == 1
    assert service.delete_files_before(10**9) == 1
    assert [f.end_phy_offset for f in service.files()] == [1000]
    assert len(list(tmp_path.iterdir())) == 1
    assert service.query("T", "u9", 10, *ALL_TIME) == [1000]
    assert service.query("T", "u0", 10, *ALL_TIME) == []


def test_flush_without_files(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slots=10, entries=5)
    service.load()
    assert service.flush() == 0
    assert service.end_phy_offset() is None
    service.put_message("T", None, None, 100, T0)  # nothing to index
    assert service.files() == []
