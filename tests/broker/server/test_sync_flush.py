"""SYNC_FLUSH answers: each waits for the disk, the answers of a loop turn share one flush request,
and a flush slower than syncFlushTimeout is answered FLUSH_DISK_TIMEOUT."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from concurrent.futures import Future
from contextlib import asynccontextmanager
from pathlib import Path

from broker.protocol.codes import ResponseCode
from broker.server.write_bursts import FlushWaits
from broker.store.flush import FlushService
from tests.broker.server.conftest import async_test, pull, records, running_broker, send


class _Disk:
    """A flush thread whose CommitLog flush reports ``written`` and can be held shut."""

    def __init__(self) -> None:
        self.written = 0
        self.open = threading.Event()
        self.open.set()
        self.service = FlushService(self._flush, lambda: None, interval_ms=10_000, rest_interval_ms=10_000)
        self.asked: list[int] = []

    def _flush(self) -> int:
        self.open.wait()
        return self.written

    def request(self, offset: int) -> Future[bool]:
        self.asked.append(offset)
        return self.service.request(offset)


@asynccontextmanager
async def _flushing() -> AsyncIterator[tuple[_Disk, FlushWaits]]:
    disk = _Disk()
    disk.service.start()
    try:
        yield disk, FlushWaits(disk.request)
    finally:
        disk.open.set()
        await asyncio.to_thread(disk.service.stop)


@async_test
async def test_the_waits_of_one_loop_turn_share_one_flush() -> None:
    async with _flushing() as (disk, waits):
        disk.written = 3000
        results = await asyncio.gather(*(waits.wait(offset, 5) for offset in range(100, 3001, 100)))
        assert results == [True] * 30
        assert disk.asked == [3000]  # one request, for the furthest offset
        assert await waits.wait(2500, 5) is True and disk.asked == [3000]  # already on disk: no request


@async_test
async def test_a_stalled_flush_times_out_and_later_waits_succeed() -> None:
    async with _flushing() as (disk, waits):
        disk.open.clear()
        disk.written = 500
        assert await waits.wait(500, 0.05) is False
        disk.open.set()
        disk.written = 900
        assert await waits.wait(900, 5) is True


@async_test
async def test_stopping_the_flush_thread_releases_every_waiter() -> None:
    async with _flushing() as (disk, waits):
        disk.open.clear()
        pending = asyncio.ensure_future(waits.wait(700, 30))
        await asyncio.sleep(0.02)
        stopping = asyncio.ensure_future(asyncio.to_thread(disk.service.stop))
        disk.open.set()  # the last flush reports only what was written: 0
        await stopping
        assert await pending is False


@async_test
async def test_sync_flush_sends_are_answered_once_on_disk(tmp_path: Path) -> None:
    async with running_broker(tmp_path, store_settings={"flush_disk_type": "SYNC_FLUSH"}) as (broker, client):
        bodies = [b"m%d" % i for i in range(40)]
        answers = await asyncio.gather(
            *(send(client, broker, "Durable", body, queue_id=0) for body in bodies)
        )
        assert {a.code for a in answers} == {ResponseCode.SUCCESS}
        by_offset = {int(a.ext_fields["queueOffset"]): body for a, body in zip(answers, bodies, strict=True)}
        assert sorted(by_offset) == list(range(40))
        assert broker.store.flushed(broker.store.commitlog.max_offset).done()  # nothing left to flush
        got = records(await pull(client, broker, "Durable", 0, 0))
        assert [r.body for r in got] == [by_offset[i] for i in range(len(got))] and got
