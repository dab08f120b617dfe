"""Consumer offsets: on the brokers (clustering) or in a local JSON file (broadcasting).

Offsets mean "next message to consume". Reads answer -1 when nothing is stored and -2 when the store
could not be asked.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Protocol

from broker.client.api import ClientAPI
from broker.client.message import MQClientError
from broker.protocol.bodies import MessageQueue
from broker.remoting.errors import RemotingError

log = logging.getLogger(__name__)

NOT_FOUND = -1
READ_FAILED = -2
DEFAULT_OFFSET_DIR = Path("~/.rmqkit/offsets")


class OffsetStore(Protocol):
    def update(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None: ...

    def read_memory(self, mq: MessageQueue) -> int: ...

    async def read_store(self, mq: MessageQueue) -> int: ...

    async def persist(self, mqs: Iterable[MessageQueue]) -> None: ...

    def remove(self, mq: MessageQueue) -> None: ...


class _MemoryTable:
    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None:
        if increase_only and offset <= self.table.get(mq, -1):
            return
        self.table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        return self.table.get(mq, NOT_FOUND)

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)


class RemoteBrokerOffsetStore(_MemoryTable):
    """The group's offsets live on the master of each queue's broker."""

    def __init__(
        self, api: ClientAPI, group: str, broker_addr: Callable[[MessageQueue], Awaitable[str]]
    ) -> None:
        super().__init__()
        self._api = api
        self._group = group
        self._addr = broker_addr

    async def read_store(self, mq: MessageQueue) -> int:
        try:
            offset = await self._api.query_consumer_offset(await self._addr(mq), self._group, mq)
        except (MQClientError, RemotingError) as exc:
            log.warning("cannot read the offset of %s: %s", mq, exc)
            return READ_FAILED
        if offset is None:
            return NOT_FOUND
        self.update(mq, offset)
        return offset

    async def persist(self, mqs: Iterable[MessageQueue]) -> None:
        """Commit the offsets of ``mqs`` (one-way UPDATE_CONSUMER_OFFSET each)."""
        for mq in mqs:
            offset = self.table.get(mq)
            if offset is None or offset < 0:
                continue
            try:
                await self._api.update_consumer_offset(await self._addr(mq), self._group, mq, offset)
            except (MQClientError, RemotingError) as exc:
                log.warning("cannot commit offset %d of %s: %s", offset, mq, exc)


class LocalFileOffsetStore(_MemoryTable):
    """Broadcasting: every consumer keeps its own offsets in ``<dir>/<client id>/<group>.json``."""

    def __init__(self, client_id: str, group: str, directory: Path = DEFAULT_OFFSET_DIR) -> None:
        super().__init__()
        self.path = directory.expanduser() / client_id / f"{group}.json"
        self._load()

    def _load(self) -> None:
        try:
            entries = json.loads(self.path.read_text("utf-8"))["offsetTable"]
            for e in entries:
                self.table[MessageQueue(e["topic"], e["brokerName"], int(e["queueId"]))] = int(e["offset"])
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MQClientError(f"offset file {self.path} is unreadable: {exc}") from exc

    async def read_store(self, mq: MessageQueue) -> int:
        return self.read_memory(mq)

    def remove(self, mq: MessageQueue) -> None:
        """Kept: the file is this consumer's own, nobody else moves its offsets."""

    async def persist(self, mqs: Iterable[MessageQueue]) -> None:
        """Write the whole table atomically (the queues given are all in it anyway)."""
        entries = [
            {"topic": mq.topic, "brokerName": mq.brokerName, "queueId": mq.queueId, "offset": offset}
            for mq, offset in sorted(self.table.items())
        ]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"offsetTable": entries}, indent=2), "utf-8")
        os.replace(tmp, self.path)
