"""Counting a benchmark run: messages, bytes, errors and per-request latency, per second and in total."""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Latency:
    """Request latency percentiles in milliseconds (a batch or a pull is one request)."""

    p50: float
    p99: float
    p999: float
    max: float

    @staticmethod
    def of(samples_us: array[int]) -> Latency:
        if not samples_us:
            return Latency(0.0, 0.0, 0.0, 0.0)
        ordered = sorted(samples_us)
        n = len(ordered)

        def at(q: float) -> float:
            return round(ordered[min(n - 1, int(q * n))] / 1000, 3)

        return Latency(at(0.5), at(0.99), at(0.999), round(ordered[-1] / 1000, 3))


@dataclass(frozen=True, slots=True)
class Rates:
    """Throughput and latency over a span of ``seconds``."""

    seconds: float
    messages: int
    bytes: int
    requests: int
    errors: int
    msgs_per_sec: float
    mb_per_sec: float
    latency_ms: Latency


class Recorder:
    """Collects samples from every worker (one event loop, so no locks) and reports rates."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first_error: str | None = None
        self._lat_us = array("q")
        self._messages = self._bytes = self._errors = 0
        self._mark = (self.started, 0, 0, 0, 0)  # time, samples, messages, bytes, errors at last tick

    def add(self, messages: int, nbytes: int, latency_ns: int) -> None:
        self._lat_us.append(latency_ns // 1000)
        self._messages += messages
        self._bytes += nbytes

    def fail(self, error: str) -> None:
        self._errors += 1
        if self.first_error is None:
            self.first_error = error

    @property
    def messages(self) -> int:
        return self._messages

    def tick(self) -> Rates:
        """The rates since the previous tick."""
        now = time.perf_counter()
        t0, n0, m0, b0, e0 = self._mark
        self._mark = (now, len(self._lat_us), self._messages, self._bytes, self._errors)
        return self._rates(
            now - t0, self._lat_us[n0:], self._messages - m0, self._bytes - b0, self._errors - e0
        )

    def total(self) -> Rates:
        """The rates over the whole run so far."""
        elapsed = time.perf_counter() - self.started
        return self._rates(elapsed, self._lat_us, self._messages, self._bytes, self._errors)

    @staticmethod
    def _rates(seconds: float, lat: array[int], messages: int, nbytes: int, errors: int) -> Rates:
        span = max(seconds, 1e-9)
        return Rates(
            seconds=round(seconds, 3),
            messages=messages,
            bytes=nbytes,
            requests=len(lat),
            errors=errors,
            msgs_per_sec=round(messages / span, 1),
            mb_per_sec=round(nbytes / span / 1e6, 2),
            latency_ms=Latency.of(lat),
        )
