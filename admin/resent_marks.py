"""Sets of queue offsets kept as ranges (``0-41,57,60-63``), small enough for a NameServer KV value
however many dead letters were resent in a row."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from admin.errors import OperationFailed


@dataclass(frozen=True, slots=True)
class OffsetRanges:
    """Sorted, disjoint, non-adjacent inclusive ranges of offsets."""

    ranges: tuple[tuple[int, int], ...] = field(default=())

    @classmethod
    def parse(cls, text: str) -> OffsetRanges:
        try:
            pairs = [
                (int(lo), int(hi or lo))
                for lo, _, hi in (part.strip().partition("-") for part in text.split(",") if part.strip())
            ]
        except ValueError:
            raise OperationFailed(f"the record of resent dead letters is unreadable: {text[:60]!r}") from None
        return cls._merged(pairs)

    @classmethod
    def _merged(cls, pairs: Iterable[tuple[int, int]]) -> OffsetRanges:
        out: list[tuple[int, int]] = []
        for lo, hi in sorted(pairs):
            if out and lo <= out[-1][1] + 1:
                out[-1] = (out[-1][0], max(out[-1][1], hi))
            else:
                out.append((lo, hi))
        return cls(tuple(out))

    def union(self, offsets: Iterable[int]) -> OffsetRanges:
        return self._merged([*self.ranges, *((o, o) for o in offsets)])

    def format(self) -> str:
        return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges)

    def __contains__(self, offset: object) -> bool:
        if not isinstance(offset, int):
            return False
        i = bisect.bisect_right(self.ranges, offset, key=lambda r: r[0]) - 1
        return i >= 0 and self.ranges[i][0] <= offset <= self.ranges[i][1]
