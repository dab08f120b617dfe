"""Which client held which queue when: a group's queue owners, observed refresh after refresh, kept as
the changes between observations; a queue whose owner keeps changing is flagged as flapping.

Fed with what the clients themselves report (GET_CONSUMER_RUNNING_INFO: the queues each one owns), so
it shows the rebalances that happened, whatever strategy the clients allocate with. Bounded: the last
``limit`` changes."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

Queue = tuple[str, str, int]  # topic, broker name, queue id


@dataclass(frozen=True, slots=True)
class OwnerChange:
    at_ms: int
    queue: Queue
    before: str | None  # client id; None = nobody held it
    after: str | None


class RebalanceHistory:
    def __init__(self, limit: int = 200, window_ms: int = 600_000, flap_changes: int = 3) -> None:
        self.changes: deque[OwnerChange] = deque(maxlen=limit)  # oldest first
        self.window_ms = window_ms
        self.flap_changes = flap_changes  # changes of one queue within the window that make it flap
        self._owners: dict[Queue, str] | None = None

    def observe(self, owners: Mapping[Queue, str], at_ms: int) -> list[OwnerChange]:
        """Record who holds each queue now; the changes since the last observation (none the first time)."""
        new = dict(owners)
        old = self._owners
        self._owners = new
        if old is None:
            return []
        found = [
            OwnerChange(at_ms, q, old.get(q), new.get(q))
            for q in sorted(old.keys() | new.keys())
            if old.get(q) != new.get(q)
        ]
        self.changes.extend(found)
        return found

    def flapping(self, now_ms: int) -> list[Queue]:
        """Queues whose owner changed at least ``flap_changes`` times within the window."""
        counts: dict[Queue, int] = {}
        for change in self.changes:
            if now_ms - change.at_ms <= self.window_ms:
                counts[change.queue] = counts.get(change.queue, 0) + 1
        return sorted(q for q, n in counts.items() if n >= self.flap_changes)
