"""Which client held which queue of a group, and when that changed: a rebalance history the broker
keeps for every group, whether anyone watches or not (``rmq group rebalances``, the dashboard).

The pulls tell it: a consumer pulls only the queues its rebalance gave it, and the heartbeat on its
connection names it. A pull costs three dict lookups and a compare, and allocates nothing unless the
queue changed hands. What does not count, and why:

- POP: every consumer of a group may pop every queue, so a POP queue has no holder.
- offset commits: a client that lost a queue commits where it stopped after the new holder began
  pulling; counting it would turn every move into a move and back.
- broadcasting groups (every client pulls every queue): the caller does not report them.
- a pull by the queue's previous holder within :data:`SETTLE_MS` of the move: one it sent before it
  heard of the rebalance, not a move back.

Bounded by construction: at most ``max_queues`` holders in all (queues beyond are not followed), the
last ``per_group`` moves of a group and ``max_moves`` moves in all (the oldest go first). A queue
that moved more than ``flap_moves`` times within ``flap_window_ms`` is flapping.

Kept in ``config/rebalanceHistory.json``; :meth:`persist` runs on a worker thread while the event loop
records, so it copies each table with one C-level call (``dict.copy``, ``deque.copy``) the loop
cannot interleave with.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.protocol.rebalances import FlappingQueue, QueueHolder, QueueMove, RebalanceHistoryBody
from broker.store.config_files import ConfigFile

log = logging.getLogger(__name__)

SETTLE_MS = 1000
FILE_NAME = "rebalanceHistory.json"
FORMAT = 1

Holding = tuple[str, int]  # client id, since (ms)


@dataclass(frozen=True, slots=True)
class Limits:
    per_group: int = 256  # moves kept per group
    max_moves: int = 20_000  # moves kept in all
    max_queues: int = 100_000  # queues followed in all
    flap_moves: int = 3  # more moves than this within the window: flapping
    flap_window_ms: int = 300_000


@dataclass(slots=True)
class _Group:
    holders: dict[str, dict[int, Holding]] = field(default_factory=dict)  # topic -> queue id -> holder
    moves: deque[QueueMove] = field(default_factory=deque)  # oldest first


class RebalanceHistory:
    def __init__(
        self, config_dir: Path, limits: Limits | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.file = ConfigFile(config_dir / FILE_NAME)
        self.limits = limits or Limits()
        self._clock = clock
        self._groups: dict[str, _Group] = {}
        self._order: deque[tuple[_Group, QueueMove]] = deque()  # every kept move, oldest first
        self._queues = 0
        self._full_logged = False
        self.dirty = False  # changed since the last persist()

    # == recording (on the event loop) =========================================================
    def pulled(self, group: str, topic: str, queue_id: int, client_id: str) -> None:
        """``client_id`` pulled the queue: its holder, from now on if it was not already."""
        g = self._groups.get(group)
        if g is not None:
            queues = g.holders.get(topic)
            if queues is not None:
                held = queues.get(queue_id)
                if held is not None and held[0] == client_id:
                    return
        self._taken(group, topic, queue_id, client_id)

    def _taken(self, group: str, topic: str, queue_id: int, client_id: str) -> None:
        now = int(self._clock() * 1000)
        g = self._groups.get(group)
        queues = None if g is None else g.holders.get(topic)
        held = None if queues is None else queues.get(queue_id)
        if held is None:
            if self._queues >= self.limits.max_queues:
                if not self._full_logged:
                    log.warning("rebalance history follows %d queues already: no more", self._queues)
                    self._full_logged = True
                return
            self._queues += 1
        elif g is not None and self._returning(g, topic, queue_id, client_id, now):
            return
        if g is None:
            g = self._groups[group] = _Group()
        if queues is None:
            queues = g.holders[topic] = {}
        queues[queue_id] = (client_id, now)
        if held is not None:
            self._keep(g, QueueMove(now, topic, queue_id, held[0], client_id))
        self.dirty = True

    @staticmethod
    def _returning(g: _Group, topic: str, queue_id: int, client_id: str, now: int) -> bool:
        """Whether the queue moved away from ``client_id`` less than SETTLE_MS ago."""
        for move in reversed(g.moves):
            if now - move.at_ms > SETTLE_MS:
                return False
            if move.topic == topic and move.queue_id == queue_id:
                return move.before == client_id
        return False

    def _keep(self, g: _Group, move: QueueMove) -> None:
        g.moves.append(move)
        self._order.append((g, move))
        if len(g.moves) > self.limits.per_group:
            g.moves.popleft()  # still in _order: dropped there in its turn, bounded by max_moves
        while len(self._order) > self.limits.max_moves:
            owner, oldest = self._order.popleft()
            if owner.moves and owner.moves[0] is oldest:
                owner.moves.popleft()

    # == reading ===============================================================================
    def history(self, group: str, since_ms: int, online: set[str]) -> RebalanceHistoryBody | None:
        """The group's holders, its moves from ``since_ms`` on and its flapping queues; None when
        the broker never saw the group pull. ``online``: the client ids connected now."""
        g = self._groups.get(group)
        if g is None:
            return None
        limits = self.limits
        now = int(self._clock() * 1000)
        holders = [
            QueueHolder(topic, qid, client, since, client in online)
            for topic, queues in sorted(g.holders.items())
            for qid, (client, since) in sorted(queues.items())
        ]
        recent = Counter((m.topic, m.queue_id) for m in g.moves if now - m.at_ms <= limits.flap_window_ms)
        flapping = [FlappingQueue(t, q, n) for (t, q), n in sorted(recent.items()) if n > limits.flap_moves]
        moves = [m for m in g.moves if m.at_ms >= since_ms]
        return RebalanceHistoryBody(holders, moves, flapping, limits.flap_moves, limits.flap_window_ms)

    # == the file ==============================================================================
    def persist(self) -> None:
        """Write the history (on a worker thread)."""
        self.dirty = False
        groups = {}
        for name, g in self._groups.copy().items():
            holders = [
                [topic, qid, client, since]
                for topic, queues in g.holders.copy().items()
                for qid, (client, since) in queues.copy().items()
            ]
            moves = [[m.at_ms, m.topic, m.queue_id, m.before, m.after] for m in g.moves.copy()]
            groups[name] = {"holders": holders, "moves": moves}
        self.file.save(json.dumps({"format": FORMAT, "groups": groups}, separators=(",", ":")))

    def load(self) -> None:
        """Read the file written by :meth:`persist`; an unreadable one is logged and left out."""
        data = self.file.load()
        if data is None:
            return
        try:
            self._restore(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s is unreadable (%r): the rebalance history starts empty", self.file.path, exc)
            self._groups.clear()
            self._order.clear()
            self._queues = 0

    def _restore(self, data: Any) -> None:
        if data["format"] != FORMAT:
            raise ValueError(f"format {data['format']!r}")
        moves: list[tuple[_Group, QueueMove]] = []
        for name, saved in data["groups"].items():
            g = self._groups[str(name)] = _Group()
            for topic, qid, client, since in saved["holders"]:
                if self._queues < self.limits.max_queues:
                    g.holders.setdefault(str(topic), {})[int(qid)] = (str(client), int(since))
                    self._queues += 1
            for at, topic, qid, before, after in saved["moves"][-self.limits.per_group :]:
                move = QueueMove(int(at), str(topic), int(qid), str(before), str(after))
                g.moves.append(move)
                moves.append((g, move))
        moves.sort(key=lambda gm: gm[1].at_ms)
        for g, move in moves[: max(0, len(moves) - self.limits.max_moves)]:
            g.moves.remove(move)
        self._order.extend(moves[-self.limits.max_moves :])
