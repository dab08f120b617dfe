"""The broker's writes, run in order one burst at a time on the store-writer thread; and under
SYNC_FLUSH, the answers' waits for the disk.

Writes go in bursts: those asked for in one loop turn (a socket read often holds dozens of sends),
and while a burst runs, every write asked for meanwhile, which then goes as the next burst. One hop
and one GIL hand-over per burst instead of per request, and the busier the writer, the bigger its
bursts. Every send awaits :meth:`WriteBursts.write`, so this module is compiled by ``make install``.

With ``appendOnEventLoop`` (the default) a burst of message appends runs right on the event loop at
the end of its turn instead (any other burst still goes to the thread, and bursts never overlap, so
the store keeps one writer at a time). With one GIL the thread gives appends no parallelism, only
hand-overs, and those cost most when bursts are small (docs/benchmarks.md has the figures). The
price: an append stalled in the kernel (page-cache pressure, a slow disk) stalls every connection,
where the thread leaves the loop free to turn new sends away ([PC_SYNCHRONIZED]). So a burst on the
loop that takes ``STALL_S`` or more sends the appends to the thread for the next ``stall_hold_s``
seconds, renewed by every slow burst there: the first stall of a bad spell freezes the loop once,
the rest of the spell is handled as with the setting off.

A SYNC_FLUSH answer waits on the loop in :class:`FlushWaits`: the answers of one loop turn ask the
store's flush thread once, for the furthest of their offsets, and one flush releases every answer it
covers. A thread-side future per answer, with its wrapping and its ``wait_for``, cost several times
the answer itself.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import Any, TypeVar

from broker.server.messaging.send import SendAppends

log = logging.getLogger(__name__)

_Call = tuple[Callable[..., Any], tuple[Any, ...]]
_Outcome = tuple[bool, Any]
T = TypeVar("T")
STALL_S = 0.1  # a burst of appends this slow was held up in the kernel, not by its own size
STALL_HOLD_S = 60.0  # how long appends then stay on the writer thread


class WriteBursts:
    """``on_written`` runs after every burst (the broker wakes its slaves' replication there).

    The writer is a plain thread fed by a queue, and hands each burst's outcomes back with one
    ``call_soon_threadsafe``: an executor's future, its chaining to the loop and its checks were a
    dozen interpreted calls per burst."""

    def __init__(self, on_written: Callable[[], None], appends_on_loop: Callable[[], bool]) -> None:
        self._on_written = on_written
        self._appends_on_loop = appends_on_loop  # read per burst: the setting changes at runtime
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: SimpleQueue[list[_Call] | None] = SimpleQueue()
        self._writer: threading.Thread | None = None
        self._burst: list[tuple[Callable[..., Any], tuple[Any, ...], asyncio.Future[Any]]] = []
        self._in_flight: list[asyncio.Future[Any]] = []  # the burst on the writer thread, if any
        self.pending = 0  # writes waiting for (or in) the writer thread
        self.stall_hold_s = STALL_HOLD_S
        self.stalled_until = 0.0  # monotonic: appends go to the writer thread until then

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._writer = threading.Thread(target=self._run, name="store-write", daemon=True)
        self._writer.start()

    def shutdown(self) -> None:
        """Stop the writer once the writes queued before have run."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join()
            self._writer = None

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the writer thread (on the loop for message appends, :class:`SendAppends`,
        when ``appends_on_loop()`` and no append stalled lately), in order with every other write."""
        assert self._loop is not None, "the broker is not started"
        future: asyncio.Future[T] = self._loop.create_future()
        if not self._burst and not self._in_flight:
            self._loop.call_soon(self._submit)
        self._burst.append((fn, args, future))
        self.pending += 1
        try:
            return await future
        finally:
            self.pending -= 1

    def _submit(self) -> None:
        burst = [item for item in self._burst if not item[2].cancelled()]
        self._burst = []
        if not burst:
            return
        futures = [future for _, _, future in burst]
        if self._writer is None:  # stopped meanwhile
            for future in futures:
                future.set_exception(RuntimeError("the broker is stopped"))
            return
        self._in_flight = futures
        calls = [(fn, args) for fn, args, _ in burst]
        if self.appends_on_loop_now() and all(isinstance(fn, SendAppends) for fn, _ in calls):
            started = time.monotonic()
            outcomes = run_guarded(calls)
            self._burst_done(outcomes, time.monotonic() - started)
        else:
            self._queue.put(calls)

    def appends_on_loop_now(self) -> bool:
        """Whether message appends run on the event loop: the setting is on and none stalled lately."""
        return self._appends_on_loop() and time.monotonic() >= self.stalled_until

    def _run(self) -> None:
        """The writer thread."""
        loop = self._loop
        assert loop is not None
        while (calls := self._queue.get()) is not None:
            started = time.monotonic()
            outcomes = run_guarded(calls)
            took = time.monotonic() - started if all(isinstance(fn, SendAppends) for fn, _ in calls) else 0.0
            try:
                loop.call_soon_threadsafe(self._burst_done, outcomes, took)
            except RuntimeError:  # the loop is closed: nobody waits for these answers
                return

    def _burst_done(self, outcomes: list[_Outcome], appends_took: float) -> None:
        """``appends_took``: how long the burst ran, when it was message appends only."""
        if appends_took >= STALL_S:
            self._stalled(appends_took)
        futures, self._in_flight = self._in_flight, []
        for future, (ok, value) in zip(futures, outcomes, strict=True):
            if future.done():  # its waiter was cancelled; the write itself happened
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        self._on_written()
        self._submit()  # what gathered while this burst ran

    def _stalled(self, took: float) -> None:
        now = time.monotonic()
        if now >= self.stalled_until and self._appends_on_loop():
            log.warning(
                "a burst of message appends took %.0f ms: appends run on the store-writer thread for "
                "the next %.0f s (appendOnEventLoop)", took * 1000, self.stall_hold_s,
            )  # fmt: skip
        self.stalled_until = now + self.stall_hold_s


def run_guarded(calls: list[_Call]) -> list[_Outcome]:
    """``run_each``, with anything beyond an Exception (which it keeps per call) failing them all."""
    try:
        return run_each(calls)
    except BaseException as exc:
        return [(False, exc)] * len(calls)


def run_each(calls: list[_Call]) -> list[_Outcome]:
    """Each call's result, or its exception, without stopping at a failure.
    Consecutive sends' appends run as one (``SendAppends.run_all``)."""
    outcomes: list[_Outcome] = []
    i = 0
    while i < len(calls):
        fn, args = calls[i]
        if isinstance(fn, SendAppends):
            j = i + 1
            while j < len(calls) and calls[j][0] is fn:
                j += 1
            try:
                outcomes += [(True, result) for result in fn.run_all([a for _, a in calls[i:j]])]
            except Exception as exc:  # every append of the group gets it
                outcomes += [(False, exc)] * (j - i)
            i = j
            continue
        try:
            outcomes.append((True, fn(*args)))
        except Exception as exc:  # handed to that call's waiter, as run_in_executor would
            outcomes.append((False, exc))
        i += 1
    return outcomes


class OffsetWaits:
    """Answers waiting for a position (the disk's, a slave's) to reach their offsets: released in
    offset order by :meth:`release`, or answered False once their timeout passes."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._seq = itertools.count()

    async def wait(self, offset: int, timeout: float) -> bool:
        """What :meth:`release` says of ``offset``; False after ``timeout`` seconds. A timer each,
        cheaper than a ``wait_for`` per answer."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        heapq.heappush(self._heap, (offset, next(self._seq), future))
        expiry = loop.call_later(timeout, _time_out, future)
        try:
            return await future
        finally:
            expiry.cancel()

    def release(self, offset: int, ok: bool) -> None:
        """Answer ``ok`` to every wait for ``offset`` or less."""
        heap = self._heap
        while heap and heap[0][0] <= offset:
            future = heapq.heappop(heap)[2]
            if not future.done():
                future.set_result(ok)

    def cancel_all(self) -> None:
        for _offset, _seq, future in self._heap:
            future.cancel()
        self._heap = []


def _time_out(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)


class FlushWaits:
    """``request_flush(offset)`` asks the store for ``offset`` on disk and returns a future of
    whether it got there (``MessageStore.flushed``); its callbacks run on the flush thread."""

    def __init__(self, request_flush: Callable[[int], Future[bool]]) -> None:
        self._request_flush = request_flush
        self._waits = OffsetWaits()
        self._flushed = 0  # known on disk
        self._wanted = 0  # the furthest offset asked for in this loop turn, not yet requested
        self._requested = 0  # the furthest offset requested of the flush thread

    async def wait(self, end_offset: int, timeout: float) -> bool:
        """True once ``end_offset`` is on disk; False when that takes longer than ``timeout``
        seconds or the store stopped first."""
        if end_offset <= self._flushed:
            return True
        if end_offset > self._requested:
            if not self._wanted:
                asyncio.get_running_loop().call_soon(self._request)
            self._wanted = max(self._wanted, end_offset)
        return await self._waits.wait(end_offset, timeout)

    def _request(self) -> None:
        offset, self._wanted = self._wanted, 0
        if offset <= self._requested:
            return
        self._requested = offset
        loop = asyncio.get_running_loop()
        self._request_flush(offset).add_done_callback(
            lambda done: loop.call_soon_threadsafe(self._release, offset, done.result())
        )

    def _release(self, offset: int, ok: bool) -> None:
        if ok:
            self._flushed = max(self._flushed, offset)
        self._waits.release(offset, ok)
