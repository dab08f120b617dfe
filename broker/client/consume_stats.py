"""Per-topic pull and consume rates of one consumer (Java's ConsumerStatsManager), reported in
GET_CONSUMER_RUNNING_INFO: pull and consume RT and TPS over the last minute, failed messages over the
last hour.

Each figure is a short deque of time buckets holding (events, sum), so recording costs one bucket update
and memory stays bounded whatever the message rate.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from broker.protocol.running_info import ConsumeStatus

MINUTE = 60
HOUR = 3600


class _Window:
    """Counts and sums over the last ``span`` seconds, in buckets of ``step`` seconds."""

    __slots__ = ("buckets", "span", "step")

    def __init__(self, span: int, step: int) -> None:
        self.span = span
        self.step = step
        self.buckets: deque[list[float]] = deque()  # [bucket start, events, sum]

    def add(self, now: float, events: int, amount: float = 0.0) -> None:
        start = now - now % self.step
        last = self.buckets[-1] if self.buckets else None
        if last is not None and last[0] == start:
            last[1] += events
            last[2] += amount
        else:
            self.buckets.append([start, events, amount])
            self._trim(now)

    def _trim(self, now: float) -> None:
        while self.buckets and self.buckets[0][0] <= now - self.span:
            self.buckets.popleft()

    def totals(self, now: float) -> tuple[float, float]:
        self._trim(now)
        return sum(b[1] for b in self.buckets), sum(b[2] for b in self.buckets)


@dataclass(slots=True)
class _TopicStats:
    pull_rt: _Window = field(default_factory=lambda: _Window(MINUTE, 1))  # pulls, ms
    pulled: _Window = field(default_factory=lambda: _Window(MINUTE, 1))  # messages
    consume_rt: _Window = field(default_factory=lambda: _Window(MINUTE, 1))  # listener calls, ms
    consumed_ok: _Window = field(default_factory=lambda: _Window(MINUTE, 1))  # messages
    consumed_failed: _Window = field(default_factory=lambda: _Window(MINUTE, 1))  # messages
    failed_hour: _Window = field(default_factory=lambda: _Window(HOUR, MINUTE))  # messages


class ConsumeStatsRecorder:
    def __init__(self) -> None:
        self._topics: dict[str, _TopicStats] = {}
        self._started = time.monotonic()

    def _of(self, topic: str) -> _TopicStats:
        stats = self._topics.get(topic)
        if stats is None:
            stats = self._topics[topic] = _TopicStats()
        return stats

    def pulled(self, topic: str, rt_ms: float, messages: int) -> None:
        now = time.monotonic()
        stats = self._of(topic)
        stats.pull_rt.add(now, 1, rt_ms)
        stats.pulled.add(now, messages)

    def consumed(self, topic: str, rt_ms: float, ok: int, failed: int) -> None:
        now = time.monotonic()
        stats = self._of(topic)
        stats.consume_rt.add(now, 1, rt_ms)
        stats.consumed_ok.add(now, ok)
        if failed:
            stats.consumed_failed.add(now, failed)
            stats.failed_hour.add(now, failed)

    def status(self, topic: str) -> ConsumeStatus:
        stats = self._topics.get(topic)
        if stats is None:
            return ConsumeStatus()
        now = time.monotonic()
        seconds = max(1.0, min(float(MINUTE), now - self._started))  # a young consumer: its lifetime

        def rt(window: _Window) -> float:
            calls, total = window.totals(now)
            return total / calls if calls else 0.0

        def tps(window: _Window) -> float:
            return window.totals(now)[0] / seconds

        return ConsumeStatus(
            pullRT=rt(stats.pull_rt),
            pullTPS=tps(stats.pulled),
            consumeRT=rt(stats.consume_rt),
            consumeOKTPS=tps(stats.consumed_ok),
            consumeFailedTPS=tps(stats.consumed_failed),
            consumeFailedMsgs=int(stats.failed_hour.totals(now)[0]),
        )
