"""Slave side of replication (DefaultHAClient): connect to the master's HA port, report the
CommitLog max offset, append what the master streams and dispatch it like any append.

Reconcile: bytes that overlap what the slave already has are compared; at the first difference the
slave cuts its log back to the start of that record, and an empty frame below the slave's end
means the master's log ends there, so the slave cuts to it. Each cut is logged and counted in
:meth:`HAClient.status`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Protocol

from broker.protocol.ha import FRAME_HEADER, HAClientRuntimeInfo, pack_report, unpack_frame_header
from broker.server.config import BrokerConfig
from broker.server.ha.ha_service import ByteRate
from broker.server.long_polling import PullHoldService
from broker.server.store_access import StoreAccess
from broker.server.topic_config import TopicConfigManager
from broker.store.dispatch import DispatchRequest, in_consume_queue
from broker.store.message_store import MessageStore

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 3.0
RECONNECT_DELAY = 1.0
ASK_MASTER_DELAY = 3.0
_COMPARE_CHUNK = 4096


class HAClientParts(StoreAccess, Protocol):
    """The parts of the broker a slave's replication uses."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def holds(self) -> PullHoldService: ...


class Reconnect(Exception):
    """The stream cannot continue from here: connect again and report the new end."""


def first_difference(a: bytes, b: bytes) -> int:
    """Index of the first differing byte of two equally long byte strings, or -1."""
    if a == b:
        return -1
    for start in range(0, len(a), _COMPARE_CHUNK):
        x, y = a[start : start + _COMPARE_CHUNK], b[start : start + _COMPARE_CHUNK]
        if x != y:
            return start + next(i for i in range(len(x)) if x[i] != y[i])
    return -1


