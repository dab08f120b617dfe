"""The JSON files under ``<store>/config``: written atomically with a ``.bak`` of the previous
version, read leniently (RocketMQ writes bare integer keys), falling back to the ``.bak`` when the
main file is missing, empty or corrupt."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from broker.protocol import lenient_json

log = logging.getLogger(__name__)


def data_version(counter: int = 0) -> dict[str, int]:
    now = int(time.time() * 1000)
    return {"counter": counter, "stateVersion": 0, "timestamp": now}


class ConfigFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def bak_path(self) -> Path:
        return self.path.with_name(self.path.name + ".bak")

    def _read(self, path: Path) -> Any | None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        if not text.strip():
            raise lenient_json.LenientJSONError("file is empty")
        return lenient_json.loads(text)

    def load(self) -> Any | None:
        """The parsed content, or None when neither the file nor its ``.bak`` exists."""
        try:
            data = self._read(self.path)
            if data is not None:
                return data
        except (lenient_json.LenientJSONError, UnicodeDecodeError) as exc:
            log.warning("%s is unreadable (%s); using %s", self.path, exc, self.bak_path.name)
        try:
            return self._read(self.bak_path)
        except (lenient_json.LenientJSONError, UnicodeDecodeError) as exc:
            log.warning("%s is unreadable too (%s); starting empty", self.bak_path, exc)
            return None

    def save(self, text: str) -> None:
        """Write ``text`` so that a crash at any moment leaves a readable file or ``.bak``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if self.path.exists():
            os.replace(self.path, self.bak_path)
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def int_keyed(table: Any) -> dict[int, int]:
    """``{"0": 12}`` or ``{0: 12}`` as read back by lenient JSON, to ``{0: 12}``."""
    if not isinstance(table, dict):
        return {}
    out: dict[int, int] = {}
    for key, value in table.items():
        try:
            out[int(key)] = int(value)
        except (TypeError, ValueError):
            continue
    return out


def encode_offset_file(offset_table: dict[str, dict[int, int]], version: dict[str, int]) -> str:
    """consumerOffset.json as RocketMQ writes it (bare integer queue ids, tab-indented)."""
    groups: dict[str, list[str]] = {}
    for key in offset_table:
        topic, _, group = key.rpartition("@")
        groups.setdefault(group, []).append(topic)
    return lenient_json.dumps_fastjson(
        {"dataVersion": version, "groupTopicMap": groups, "offsetTable": offset_table}, pretty=True
    )


def decode_offset_file(data: Any) -> dict[str, dict[int, int]]:
    if not isinstance(data, dict):
        return {}
    table = data.get("offsetTable") or {}
    return {str(k): int_keyed(v) for k, v in table.items()} if isinstance(table, dict) else {}


def encode_delay_file(offsets: dict[int, int], version: dict[str, int]) -> str:
    return lenient_json.dumps_fastjson({"dataVersion": version, "offsetTable": offsets}, pretty=True)


def decode_delay_file(data: Any) -> dict[int, int]:
    return int_keyed(data.get("offsetTable")) if isinstance(data, dict) else {}
