"""Access to the shared byte vectors (../shared/reference/vectors), located relative to the repo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "vectors"


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def wire_item(name: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = load("constructed_wire_vectors.json")["items"]
    return next(i for i in items if i["name"] == name)
