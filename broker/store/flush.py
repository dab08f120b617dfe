"""Flushing: a periodic flush for ASYNC_FLUSH and group commit for SYNC_FLUSH.

Group commit: appenders register the offset they need on disk and wait on a future; one
flush releases every waiter at or below the flushed offset, so many appends share one msync.
All of it runs on this thread, never on an event loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future


class FlushService:
    def __init__(
        self,
        flush_commitlog: Callable[[], int],
        flush_rest: Callable[[], None],
        *,
        interval_ms: int,
        rest_interval_ms: int,
        name: str = "store-flush",
    ) -> None:
        self._flush_commitlog = flush_commitlog
        self._flush_rest = flush_rest
        self._interval = interval_ms / 1000
        self._rest_interval = rest_interval_ms / 1000
        self._cond = threading.Condition()
        self._waiters: list[tuple[int, Future[bool]]] = []
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.flushed_offset = 0

    def start(self) -> None:
        self._thread.start()

    def request(self, offset: int) -> Future[bool]:
        """A future that completes with True once ``offset`` is on disk."""
        fut: Future[bool] = Future()
        with self._cond:
            if offset <= self.flushed_offset:
                fut.set_result(True)
                return fut
            if self._stopped:
                fut.set_result(False)
                return fut
            self._waiters.append((offset, fut))
            self._cond.notify()
        return fut

    def _run(self) -> None:
        last_rest = time.monotonic()
        while True:
            with self._cond:
                if not self._waiters and not self._stopped:
                    self._cond.wait(self._interval)
                stopping = self._stopped
            self._flush_once()
            now = time.monotonic()
            if stopping or now - last_rest >= self._rest_interval:
                self._flush_rest()
                last_rest = now
            if stopping:
                return

    def _flush_once(self) -> None:
        flushed = self._flush_commitlog()
        with self._cond:
            self.flushed_offset = max(self.flushed_offset, flushed)
            ready = [w for w in self._waiters if w[0] <= self.flushed_offset]
            self._waiters = [w for w in self._waiters if w[0] > self.flushed_offset]
        for _offset, fut in ready:
            fut.set_result(True)

    def stop(self) -> None:
        """Flush everything one last time and release any waiter."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join()
        with self._cond:
            waiters, self._waiters = self._waiters, []
        for _offset, fut in waiters:
            fut.set_result(False)
