"""Each entry of a metadata table encoded once and kept until the entry is replaced.

The topic and group tables are written whole (their files, GET_ALL_TOPIC_CONFIG,
GET_ALL_SUBSCRIPTIONGROUP_CONFIG) but change a few entries at a time; configurations are replaced,
never changed in place, so an entry whose object is still the one encoded keeps its encoding and a
whole table of 10,000 costs a join rather than 10,000 encodings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

V = TypeVar("V")
E = TypeVar("E", str, bytes)


class KeptParts(Generic[V, E]):
    """``encode(name, value)`` per entry, kept by name until the value is another object."""

    def __init__(self, encode: Callable[[str, V], E]) -> None:
        self._encode: Callable[[str, V], E] = encode
        self._kept: dict[str, tuple[V, E]] = {}

    def parts(self, table: dict[str, V], names: Iterable[str]) -> list[E]:
        """The encodings of ``names`` (keys of ``table``, a copy the caller took in one step), in
        that order; entries gone from ``table`` are forgotten."""
        kept = self._kept
        out = []
        for name in names:
            value = table[name]
            held = kept.get(name)
            if held is None or held[0] is not value:
                held = kept[name] = (value, self._encode(name, value))
            out.append(held[1])
        if len(kept) > len(table):
            for gone in kept.keys() - table.keys():
                kept.pop(gone, None)
        return out
