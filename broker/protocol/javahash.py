"""Java ``String.hashCode`` and the values RocketMQ derives from it.

Java hashes UTF-16 code units with 32-bit wrap-around; ConsumeQueue tagsCode is that value
sign-extended to 64 bits and the IndexFile key hash is its absolute value (MIN_VALUE -> 0).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # A 64-bit machine int when compiled with mypyc (the loops run ~10x faster than on Python ints);
    # only an annotation otherwise, so mypy_extensions is not needed at run time.
    from mypy_extensions import i64


def java_hash(s: str) -> int:
    """Return Java's ``s.hashCode()`` as a signed 32-bit int."""
    h: i64 = 0
    if s.isascii():
        for c in s.encode("ascii"):
            h = (31 * h + c) & 0xFFFFFFFF
    else:
        units = s.encode("utf-16-be")
        for i in range(0, len(units), 2):
            h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


@lru_cache(maxsize=4096)
def tags_code(tags: str | None) -> int:
    """ConsumeQueue tagsCode of a message's TAGS property (0 when there is none)."""
    if not tags:
        return 0
    return java_hash(tags)


def index_key_hash(key: str) -> int:
    """IndexFile key hash: ``abs(hashCode)`` with Integer.MIN_VALUE mapped to 0."""
    h = java_hash(key)
    if h == -0x80000000:
        return 0
    return -h if h < 0 else h
