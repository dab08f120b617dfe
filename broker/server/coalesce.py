"""Coalesced background work: at most one run in flight, and every request covered by a run that
started after it was made (so the latest state always goes out, and a burst of N requests costs
two runs, not N).

Used for whatever writes a whole table somewhere (the NameServer registration, the topic and group
files): the job reads the table when it starts, so a run that begins after a change includes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class Coalesced:
    def __init__(self, job: Callable[[], Awaitable[None]], name: str) -> None:
        self._job = job
        self._name = name
        self._asked = 0  # requests made so far
        self._covered = 0  # requests covered by a finished run
        self._running: asyncio.Task[None] | None = None
        self._background: asyncio.Task[None] | None = None

    @property
    def pending(self) -> bool:
        return self._covered < self._asked

    def request(self) -> None:
        """Ask for a run without waiting for it (from synchronous code on the event loop)."""
        self._asked += 1
        if self._background is None or self._background.done():
            self._background = asyncio.get_running_loop().create_task(self._settle(), name=self._name)

    async def run(self) -> None:
        """Ask for a run and wait until one that started after this call has finished; a failing
        job raises to its waiters (and is tried again by the next request)."""
        self._asked += 1
        await self._until(self._asked)

    async def settle(self) -> None:
        """Wait until every request made so far is covered (used at shutdown)."""
        await self._until(self._asked)

    async def _settle(self) -> None:
        try:
            # requests made while a run is in flight find this task alive and start none of their
            # own: chase them until none is left uncovered
            while self.pending:
                await self._until(self._asked)
        except Exception:  # logged here; waiters of run() see their own error
            log.exception("%s failed", self._name)

    async def _until(self, wanted: int) -> None:
        while self._covered < wanted:
            if self._running is None:
                self._running = asyncio.get_running_loop().create_task(self._one(), name=self._name)
            await asyncio.shield(self._running)

    async def _one(self) -> None:
        target = self._asked  # what the table holds now is what this run writes
        try:
            await self._job()
            self._covered = max(self._covered, target)
        finally:
            self._running = None
