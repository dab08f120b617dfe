"""The NameServer's namespaced key/value store, saved after every change to ``kvConfig.json`` in
RocketMQ's own layout (``{"configTable":{namespace:{key:value}}}``) so a Java NameServer can take
the file over. Saving goes through :class:`ConfigFile`, so a torn or corrupt file falls back to its
``.bak``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from broker.protocol import lenient_json
from broker.store.config_files import ConfigFile

log = logging.getLogger(__name__)

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"  # topic -> "brokerName:queueNums;..."


class KVConfigManager:
    def __init__(self, path: Path) -> None:
        self._file = ConfigFile(path)
        self._table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """Read the file (or its ``.bak``); entries of the wrong shape are skipped with a warning."""
        self._table = _decode(self._file.load(), self._file.path)

    def put(self, namespace: str, key: str, value: str) -> None:
        table = self._table.setdefault(namespace, {})
        if table.get(key) != value:
            table[key] = value
            self._persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self._table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        """Remove a key; an emptied namespace goes too, so listing it answers "not found"."""
        table = self._table.get(namespace)
        if table is None or table.pop(key, None) is None:
            return
        if not table:
            del self._table[namespace]
        self._persist()

    def namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of one namespace, or None when it holds nothing."""
        table = self._table.get(namespace)
        return dict(table) if table else None

    def _persist(self) -> None:
        self._file.save(lenient_json.dumps({"configTable": self._table}))


def _decode(data: Any, path: Path) -> dict[str, dict[str, str]]:
    if data is None:
        return {}
    table = data.get("configTable") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        log.warning("%s has no configTable object; starting with an empty KV config", path)
        return {}
    out: dict[str, dict[str, str]] = {}
    for namespace, entries in table.items():
        if not isinstance(entries, dict):
            log.warning("%s: namespace %r is not an object; skipped", path, namespace)
            continue
        kept = {
            str(k): v if isinstance(v, str) else lenient_json.dumps(v)
            for k, v in entries.items()
            if v is not None
        }
        if kept:
            out[str(namespace)] = kept
    return out
