"""Which brokers are alive, from BROKER_HEARTBEAT (904): kept by each controller for itself
(liveness is not replicated: brokers send their heartbeats to every controller, so a new leader
already knows), with what an election needs to rank the candidates: the broker's epoch, CommitLog
end and election priority.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_TIMEOUT_MS = 10_000
MAX_BROKERS = 10_000  # a peer cannot make the table grow past this many live entries


@dataclass(slots=True)
class BrokerLiveInfo:
    cluster: str
    broker_name: str
    broker_id: int
    address: str
    last_seen: float
    timeout_ms: int
    epoch: int = 0
    max_offset: int = 0
    confirm_offset: int = 0
    election_priority: int = 2**31 - 1  # Integer.MAX_VALUE: the lowest priority (smaller wins)


class HeartbeatTable:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._live: dict[tuple[str, int], BrokerLiveInfo] = {}

    def beat(self, info: BrokerLiveInfo) -> bool:
        """Record a heartbeat; False when the table is full of other brokers."""
        key = (info.broker_name, info.broker_id)
        if key not in self._live and len(self._live) >= MAX_BROKERS:
            self.expire()
            if len(self._live) >= MAX_BROKERS:
                return False
        info.last_seen = self._clock()
        self._live[key] = info
        return True

    def get(self, broker_name: str, broker_id: int) -> BrokerLiveInfo | None:
        return self._live.get((broker_name, broker_id))

    def all(self) -> list[BrokerLiveInfo]:
        return list(self._live.values())

    def alive(self, broker_name: str, broker_id: int | None) -> bool:
        info = self._live.get((broker_name, broker_id)) if broker_id is not None else None
        return info is not None and self._clock() - info.last_seen <= info.timeout_ms / 1000

    def expire(self) -> list[BrokerLiveInfo]:
        """Drop and return the brokers whose heartbeats stopped."""
        now = self._clock()
        gone = [i for i in self._live.values() if now - i.last_seen > i.timeout_ms / 1000]
        for info in gone:
            del self._live[(info.broker_name, info.broker_id)]
        return gone

    def forget(self, broker_name: str, broker_id: int | None = None) -> None:
        for key in [k for k in self._live if k[0] == broker_name and broker_id in (None, k[1])]:
            del self._live[key]
