"""The column-at-a-time decoder returns what the per-record decoder returns, on each of its paths."""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from admin.pipelines import arrow as A
from admin.pipelines import properties as P
from broker.protocol.message import COMPRESSED_FLAG, decode_record, encode_record, pack_host

TOPIC = "DecodeT"
GAP = b"\0" * 13  # records of other queues lie between those of one queue in a CommitLog


def _record(i: int, props: bytes, *, body: bytes | None = None, sys_flag: int = 0, host: str = "") -> bytes:
    return encode_record(
        topic=TOPIC.encode(), queue_id=1, flag=i % 3, queue_offset=i, physical_offset=1000 + i,
        sys_flag=sys_flag, born_timestamp=1_700_000_000_000 + i, born_host=pack_host(host or "10.0.0.1:5000"),
        store_timestamp=1_700_000_000_500 + i, store_host=pack_host("10.0.0.2:10911"), reconsume_times=i % 2,
        prepared_transaction_offset=0, body=f"body {i}".encode() * i if body is None else body,
        properties=props,
    )  # fmt: skip


def _props(i: int) -> bytes:
    return f"TAGS\x01t{i % 2}\x02KEYS\x01k{i} all\x02UNIQ_KEY\x01{i:032X}\x02é\x01✓\x02".encode()


ODD: dict[str, tuple[bytes, bytes | None, int, str]] = {  # properties, body, sysFlag, born host
    "well formed": (_props(99), None, 0, ""),
    "no UNIQ_KEY": (b"TAGS\x01x\x02", None, 0, ""),
    "malformed entries": (b"a\x01b\x01c\x02k\x01\x02junk\x02TAGS\x01y\x02\x02UNIQ_KEY\x01U\x02", None, 0, ""),
    "no properties": (b"", None, 0, ""),
    "IPv6 born host": (_props(99), None, 0, "[::1]:5000"),
    "compressed body": (_props(99), zlib.compress(b"inflated"), COMPRESSED_FLAG, ""),
}


@pytest.mark.parametrize("case", list(ODD))
def test_decode_matches_per_record_decoding(case: str) -> None:
    props, body, sys_flag, host = ODD[case]
    records = [_record(i, _props(i)) for i in range(20)]
    records.insert(7, _record(7, props, body=body, sys_flag=sys_flag, host=host))
    data = b"".join(GAP + r for r in records)
    sizes = np.array([len(r) for r in records], np.int64)
    starts = np.cumsum(sizes + len(GAP)) - sizes
    batch = A.decode(data, starts, sizes, TOPIC, "b")
    want = A.records_batch([decode_record(data, s) for s in starts.tolist()], "b")
    assert batch.schema == A.SCHEMA
    assert batch.to_pylist() == want.to_pylist()


_NAMES = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "é"])
_VALUES = st.text(st.characters(exclude_characters="\x00\x01\x02", exclude_categories=("Cs",)), min_size=1)


@given(
    rows=st.lists(st.lists(st.tuples(_NAMES, _VALUES), max_size=5), min_size=1, max_size=12),
    cut=st.tuples(st.integers(0, 12), st.integers(0, 12)),
)
def test_property_lookup_keeps_the_last_value_of_each_name(
    rows: list[list[tuple[str, str]]], cut: tuple[int, int]
) -> None:
    """As Java's parser (a map filled entry by entry): a repeated name keeps its last value; a slice of
    the column (its child arrays are not cut) looks up only its own rows."""
    strings = ["".join(f"{k}\x01{v}\x02" for k, v in row) for row in rows]
    start = min(cut[0], len(rows))
    props = P.parse(pa.array(strings, pa.string())).slice(start, cut[1])
    names = ["TAGS", "KEYS", "UNIQ_KEY", "é"]
    got = [column.to_pylist() for column in P.lookup(props, names)]
    kept = rows[start : start + cut[1]]
    assert got == [[dict(row).get(name) for row in kept] for name in names]