class HAClient:
    def __init__(self, broker: HAClientParts) -> None:
        self.broker = broker
        fixed = broker.config.ha_master_address.strip()
        self.master_ha_addr: str | None = fixed or None
        self.master_addr: str | None = None  # the master's remoting address (metadata sync)
        self.on_connected: Callable[[], None] = lambda: None
        self.on_new_topic: Callable[[], None] = lambda: None
        self.ask_master: Callable[[], None] = lambda: None  # re-register now to hear of a master
        self.identity = 0  # controller mode: the broker id told to the master before the first report
        self.connected = False
        self.last_read = 0.0
        self.last_write = 0.0
        self.truncated_bytes = 0
        self.last_truncate = ""
        self.rate = ByteRate()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failing = False

    # == life cycle ============================================================================
    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="ha-client")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self.connected = False

    def set_master(self, master_addr: str | None, ha_addr: str | None) -> None:
        """What the NameServer answered to our registration (nothing while the master is away)."""
        if master_addr:
            self.master_addr = master_addr
        if ha_addr and not self.broker.config.ha_master_address.strip() and ha_addr != self.master_ha_addr:
            log.info("master HA address is %s", ha_addr)
            self.master_ha_addr = ha_addr
            self._changed.set()

    @property
    def master_alive(self) -> bool:
        """Connected and heard from within the housekeeping interval."""
        idle = self.broker.config.ha_housekeeping_interval / 1000
        return self.connected and time.monotonic() - self.last_read < idle

    # == the session ===========================================================================
    async def _loop(self) -> None:
        while True:
            addr = self.master_ha_addr
            if addr is not None:
                try:
                    await self._session(addr)
                except (OSError, EOFError, TimeoutError, ValueError, Reconnect) as exc:
                    if not self._failing or isinstance(exc, Reconnect):
                        log.warning("replication from %s stopped: %s; reconnecting", addr, exc or type(exc))
                    self._failing = not isinstance(exc, Reconnect)
                finally:
                    self.connected = False
            else:
                self.ask_master()
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), RECONNECT_DELAY if addr else ASK_MASTER_DELAY)

    async def _session(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        config = self.broker.config
        tls = config.outbound_tls() if config.ha_tls_enable else None
        connecting = asyncio.open_connection(host, int(port), ssl=tls, server_hostname=host if tls else None)
        reader, writer = await asyncio.wait_for(connecting, CONNECT_TIMEOUT)
        heartbeat: asyncio.Task[None] | None = None
        try:
            if self.identity:
                writer.write(pack_report(-self.identity))
            await self._report(writer)
            self.connected = True
            self.last_read = time.monotonic()
            if self._failing:
                log.info("replicating from %s again", addr)
            self._failing = False
            self.on_connected()
            heartbeat = asyncio.create_task(self._heartbeat(writer))
            idle = self.broker.config.ha_housekeeping_interval / 1000
            while True:
                offset, size = unpack_frame_header(
                    await asyncio.wait_for(reader.readexactly(FRAME_HEADER.size), idle)
                )
                data = await asyncio.wait_for(reader.readexactly(size), idle) if size else b""
                self.last_read = time.monotonic()
                self.rate.add(size)
                dispatched = await self.broker.write(self._apply, offset, data)
                self._after_dispatch(dispatched)
                await self._report(writer)
        except asyncio.IncompleteReadError as exc:
            raise EOFError("the master closed the connection") from exc
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()

    async def _heartbeat(self, writer: asyncio.StreamWriter) -> None:
        while True:
            await asyncio.sleep(self.broker.config.ha_send_heartbeat_interval / 1000)
            await self._report(writer)

    async def _report(self, writer: asyncio.StreamWriter) -> None:
        writer.write(pack_report(self.broker.store.commitlog.max_offset))
        await writer.drain()
        self.last_write = time.monotonic()

    # == applying frames (store-writer thread) =================================================
    def _apply(self, offset: int, data: bytes) -> list[DispatchRequest]:
        store = self.broker.store
        local = store.commitlog.max_offset
        if offset > local:
            raise Reconnect(f"the master sent offset {offset} but this CommitLog ends at {local}")
        if not data:
            if offset < local:
                self._truncate(offset, f"the master's CommitLog ends at {offset}")
            return []
        below = store.commitlog.min_offset - offset  # bytes this slave no longer keeps: not compared
        if below > 0:
            offset, data = offset + below, data[below:]
        overlap = min(local, offset + len(data)) - offset
        if overlap > 0:
            mine = store.commitlog.read_raw(offset, overlap)
            at = first_difference(mine, data[: len(mine)]) if len(mine) == overlap else 0
            if at < 0:
                offset, data = offset + overlap, data[overlap:]
            else:
                cut = self._record_start(offset + at)
                self._truncate(cut, f"bytes differ from the master's at {offset + at}")
                if cut < offset:
                    raise Reconnect(f"diverged before this frame; continuing from {cut}")
                offset, data = cut, data[cut - offset :]
        return store.append_replicated(offset, data) if data else []

    def _record_start(self, position: int) -> int:
        """Start of the record holding ``position`` (records never span files)."""
        cl = self.broker.store.commitlog
        mf = cl.files.find(position)
        start = mf.file_from if mf is not None else cl.min_offset
        for file, pos, layout in cl.walk(start, check_body_crc=False):
            begin = file.file_from + pos
            if begin + layout.total_size > position:
                return begin
            start = begin + layout.total_size
        return min(start, position)

    def _truncate(self, offset: int, reason: str) -> None:
        cut = self.broker.store.truncate_replica(offset)
        self.truncated_bytes += cut
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self.last_truncate = f"{stamp} cut {cut} bytes at {offset}: {reason}"
        log.warning(
            "reconcile with master: CommitLog truncated to %d (%d bytes cut): %s", offset, cut, reason
        )

    def _after_dispatch(self, dispatched: list[DispatchRequest]) -> None:
        """Wake pulls held on the queues that grew; a topic we do not know asks for a metadata sync."""
        if not dispatched:
            return
        grown: dict[tuple[str, int], tuple[int, set[int]]] = {}
        for req in dispatched:
            if in_consume_queue(req.sys_flag):
                key = (req.topic, req.queue_id)
                codes = grown.get(key, (0, set()))[1]
                codes.add(req.tags_code)
                grown[key] = (req.queue_offset + 1, codes)
        for (topic, queue_id), (end, codes) in grown.items():
            self.broker.holds.notify(topic, queue_id, end, codes)
        topics = self.broker.topics
        if any(topics.get(topic) is None for topic, _ in grown):
            self.on_new_topic()

    def status(self) -> HAClientRuntimeInfo:
        now_ms = time.time() * 1000
        mono = time.monotonic()
        return HAClientRuntimeInfo(
            masterAddr=self.master_ha_addr or "",
            transferredByteInSecond=self.rate.per_second,
            maxOffset=self.broker.store.commitlog.max_offset,
            lastReadTimestamp=int(now_ms - (mono - self.last_read) * 1000) if self.last_read else 0,
            lastWriteTimestamp=int(now_ms - (mono - self.last_write) * 1000) if self.last_write else 0,
            isActivated=self.master_alive,
            truncatedBytes=self.truncated_bytes,
            lastTruncate=self.last_truncate,
        )
