"""Java ``String.hashCode`` and the values RocketMQ derives from it.

Java hashes UTF-16 code units with 32-bit wrap-around; ConsumeQueue tagsCode is that value
sign-extended to 64 bits and the IndexFile key hash is its absolute value (MIN_VALUE -> 0).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # A 64-bit machine int when compiled with mypyc (the loops run far faster than on Python ints);
    # only an annotation otherwise, so mypy_extensions is not needed at run time.
    from mypy_extensions import i64


# Java's hash of an ASCII string is sum(c_i * 31**(n-1-i)): a base-31 number whose "digits" are the
# character codes. Each code is 31*q + r with r < 31 and q <= 4, so the hash is the base-31 number of
# the r digits plus 31 times that of the q digits, and int() reads both in C: faster than an interpreted
# loop, the more so the longer the key.
_BASE31 = b"0123456789abcdefghijklmnopqrstu"
_LOW_DIGITS = bytes(_BASE31[c % 31] if c < 128 else 48 for c in range(256))
_HIGH_DIGITS = bytes(_BASE31[c // 31] if c < 128 else 48 for c in range(256))
_PARSED_MAX = 4000  # int() refuses longer digit strings (sys.get_int_max_str_digits, 4300)


# Compiled by mypyc, the plain loop below runs on machine ints and beats the parse.
_PARSE = __file__.endswith(".py")


def java_hash(s: str) -> int:
    """Return Java's ``s.hashCode()`` as a signed 32-bit int."""
    h: i64 = 0
    if _PARSE and s.isascii() and 0 < len(s) <= _PARSED_MAX:
        raw = s.encode("ascii")
        h = (int(raw.translate(_LOW_DIGITS), 31) + 31 * int(raw.translate(_HIGH_DIGITS), 31)) & 0xFFFFFFFF
    else:
        n: i64 = len(s)
        i: i64 = 0
        while i < n:
            unit: i64 = ord(s[i])
            if unit > 0xFFFF:  # beyond the BMP: Java's string holds it as a UTF-16 surrogate pair
                unit -= 0x10000
                h = (31 * h + 0xD800 + (unit >> 10)) & 0xFFFFFFFF
                unit = 0xDC00 + (unit & 0x3FF)
            h = (31 * h + unit) & 0xFFFFFFFF
            i += 1
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
