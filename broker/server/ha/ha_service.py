"""Master side of replication: DefaultHAService, HAConnection and GroupTransferService in one place.

Each slave connection reads 8-byte offset reports and streams CommitLog bytes from where the
slave stands (after resending a verification window, so a diverged slave can notice and cut its
log). A SYNC_MASTER send waits in :meth:`HAService.wait_slave` until a slave reports its bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Protocol

from broker.acl.addresses import host_of
from broker.protocol.ha import (
    REPORT,
    HAConnectionRuntimeInfo,
    HARuntimeInfo,
    pack_frame_header,
)
from broker.server.config import BrokerConfig
from broker.server.ha.slave_access import SlaveAccess
from broker.server.write_bursts import OffsetWaits
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutResult, PutStatus

log = logging.getLogger(__name__)


class HAParts(Protocol):
    """The parts of the broker a master's HA service uses."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def store(self) -> MessageStore: ...


class ByteRate:
    """Bytes per second over the last full second."""

    def __init__(self) -> None:
        self.second = int(time.monotonic())
        self.current = 0
        self.last = 0

    def add(self, n: int) -> None:
        now = int(time.monotonic())
        if now != self.second:
            self.last = self.current if now == self.second + 1 else 0
            self.second, self.current = now, 0
        self.current += n

    @property
    def per_second(self) -> int:
        return self.last if int(time.monotonic()) <= self.second + 1 else 0


