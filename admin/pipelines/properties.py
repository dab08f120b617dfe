"""Message property strings (``name\\x01value\\x02`` repeated) to an Arrow ``map<string,string>`` column,
and the value of one property for every row.

Well-formed strings (what every client writes: each entry a non-empty name, one ``\\x01``, a non-empty
value and ``\\x02``) are cut at the separator positions of the whole column at once. Anything else
goes through a regular expression per entry that drops malformed entries as Java's parser does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from admin.pipelines.gather import gather

PROPS: Final = pa.map_(pa.string(), pa.string())
_ENTRY_RE: Final = "(?s)^(?P<k>[^\x01]+)\x01(?P<v>.+)$"

I64 = npt.NDArray[np.int64]


def parse(props: pa.Array) -> pa.MapArray:
    """A ``string`` column of property strings (no nulls) to a ``map<string,string>`` column that keeps
    every well-formed entry in order, repeated names included."""
    separated = _separated(props)
    return _by_regex(props) if separated is None else separated


def _separated(props: pa.Array) -> pa.MapArray | None:
    """The map when every string is a run of well-formed entries, each ending with ``\\x02``; else None."""
    n = len(props)
    _, offsets_buf, data_buf = props.buffers()
    if n == 0 or data_buf is None or props.null_count:
        return None
    offsets = np.frombuffer(offsets_buf, np.int32, n + 1, props.offset * 4).astype(np.int64)
    base = int(offsets[0])
    bounds = offsets - base
    data = np.frombuffer(data_buf, np.uint8, int(bounds[-1]), base)
    seps = np.flatnonzero(data <= 2)  # \x01 and \x02 (a \x00 fails the checks below)
    kinds = data[seps]
    names_end, values_end = seps[0::2], seps[1::2]
    if not (
        len(seps) % 2 == 0
        and bool(np.all(bounds[1:] > bounds[:-1]))  # no empty strings
        and bool(np.all(data[bounds[1:] - 1] == 2))  # so entries never cross rows
        and bool(np.all(kinds[0::2] == 1))
        and bool(np.all(kinds[1::2] == 2))
        and seps[0] > 0
        and bool(np.all(np.diff(seps) > 1))  # no empty name or value
    ):
        return None
    names_start = np.concatenate(([0], values_end[:-1] + 1))
    column = data_buf.slice(base, int(bounds[-1]))
    names = gather(column, names_start, names_end).cast(pa.string())
    values = gather(column, names_end + 1, values_end).cast(pa.string())
    entries = np.searchsorted(values_end, bounds).astype(np.int32)
    return pa.MapArray.from_arrays(pa.array(entries), names, values, type=PROPS)


def _by_regex(props: pa.Array) -> pa.MapArray:
    parts = pc.split_pattern(props, "\x02")
    kv = pc.extract_regex(parts.flatten(), _ENTRY_RE)
    keep = kv.is_valid()
    running = pc.cumulative_sum(keep.cast(pa.int32()))
    before = pa.concat_arrays([pa.array([0], pa.int32()), running])
    offsets = pc.take(before, parts.offsets)
    kept = kv.filter(keep)
    return pa.MapArray.from_arrays(offsets, kept.field("k"), kept.field("v"), type=PROPS)


def lookup(props: pa.MapArray, names: Sequence[str]) -> list[pa.Array]:
    """The value of each property of ``names`` in every map (the last one when repeated), null where
    absent. Names are compared as Arrow scalars: pyarrow converts a bare ``str`` on every call."""
    offsets = props.offsets.to_numpy()
    base = int(offsets[0])
    row_of = np.repeat(np.arange(len(props)), np.diff(offsets))  # the map of each entry
    keys = props.keys.slice(base, len(row_of))  # a slice's child arrays are not cut to its entries
    columns = []
    for name in names:
        hits = np.flatnonzero(pc.equal(keys, pa.scalar(name, pa.string())).to_numpy(zero_copy_only=False))
        rows = row_of[hits]
        last = np.append(rows[1:] != rows[:-1], True) if len(rows) else np.zeros(0, np.bool_)
        pick = np.full(len(props), -1, np.int64)
        pick[rows[last]] = hits[last] + base
        columns.append(pc.take(props.items, pa.array(pick, mask=pick < 0)))
    return columns
