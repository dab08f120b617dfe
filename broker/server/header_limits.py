"""Java's int/long ranges for header numbers.

The typed headers parse any integer, but the wire types are Java ``int``/``long`` and the record
layout stores them in 32/64 bits: a value beyond them must be answered with INVALID_PARAMETER
naming the field, not fail deep inside the store.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.protocol.headers import CommandHeader

_INT = (-(2**31), 2**31 - 1)
_LONG = (-(2**63), 2**63 - 1)


def range_problem(header: CommandHeader, ints: Iterable[str] = (), longs: Iterable[str] = ()) -> str | None:
    """Why a field of ``header`` does not fit its Java type, or None."""
    for names, (lo, hi), kind in ((ints, _INT, "int"), (longs, _LONG, "long")):
        for name in names:
            value = getattr(header, name)
            if isinstance(value, int) and not lo <= value <= hi:
                return f"{type(header).__name__}: field {name!r} is out of the Java {kind} range: {value}"
    return None
