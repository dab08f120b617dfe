"""Broker statistics: put/get rates per topic and group, totals, and request latency per code.

Counters are plain integers bumped on the event loop; :meth:`BrokerStats.tick` (called every
second by the broker) samples them so rates over 10 s, 60 s and 600 s are differences between
samples, the way RocketMQ's StoreStatsService computes its TPS. :meth:`BrokerStats.snapshot`
copies everything into frozen dataclasses that renderers (Prometheus text, runtime info) read
without touching live state.
"""

from __future__ import annotations

import bisect
import datetime as dt
import time
from collections import deque
from dataclasses import dataclass, field

from broker.protocol.codes import name_of

WINDOWS_SECONDS = (10, 60, 600)
LATENCY_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000)


@dataclass(frozen=True, slots=True)
class Rates:
    """Messages per second over the last 10 s, 60 s and 600 s."""

    tps10: float = 0.0
    tps60: float = 0.0
    tps600: float = 0.0

    def text(self) -> str:
        """RocketMQ's runtime-info form: three space-separated numbers."""
        return f"{self.tps10:.2f} {self.tps60:.2f} {self.tps600:.2f}"


@dataclass(frozen=True, slots=True)
class CounterSnapshot:
    key: str
    messages: int
    bytes: int
    rates: Rates


@dataclass(frozen=True, slots=True)
class LatencySnapshot:
    code: int
    name: str
    count: int
    sum_seconds: float
    buckets: tuple[tuple[float, int], ...]  # (upper bound in seconds, cumulative count); +inf last


@dataclass(frozen=True, slots=True)
class BrokerStatsSnapshot:
    boot_timestamp: int
    put: CounterSnapshot
    get: CounterSnapshot
    topics_put: tuple[CounterSnapshot, ...]  # key = topic
    groups_get: tuple[CounterSnapshot, ...]  # key = "topic@group"
    requests: tuple[LatencySnapshot, ...]
    put_total_yesterday_morning: int
    put_total_today_morning: int
    get_total_yesterday_morning: int
    get_total_today_morning: int


@dataclass(slots=True)
class _Counter:
    messages: int = 0
    bytes: int = 0
    samples: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=WINDOWS_SECONDS[-1] + 1))

    def add(self, messages: int, size: int) -> None:
        self.messages += messages
        self.bytes += size

    def sample(self, now: float) -> None:
        self.samples.append((now, self.messages))

    def rates(self, now: float) -> Rates:
        return Rates(*(self._rate(now, window) for window in WINDOWS_SECONDS))

    def _rate(self, now: float, window: int) -> float:
        """Messages per second since the newest sample at least ``window`` seconds old (or the oldest)."""
        if not self.samples:
            return 0.0
        base_t, base_n = self.samples[0]
        for t, n in reversed(self.samples):
            if now - t >= window:
                base_t, base_n = t, n
                break
        elapsed = now - base_t
        return (self.messages - base_n) / elapsed if elapsed > 0 else 0.0

    def snapshot(self, key: str, now: float) -> CounterSnapshot:
        return CounterSnapshot(key, self.messages, self.bytes, self.rates(now))


@dataclass(slots=True)
class _Latency:
    count: int = 0
    total: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_MS) + 1))

    def observe(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        self.buckets[bisect.bisect_left(LATENCY_BUCKETS_MS, seconds * 1000)] += 1

    def snapshot(self, code: int) -> LatencySnapshot:
        bounds = [ms / 1000 for ms in LATENCY_BUCKETS_MS] + [float("inf")]
        cumulative: list[tuple[float, int]] = []
        running = 0
        for bound, n in zip(bounds, self.buckets, strict=True):
            running += n
            cumulative.append((bound, running))
        return LatencySnapshot(code, name_of(code), self.count, self.total, tuple(cumulative))


class BrokerStats:
    def __init__(self) -> None:
        self.boot_timestamp = int(time.time() * 1000)
        self._put = _Counter()
        self._get = _Counter()
        self._topics: dict[str, _Counter] = {}
        self._groups: dict[str, _Counter] = {}
        self._latency: dict[int, _Latency] = {}
        self._day = dt.date.today()
        self._put_mornings = (0, 0)  # (yesterday, today)
        self._get_mornings = (0, 0)

    # These run per request: a counter is built only for a key seen the first time (``setdefault``
    # would build one, with its deque, on every call).
    def record_put(self, topic: str, messages: int, size: int) -> None:
        self._put.add(messages, size)
        counter = self._topics.get(topic)
        if counter is None:
            counter = self._topics[topic] = _Counter()
        counter.add(messages, size)

    def record_get(self, group: str, topic: str, messages: int, size: int) -> None:
        self._get.add(messages, size)
        key = f"{topic}@{group}"
        counter = self._groups.get(key)
        if counter is None:
            counter = self._groups[key] = _Counter()
        counter.add(messages, size)

    def record_latency(self, code: int, seconds: float) -> None:
        latency = self._latency.get(code)
        if latency is None:
            latency = self._latency[code] = _Latency()
        latency.observe(seconds)

    def forget_topic(self, topic: str) -> None:
        self._topics.pop(topic, None)
        for key in [k for k in self._groups if k.rpartition("@")[0] == topic]:
            del self._groups[key]

    def topic_put_rates(self, topic: str) -> Rates:
        counter = self._topics.get(topic)
        return counter.rates(time.monotonic()) if counter is not None else Rates()

    def group_get_rates(self, group: str, topic: str) -> Rates:
        counter = self._groups.get(f"{topic}@{group}")
        return counter.rates(time.monotonic()) if counter is not None else Rates()

    def tick(self) -> None:
        """Take this second's samples and roll the day totals at midnight."""
        now = time.monotonic()
        for counter in (self._put, self._get, *self._topics.values(), *self._groups.values()):
            counter.sample(now)
        today = dt.date.today()
        if today != self._day:
            self._day = today
            self._put_mornings = (self._put_mornings[1], self._put.messages)
            self._get_mornings = (self._get_mornings[1], self._get.messages)

    def snapshot(self) -> BrokerStatsSnapshot:
        now = time.monotonic()
        return BrokerStatsSnapshot(
            boot_timestamp=self.boot_timestamp,
            put=self._put.snapshot("", now),
            get=self._get.snapshot("", now),
            topics_put=tuple(c.snapshot(k, now) for k, c in sorted(self._topics.items())),
            groups_get=tuple(c.snapshot(k, now) for k, c in sorted(self._groups.items())),
            requests=tuple(lat.snapshot(code) for code, lat in sorted(self._latency.items())),
            put_total_yesterday_morning=self._put_mornings[0],
            put_total_today_morning=self._put_mornings[1],
            get_total_yesterday_morning=self._get_mornings[0],
            get_total_today_morning=self._get_mornings[1],
        )
