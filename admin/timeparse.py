"""Times as operators type them: epoch ms, ISO 8601, or relative to now such as ``-15m`` or ``+1h``."""

from __future__ import annotations

import datetime as dt
import re

from admin.errors import BadInput

_RELATIVE = re.compile(r"([-+])(\d+)(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_time(text: str, now_ms: int | None = None) -> int:
    """Epoch milliseconds from ``1700000000000`` (ms), an ISO 8601 time (local time when it has no
    offset), a time ago such as ``-15m``, ``-2h``, ``-1d`` or one to come such as ``+1h``."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    now = int(dt.datetime.now().timestamp() * 1000) if now_ms is None else now_ms
    if m := _RELATIVE.fullmatch(value):
        delta = int(m.group(2)) * _UNIT_MS[m.group(3)]
        return now - delta if m.group(1) == "-" else now + delta
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise BadInput(f"{text!r} is not a time: use epoch ms, ISO 8601 or e.g. -15m, -2h, +1d") from None
    return int((parsed if parsed.tzinfo else parsed.astimezone()).timestamp() * 1000)


_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)?")


def parse_duration(text: str) -> int:
    """Milliseconds from a duration as operators type it: ``500ms``, ``90s``, ``5m``, ``2h``, ``1d``
    (a bare number is seconds)."""
    m = _DURATION.fullmatch(text.strip())
    if m is None:
        raise BadInput(f"{text!r} is not a duration: use e.g. 90s, 5m, 2h or 1d")
    return int(m.group(1)) * _UNIT_MS[m.group(2) or "s"]