class HAConnection:
    """One slave: its reports in, CommitLog frames out."""

    def __init__(
        self, service: HAService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.service = service
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.reported = -1  # the slave's last reported max offset
        self.broker_id = 0  # controller mode: the replica's controller-assigned id (0: not told)
        self.caught_up_at = time.monotonic()  # when its acks last reached the master's end
        self.sent_end = -1  # where the bytes sent on this connection end (transferFromWhere)
        self.wake = asyncio.Event()
        self.rate = ByteRate()
        self._first_report = asyncio.Event()

    @property
    def ack(self) -> int:
        """Bytes the slave holds and that match ours: what it reported, up to what we sent it."""
        return min(self.reported, self.sent_end) if self.sent_end >= 0 else -1

    async def run(self) -> None:
        tasks = [asyncio.create_task(self._read_reports()), asyncio.create_task(self._transfer())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.info("HA connection %s closed: %s", self.addr, task.exception())
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await self.writer.wait_closed()

    async def _read_reports(self) -> None:
        idle = self.service.broker.config.ha_housekeeping_interval / 1000
        while True:
            data = await asyncio.wait_for(self.reader.readexactly(REPORT.size), idle)
            reported = REPORT.unpack(data)[0]
            if reported < 0:  # controller mode: the replica says which broker id it is first
                self.broker_id = -reported
                continue
            self.reported = reported
            if self.ack >= self.service.broker.store.commitlog.max_offset:
                self.caught_up_at = time.monotonic()
            self._first_report.set()
            self.service.on_ack(self.ack)

    async def _transfer(self) -> None:
        await self._first_report.wait()
        cfg = self.service.broker.config
        cl = self.service.broker.store.commitlog
        top = cl.max_offset
        if self.reported <= 0:
            nxt = cl.min_offset
        else:
            nxt = max(cl.min_offset, min(self.reported, top) - cfg.ha_verify_window_bytes)
        log.info("slave %s reports %d; sending from %d (master at %d)", self.addr, self.reported, nxt, top)
        told_end = -1
        heartbeat = cfg.ha_send_heartbeat_interval / 1000
        while True:
            self.wake.clear()
            top = cl.max_offset
            if nxt < top:
                data = cl.read_raw(nxt, cfg.ha_transfer_batch_size)
                if not data:  # the file went away (retention): continue from what is left
                    nxt = max(nxt, cl.min_offset)
                    await asyncio.sleep(0.1)
                    continue
                await self._send(nxt, data)
                nxt += len(data)
                self.sent_end = nxt
                self.service.on_ack(self.ack)
                continue
            self.sent_end = nxt
            if self.reported > nxt and told_end != nxt:  # the slave has more than us: say where we end
                told_end = nxt
                await self._send(nxt, b"")
                continue
            try:
                await asyncio.wait_for(self.wake.wait(), heartbeat)
            except TimeoutError:
                await self._send(nxt, b"")

    async def _send(self, offset: int, data: bytes) -> None:
        self.writer.write(pack_frame_header(offset, len(data)))
        if data:
            self.writer.write(data)
            self.rate.add(len(data))
        await self.writer.drain()


class HAService:
    """The HA port of a master, its slave connections and the SYNC_MASTER waiters."""

    def __init__(self, broker: HAParts) -> None:
        self.broker = broker
        self.connections: set[HAConnection] = set()
        self.acked = 0  # push2SlaveMaxOffset: the most any slave is known to hold
        self._server: asyncio.Server | None = None
        self._waiters = OffsetWaits()  # SYNC_MASTER answers waiting for a slave's ack
        self._tasks: set[asyncio.Task[None]] = set()
        self.access = SlaveAccess(broker.config)
        self.verified_peers = False  # haTlsEnable with tlsClientAuth=require (set by start)
        # controller mode: the replicas (ids) that must hold a message before its send is answered
        # (allAckInSyncStateSet); None: the classic rule, any one slave
        self.sync_members: set[int] | None = None

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            return 0
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        """Listen on haListenPort (0 = any free port, written back to the configuration)."""
        cfg = self.broker.config
        server_tls = cfg.server_tls() if cfg.ha_tls_enable else None
        self.verified_peers = server_tls is not None and server_tls.client_auth == "require"
        ssl = server_tls.context() if server_tls is not None else None
        self._server = await asyncio.start_server(self._accept, cfg.listen_host, cfg.ha_listen_port, ssl=ssl)
        cfg.ha_listen_port = self.port
        log.info("HA service of %s listening on port %d", cfg.broker_name, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._waiters.cancel_all()
        await self.access.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = HAConnection(self, reader, writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        # mutual TLS: the handshake has verified the slave's certificate, whatever host it comes from
        if not self.verified_peers and not await self.access.allows(host_of(conn.addr)):
            log.warning(
                "HA connection from %s closed: neither a registered slave of %s nor on "
                "brokerWhiteRemoteAddresses",
                conn.addr, self.broker.config.broker_name,
            )  # fmt: skip
            writer.close()
            if task is not None:
                self._tasks.discard(task)
            return
        log.info("slave connected to the HA port from %s", conn.addr)
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            if task is not None:
                self._tasks.discard(task)
            log.info("slave %s disconnected from the HA port", conn.addr)

    def wake(self) -> None:
        """New CommitLog bytes: every connection sends them now."""
        for conn in self.connections:
            conn.wake.set()

    def on_ack(self, offset: int) -> None:
        if self.sync_members is not None:
            self._waiters.release(self.confirmed(), True)
            return
        if offset <= self.acked:
            return
        self.acked = offset
        self._waiters.release(offset, True)

    def confirmed(self) -> int:
        """Controller mode: what every SyncStateSet replica holds (-1 while one is not connected)."""
        members = self.sync_members or set()
        acks = {c.broker_id: c.ack for c in self.connections if c.broker_id in members}
        if len(acks) < len(members):
            return -1
        return min(acks.values(), default=self.broker.store.commitlog.max_offset)

    def set_sync_members(self, members: set[int] | None) -> None:
        """A new SyncStateSet (without the master): waiting sends re-check against it."""
        self.sync_members = members
        if members is not None:
            self._waiters.release(self.confirmed(), True)

    def slave_ok(self, end: int) -> bool:
        """A slave is connected and not too far behind (HAService.isSlaveOK)."""
        gap = self.broker.config.ha_max_gap_not_in_sync
        return any(c.ack >= 0 and end - c.ack < gap for c in self.connections)

    async def wait_slave(self, result: PutResult) -> None:
        """SYNC_MASTER: hold the answer until a slave has the bytes (GroupTransferService)."""
        end = result.offsets[-1] + result.sizes[-1]
        if self.sync_members is not None:
            if not self.sync_members or self.confirmed() >= end:
                return
        elif not self.slave_ok(end):
            result.status = PutStatus.SLAVE_NOT_AVAILABLE
            result.remark = "no slave in sync to replicate to"
            return
        elif self.acked >= end:
            return
        self.wake()
        timeout_ms = self.broker.store_config.sync_flush_timeout_ms
        acked = await self._waiters.wait(end, timeout_ms / 1000)
        if not acked:
            result.status = PutStatus.FLUSH_SLAVE_TIMEOUT
            result.remark = f"the slave did not confirm the message within {timeout_ms} ms"

    def status(self) -> HARuntimeInfo:
        top = self.broker.store.commitlog.max_offset
        gap = self.broker.config.ha_max_gap_not_in_sync
        conns = [
            HAConnectionRuntimeInfo(
                addr=c.addr,
                slaveAckOffset=max(c.reported, 0),
                diff=max(0, top - max(c.reported, 0)),
                inSync=c.ack >= 0 and top - c.ack < gap,
                transferredByteInSecond=c.rate.per_second,
                transferFromWhere=max(c.sent_end, 0),
            )
            for c in sorted(self.connections, key=lambda c: c.addr)
        ]
        return HARuntimeInfo(
            master=True,
            masterCommitLogMaxOffset=top,
            inSyncSlaveNums=sum(c.inSync for c in conns),
            haConnectionInfo=conns,
        )
