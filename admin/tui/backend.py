"""The admin service on a thread and event loop of its own.

Decoding the brokers' answers about 1,000 topics or 200 groups is pure Python; on the app's event
loop it would hold every key press for a tenth of a second at a time. On its own thread it only
shares the GIL, which the interpreter hands over every few milliseconds, so keys are handled while
a refresh runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from admin.service import AdminService

T = TypeVar("T")
Job = Callable[["AdminService"], Awaitable[T]]


class ServiceThread:
    """Runs jobs against one admin service, built by ``connect`` on the thread's loop at first use."""

    def __init__(self, connect: Callable[[], AdminService]) -> None:
        self._connect = connect
        self._service: AdminService | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="admin-service", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def call(self, job: Job[T]) -> T:
        """``await job(service)`` on the service's loop; cancelling the caller cancels the job."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._run(job), self._loop))

    async def _run(self, job: Job[T]) -> T:
        if self._service is None:
            self._service = self._connect()
        return await job(self._service)

    async def close(self) -> None:
        """Close the service (if it was built) and end the thread."""

        async def shut() -> None:
            if self._service is not None:
                await self._service.close()

        try:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(shut(), self._loop))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            await asyncio.to_thread(self._thread.join)
