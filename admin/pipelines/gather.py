"""Byte ranges of one buffer (a memory-mapped CommitLog file, a pull answer) to an Arrow ``binary``
column, with one copy per value and no Python loop."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

I64 = npt.NDArray[np.int64]

_EVENS: list[pa.Array] = [pa.array(np.arange(0, 2 * 8192, 2, dtype=np.int64))]


def gather(src: pa.Buffer, starts: I64, ends: I64) -> pa.Array:
    """``src[starts[i]:ends[i]]`` for every i. The ranges must lie in ``src``, ascending and not
    overlapping: values and the gaps between them then alternate in one offsets array, and ``take``
    keeps the values."""
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    offsets = np.empty(2 * n, np.int64)
    offsets[0::2] = starts
    offsets[1::2] = ends
    both = pa.Array.from_buffers(pa.large_binary(), 2 * n - 1, [None, pa.py_buffer(offsets), src])
    return pc.take(both, _evens(n)).cast(pa.binary())


def _evens(n: int) -> pa.Array:
    """``0, 2, 4 …`` (n values), cut from a cached array."""
    if len(_EVENS[0]) < n:
        _EVENS[0] = pa.array(np.arange(0, 2 * n, 2, dtype=np.int64))
    return _EVENS[0].slice(0, n)
