"""How a lone controller keeps its state: every committed change rewrites a small snapshot file
(``replicas.json`` in controllerStorePath) before the request is answered, so a restarted controller
remembers every group, master and epoch it granted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Protocol

from broker.controller.state import Event, ReplicaState

SNAPSHOT_FILE = "replicas.json"


class NotLeader(Exception):
    """This controller may not change the state now (another one leads, or no majority)."""


class Journal(Protocol):
    """Where a controller's state lives and how a change is committed (LocalJournal, RaftJournal)."""

    self_id: str

    @property
    def state(self) -> ReplicaState: ...
    @property
    def is_leader(self) -> bool: ...
    @property
    def leader_id(self) -> str | None: ...
    async def commit(self, events: list[Event]) -> None: ...
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


class LocalJournal:
    """The one-controller replicator: always the leader, durable through a snapshot file."""

    def __init__(self, folder: Path, self_id: str) -> None:
        self.state = ReplicaState()
        self.self_id = self_id
        self._path = folder / SNAPSHOT_FILE
        folder.mkdir(parents=True, exist_ok=True)
        if self._path.exists():
            self.state.restore(json.loads(self._path.read_text()))

    @property
    def is_leader(self) -> bool:
        return True

    @property
    def leader_id(self) -> str | None:
        return self.self_id

    async def commit(self, events: list[Event]) -> None:
        for event in events:
            self.state.apply(event)
        if events:
            self._save()

    def _save(self) -> None:
        tmp = self._path.with_suffix(".tmp")
        with tmp.open("w") as out:
            json.dump(self.state.snapshot(), out)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(self._path)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
