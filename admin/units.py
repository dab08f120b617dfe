"""Figures for people: durations and byte counts as every front end writes them (JSON keeps the raw
numbers)."""

from __future__ import annotations


def duration(ms: int) -> str:
    """How long, for people: ``0s``, ``42s``, ``4m 05s``, ``2h 03m``, ``3d 04h``."""
    seconds = max(0, ms) // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


def size(count: int) -> str:
    """A byte count for people, in binary units: ``512 B``, ``1.5 KiB``, ``20.0 GiB``."""
    if abs(count) < 1024:
        return f"{count} B"
    value = count / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def local_time(epoch_ms: int) -> str:
    """A millisecond timestamp as local date and time to the second."""
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError, OSError):
        return str(epoch_ms)


def runtime_value(key: str, value: str) -> str:
    """A broker runtime figure (GET_BROKER_RUNTIME_INFO sends them all as text) for people: epoch
    milliseconds as a date, byte counts and CommitLog positions in binary units, ratios as percentages;
    anything else as sent."""
    name = key.lower()
    if value.isdigit():
        number = int(value)
        if "time" in name and 10**12 <= number < 10**14:
            return local_time(number)
        if "bytes" in name or (name.startswith("commitlog") and name.endswith("offset")):
            return size(number)
    elif name.endswith("ratio"):
        try:
            return f"{float(value):.1%}"
        except ValueError:
            return value
    return value
