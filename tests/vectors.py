"""Byte vectors derived from Apache RocketMQ behaviour (Java hashCode/CRC values computed by a JVM,
ids from upstream test constants, constructed wire frames), kept in tests/data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent / "data"


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def wire_item(name: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = load("constructed_wire_vectors.json")["items"]
    return next(i for i in items if i["name"] == name)
