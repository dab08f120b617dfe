"""The messages pulled from one queue and not yet consumed (Java's ProcessQueue).

The committed offset of a queue is the smallest offset still cached here, or one past the largest
ever cached when nothing is left, so a message is never acknowledged before everything below it is.
"""

from __future__ import annotations

import asyncio
import bisect
import time

from broker.client.message import MessageExt
from broker.protocol.running_info import ProcessQueueInfo

LOCK_MAX_LIVE = 30.0  # seconds a broker lock is trusted without renewal (Java's client default)
MIB = 1024 * 1024


def now_ms() -> int:
    return int(time.time() * 1000)


class ProcessQueue:
    def __init__(self) -> None:
        self._msgs: dict[int, MessageExt] = {}
        self._offsets: list[int] = []
        self._taken: dict[int, MessageExt] = {}  # orderly: handed to the listener, not yet committed
        self.size_bytes = 0
        self.max_offset = -1
        self.dropped = False
        self.locked = False
        self.last_lock_time = 0.0
        self.consuming = False  # orderly: a consume task is running for this queue
        self.consume_lock = asyncio.Lock()
        self.last_pull_ms = 0  # epoch ms the last pull was sent
        self.last_consume_ms = 0  # epoch ms messages were last consumed (or polled)

    @property
    def count(self) -> int:
        return len(self._msgs) + len(self._taken)

    @property
    def span(self) -> int:
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    @property
    def lock_expired(self) -> bool:
        return time.monotonic() - self.last_lock_time > LOCK_MAX_LIVE

    def mark_locked(self, locked: bool) -> None:
        self.locked = locked
        if locked:
            self.last_lock_time = time.monotonic()

    def info(self, commit_offset: int) -> ProcessQueueInfo:
        """What GET_CONSUMER_RUNNING_INFO reports of this queue (Java's fillProcessQueueInfo)."""
        taken = sorted(self._taken)
        lock_ms = int((time.time() - (time.monotonic() - self.last_lock_time)) * 1000)
        return ProcessQueueInfo(
            commitOffset=commit_offset,
            cachedMsgMinOffset=self._offsets[0] if self._offsets else 0,
            cachedMsgMaxOffset=self._offsets[-1] if self._offsets else 0,
            cachedMsgCount=len(self._offsets),
            cachedMsgSizeInMiB=self.size_bytes // MIB,
            transactionMsgMinOffset=taken[0] if taken else 0,
            transactionMsgMaxOffset=taken[-1] if taken else 0,
            transactionMsgCount=len(taken),
            locked=self.locked,
            lastLockTimestamp=lock_ms if self.last_lock_time else 0,
            droped=self.dropped,
            lastPullTimestamp=self.last_pull_ms,
            lastConsumeTimestamp=self.last_consume_ms,
        )

    def put(self, msgs: list[MessageExt]) -> bool:
        """Cache pulled messages; True when an orderly consume task should be started for them."""
        for msg in msgs:
            if msg.queue_offset not in self._msgs:
                self._msgs[msg.queue_offset] = msg
                bisect.insort(self._offsets, msg.queue_offset)
                self.size_bytes += len(msg.body)
            self.max_offset = max(self.max_offset, msg.queue_offset)
        if self._msgs and not self.consuming:
            self.consuming = True
            return True
        return False

    def remove(self, msgs: list[MessageExt]) -> int:
        """Forget consumed messages; the offset to commit, or -1 when nothing was cached."""
        if not self._msgs:
            return -1
        self.last_consume_ms = now_ms()
        for msg in msgs:
            if self._msgs.pop(msg.queue_offset, None) is not None:
                del self._offsets[bisect.bisect_left(self._offsets, msg.queue_offset)]
                self.size_bytes -= len(msg.body)
        return self._offsets[0] if self._offsets else self.max_offset + 1

    def take(self, n: int) -> list[MessageExt]:
        """Orderly: the next ``n`` messages in offset order; empty (and not consuming) when none is left."""
        taken = []
        for offset in self._offsets[:n]:
            msg = self._msgs.pop(offset)
            self._taken[offset] = msg
            taken.append(msg)
        del self._offsets[: len(taken)]
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        """Orderly: the taken messages are done; the offset to commit (-1 if nothing was taken)."""
        if not self._taken:
            return -1
        self.last_consume_ms = now_ms()
        offset = max(self._taken) + 1
        for msg in self._taken.values():
            self.size_bytes -= len(msg.body)
        self._taken.clear()
        return offset

    def give_back(self, msgs: list[MessageExt]) -> None:
        """Orderly: the listener asked to suspend; the messages go back to be consumed again first."""
        for msg in msgs:
            if self._taken.pop(msg.queue_offset, None) is not None:
                self._msgs[msg.queue_offset] = msg
                bisect.insort(self._offsets, msg.queue_offset)
