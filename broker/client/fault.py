"""Producer queue selection with latency fault tolerance (Java's MQFaultStrategy).

With fault tolerance on, each send's latency (a failure counts as 30 s) maps to a period during
which its broker is avoided; without it, selection is plain round robin that skips the broker the
previous attempt of the same send failed on.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from broker.protocol.bodies import MessageQueue

LATENCY_MAX_MS = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_MS = (0, 0, 30000, 60000, 120000, 180000, 600000)
FAILURE_LATENCY_MS = 30000


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(slots=True)
class _FaultItem:
    broker: str
    latency_ms: int
    available_from_ms: int


class LatencyFaultTolerance:
    """Brokers that answered slowly or failed, and until when to avoid them."""

    def __init__(self, clock: Callable[[], int] = _now_ms) -> None:
        self._items: dict[str, _FaultItem] = {}
        self._clock = clock
        self._worst = itertools.count()

    def update(self, broker: str, latency_ms: int, not_available_ms: int) -> None:
        self._items[broker] = _FaultItem(broker, latency_ms, self._clock() + not_available_ms)

    def is_available(self, broker: str) -> bool:
        item = self._items.get(broker)
        return item is None or self._clock() >= item.available_from_ms

    def remove(self, broker: str) -> None:
        self._items.pop(broker, None)

    def pick_one_at_least(self) -> str | None:
        """Among the brokers on record, one of the better half (rotating), as Java does."""
        if not self._items:
            return None
        now = self._clock()
        ranked = sorted(
            self._items.values(),
            key=lambda i: (now < i.available_from_ms, i.latency_ms, i.available_from_ms),
        )
        half = len(ranked) // 2
        return ranked[0].broker if half == 0 else ranked[next(self._worst) % half].broker


class QueueSelector:
    """Round-robin over a topic's write queues, optionally steering around slow or failed brokers."""

    def __init__(self, fault_tolerance: bool = False, clock: Callable[[], int] = _now_ms) -> None:
        self.enabled = fault_tolerance
        self.faults = LatencyFaultTolerance(clock)
        self._counter = itertools.count()

    def _next(self) -> int:
        return next(self._counter)

    def select(self, queues: list[MessageQueue], last_failed_broker: str | None = None) -> MessageQueue:
        if not queues:
            raise ValueError("no queue to select from")
        if self.enabled:
            start = self._next()
            for i in range(len(queues)):
                mq = queues[(start + i) % len(queues)]
                if self.faults.is_available(mq.brokerName):
                    return mq
            fallback = self.faults.pick_one_at_least()
            on_broker = [mq for mq in queues if mq.brokerName == fallback]
            if on_broker:
                return on_broker[self._next() % len(on_broker)]
            if fallback is not None:
                self.faults.remove(fallback)
            return queues[self._next() % len(queues)]
        if last_failed_broker is not None:
            for _ in range(len(queues)):
                mq = queues[self._next() % len(queues)]
                if mq.brokerName != last_failed_broker:
                    return mq
        return queues[self._next() % len(queues)]

    def record(self, broker: str, latency_ms: int, failed: bool) -> None:
        """Account one send attempt (only when fault tolerance is on)."""
        if not self.enabled:
            return
        latency = FAILURE_LATENCY_MS if failed else latency_ms
        self.faults.update(broker, latency, not_available_ms(latency))


def not_available_ms(latency_ms: int) -> int:
    """How long a broker is avoided after a send that took ``latency_ms``."""
    for bound, duration in zip(reversed(LATENCY_MAX_MS), reversed(NOT_AVAILABLE_MS), strict=True):
        if latency_ms >= bound:
            return duration
    return 0
