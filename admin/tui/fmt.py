"""How the dashboard writes figures: times, counts, ratios, message bodies, and time input."""

from __future__ import annotations

import datetime as dt
import json

from rich.text import Text

Cell = str | Text


def ms_time(epoch_ms: int) -> str:
    """Local time of a millisecond timestamp; ``-`` for 0 or less (RocketMQ's "never")."""
    if epoch_ms <= 0:
        return "-"
    try:
        return dt.datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError, OSError):
        return str(epoch_ms)


def num(value: int | float | None) -> Text:
    """A right-aligned figure with thousands separators; ``-`` for None."""
    if value is None:
        return Text("-", justify="right")
    text = f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"
    return Text(text, justify="right")


def ratio(value: float | None) -> Text:
    """A 0..1 ratio as a percentage, red from 90 %."""
    if value is None:
        return Text("-", justify="right")
    return Text(f"{value * 100:.1f}%", justify="right", style="bold red" if value >= 0.9 else "")


def state(ok: bool, up: str = "UP", down: str = "DOWN") -> Text:
    return Text(up, style="green") if ok else Text(down, style="bold white on red")


def body_view(body: bytes, mode: str) -> str:
    """A message body as ``text``, pretty ``json`` (text when it is not JSON) or ``hex`` dump."""
    if mode == "hex":
        return "\n".join(
            f"{i:08x}  {body[i : i + 16].hex(' '):<47}  "
            + "".join(chr(b) if 32 <= b < 127 else "." for b in body[i : i + 16])
            for i in range(0, len(body), 16)
        )
    text = body.decode("utf-8", errors="replace")
    if mode == "json":
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text
