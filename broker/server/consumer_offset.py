"""Committed consumer offsets (``config/consumerOffset.json``) and the server-side reset table.

Offsets are "next message to consume", kept in memory under ``topic@group`` and saved
periodically (flushConsumerOffsetInterval) and at shutdown, like RocketMQ, so a commit costs no I/O.
A reset is one-shot per queue: the next pull of that queue answers
PULL_OFFSET_MOVED with it, and client commits are ignored until then.
"""

from __future__ import annotations

import threading
from pathlib import Path

from broker.store.config_files import ConfigFile, data_version, decode_offset_file, encode_offset_file

SEPARATOR = "@"


def _key(topic: str, group: str) -> str:
    return f"{topic}{SEPARATOR}{group}"


class ConsumerOffsetManager:
    def __init__(self, config_dir: Path) -> None:
        self.file = ConfigFile(config_dir / "consumerOffset.json")
        self.table: dict[str, dict[int, int]] = {}
        self.pull_table: dict[str, dict[int, int]] = {}
        self._reset: dict[str, dict[int, int]] = {}
        self._version = 0
        self._lock = threading.Lock()  # persist() runs in a worker thread

    def load(self) -> None:
        self.table = decode_offset_file(self.file.load())

    def persist(self) -> None:
        with self._lock:
            snapshot = {key: dict(queues) for key, queues in self.table.items()}
            self._version += 1
        self.file.save(encode_offset_file(snapshot, data_version(self._version)))

    # == commits and queries ===================================================================
    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        with self._lock:
            self.table.setdefault(_key(topic, group), {})[queue_id] = offset

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for the queue."""
        return self.table.get(_key(topic, group), {}).get(queue_id, -1)

    def record_pull(self, group: str, topic: str, queue_id: int, next_offset: int) -> None:
        """Where the group's last pull of the queue ended (consume stats' pullOffset)."""
        self.pull_table.setdefault(_key(topic, group), {})[queue_id] = next_offset

    def pulled(self, group: str, topic: str, queue_id: int) -> int:
        return self.pull_table.get(_key(topic, group), {}).get(queue_id, -1)

    def offsets_of(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(_key(topic, group), {}))

    def topics_of_group(self, group: str) -> list[str]:
        return sorted({k.rpartition(SEPARATOR)[0] for k in self.table if k.rpartition(SEPARATOR)[2] == group})

    def groups_of_topic(self, topic: str) -> list[str]:
        return sorted({k.rpartition(SEPARATOR)[2] for k in self.table if k.rpartition(SEPARATOR)[0] == topic})

    # == reset =================================================================================
    def assign_reset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.commit(group, topic, queue_id, offset)
        self._reset.setdefault(_key(topic, group), {})[queue_id] = offset

    def has_reset(self, group: str, topic: str, queue_id: int) -> bool:
        return queue_id in self._reset.get(_key(topic, group), {})

    def take_reset(self, group: str, topic: str, queue_id: int, pulled_at: int = -1) -> int | None:
        """The pending reset of the queue, erased by reading it (the pull that delivers it). A pull
        already at the reset offset (a client told by RESET_CONSUMER_CLIENT_OFFSET) just erases it:
        None, nothing to move."""
        queues = self._reset.get(_key(topic, group))
        offset = None if queues is None else queues.pop(queue_id, None)
        return None if offset == pulled_at else offset

    # == bulk changes ==========================================================================
    def clone(self, src_group: str, dest_group: str, topic: str) -> bool:
        with self._lock:
            offsets = self.table.get(_key(topic, src_group))
            if offsets is None:
                return False
            self.table[_key(topic, dest_group)] = dict(offsets)
            return True

    def remove_group(self, group: str) -> None:
        with self._lock:
            for key in [k for k in self.table if k.rpartition(SEPARATOR)[2] == group]:
                del self.table[key]

    def remove_topic(self, topic: str) -> None:
        with self._lock:
            for key in [k for k in self.table if k.rpartition(SEPARATOR)[0] == topic]:
                del self.table[key]
