"""A NameServer: the remoting server with the NameServer handlers, the KV store loaded from disk,
the periodic expiry scan and the watch on broker connections. Every instance has its own state, so
several can run side by side in one process (tests, ``rmq up`` with two NameServers)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from broker.acl.auth_store import AuthStore
from broker.acl.remoting_hook import make_namesrv_server
from broker.namesrv.config import NamesrvConfig
from broker.namesrv.kv_config import KVConfigManager
from broker.namesrv.processor import NamesrvProcessor
from broker.namesrv.route_table import RouteTable
from broker.protocol.codes import RequestCode
from broker.remoting.channel import RemotingChannel

if TYPE_CHECKING:
    from broker.controller.server import Controller

log = logging.getLogger(__name__)

_WILDCARD_HOSTS = ("", "0.0.0.0", "::")


class NameServer:
    def __init__(
        self, config: NamesrvConfig, host: str | None = None, auth_store: AuthStore | None = None
    ) -> None:
        """``host``: where to listen, listenHost unless given; ``auth_store``: users and ACLs shared with
        a broker of the same process, else the NameServer's own."""
        config.validate()
        self.config = config
        self.host = config.listen_host if host is None else host
        self.route_table = RouteTable()
        self.kv_config = KVConfigManager(config.kv_config_path)
        if auth_store is None and config.auth_enabled:  # its own, beside kvConfig.json
            auth_store = config.auth_store(config.kv_config_path.parent)
        self._server = make_namesrv_server(  # TLS, and the checks of access control, when configured
            config,
            self.host,
            config.listen_port,
            auth_store=auth_store,
            idle_timeout=float(config.server_channel_max_idle_time_seconds),
        )
        handlers = NamesrvProcessor(config, self.route_table, self.kv_config, self._watch_channel).install(
            self._server
        )
        self.controller: Controller | None = None
        if config.enable_controller_in_namesrv:  # RocketMQ's embedded controller, on this port
            from broker.controller.server import Controller

            heartbeat = handlers[RequestCode.BROKER_HEARTBEAT]
            self.controller = Controller(config.controller, server=self._server, on_heartbeat=heartbeat)
        self._scan_task: asyncio.Task[None] | None = None
        self._watchers: dict[RemotingChannel, asyncio.Task[None]] = {}
        self._ready = False

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def address(self) -> str:
        """``ip:port`` to hand to brokers and clients; loopback when listening on every interface."""
        host = "127.0.0.1" if self.host in _WILDCARD_HOSTS else self.host
        return f"{host}:{self.port}"

    @property
    def ready(self) -> bool:
        """True from a completed :meth:`start` until :meth:`stop`."""
        return self._ready

    async def start(self) -> None:
        self.kv_config.load()
        await self._server.start()
        if self.controller is not None:
            await self.controller.start()
        self._scan_task = asyncio.create_task(self._scan_loop(), name="namesrv-scan-not-active-broker")
        self._ready = True
        log.info("NameServer listening on %s:%d", self.host, self.port)

    async def stop(self, grace: float = 5.0) -> None:
        """Stop scanning and serving; safe to call twice or before start."""
        self._ready = False
        tasks = [t for t in (self._scan_task, *self._watchers.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._scan_task = None
        self._watchers.clear()
        if self.controller is not None:
            await self.controller.stop()
        await self._server.stop(grace)

    async def _scan_loop(self) -> None:
        """Expire silent brokers; the interval is re-read every round, so an update applies next round."""
        while True:
            await asyncio.sleep(self.config.scan_not_active_broker_interval / 1000)
            try:
                expired = self.route_table.scan_not_active()
            except Exception:  # a bug here must not end expiry for the life of the process
                log.exception("scanning for inactive brokers failed")
                continue
            for live in expired:
                if isinstance(live.channel, RemotingChannel):
                    live.channel.close()

    def _watch_channel(self, channel: RemotingChannel) -> None:
        if channel.is_closed:  # it closed while the registration was being handled
            self.route_table.channel_closed(channel)
        elif channel not in self._watchers:
            self._watchers[channel] = asyncio.create_task(
                self._on_close(channel), name="namesrv-broker-watch"
            )

    async def _on_close(self, channel: RemotingChannel) -> None:
        try:
            await channel.wait_closed()
            self.route_table.channel_closed(channel)
        finally:
            self._watchers.pop(channel, None)
