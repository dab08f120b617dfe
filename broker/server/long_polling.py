"""Held pulls (RocketMQ's PullRequestHoldService): a pull that found nothing new waits here until a
message for its queue is stored or its suspend time runs out, then the pull is executed again.

The send path calls :meth:`PullHoldService.notify` after each append, so a waiting consumer gets a
new message within one round trip instead of at its next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

TagFilter = Callable[[int], bool]


@dataclass(slots=True, eq=False)
class _Held:
    offset: int
    tag_filter: TagFilter | None
    woken: asyncio.Event = field(default_factory=asyncio.Event)


class PullHoldService:
    def __init__(self) -> None:
        self._held: dict[tuple[str, int], list[_Held]] = {}
        self._stopping = False

    async def hold(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        timeout: float,
        tag_filter: TagFilter | None,
        max_offset: Callable[[], Awaitable[int]],
    ) -> None:
        """Wait until a matching message past ``offset`` arrives, the timeout passes or we stop.

        ``max_offset`` is re-read once after registering, so a message stored between the pull's
        store lookup and this registration is not missed.
        """
        if self._stopping:
            return
        held = _Held(offset, tag_filter)
        key = (topic, queue_id)
        self._held.setdefault(key, []).append(held)
        try:
            if await max_offset() > offset:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(held.woken.wait(), timeout)
        finally:
            waiting = self._held.get(key)
            if waiting is not None:
                waiting.remove(held)
                if not waiting:
                    del self._held[key]

    def notify(self, topic: str, queue_id: int, max_offset: int, tags_codes: set[int] | None = None) -> None:
        """Messages up to ``max_offset`` (exclusive) are stored in the queue; wake matching pulls."""
        for held in self._held.get((topic, queue_id), ()):
            if max_offset <= held.offset:
                continue
            if held.tag_filter is None or tags_codes is None or any(map(held.tag_filter, tags_codes)):
                held.woken.set()

    def wake(self, topic: str, queue_id: int) -> None:
        """Answer the pulls held on the queue now, whatever arrived (its offsets were reset)."""
        for held in self._held.get((topic, queue_id), ()):
            held.woken.set()

    def stop(self) -> None:
        """Answer every held pull now (shutdown must not wait out their suspend times)."""
        self._stopping = True
        for waiting in self._held.values():
            for held in waiting:
                held.woken.set()

    @property
    def held_count(self) -> int:
        return sum(len(w) for w in self._held.values())
