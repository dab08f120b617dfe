"""What every client owns (Java's MQClientInstance): an id, connections, routes, background tasks and the
heartbeat that tells brokers who it is."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from broker.client.api import ClientAPI
from broker.client.message import MQClientError
from broker.client.remoting_client import RemotingClient, RemotingError
from broker.client.route import RouteCache
from broker.protocol.bodies import HeartbeatData, MessageQueue
from broker.protocol.msgid import local_ip

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL = 30.0
ROUTE_POLL_INTERVAL = 30.0


def parse_namesrv_addr(namesrv_addr: str) -> list[str]:
    """``"host:port;host:port"`` (commas accepted too) to a list."""
    return [a.strip() for a in namesrv_addr.replace(",", ";").split(";") if a.strip()]


def make_client_id(instance_name: str | None = None) -> str:
    """``ip@instance``; the default instance ``pid#nanotime`` keeps clients of one process apart."""
    ip = socket.inet_ntoa(local_ip())
    return f"{ip}@{instance_name or f'{os.getpid()}#{time.monotonic_ns()}'}"


class ClientInstance:
    def __init__(
        self,
        namesrv_addr: str,
        heartbeat: Callable[[], HeartbeatData],
        *,
        instance_name: str | None = None,
        rpc_timeout: float = 3.0,
    ) -> None:
        self.client_id = make_client_id(instance_name)
        self.remoting = RemotingClient()
        self.api = ClientAPI(self.remoting, rpc_timeout)
        self.routes = RouteCache(self.api, parse_namesrv_addr(namesrv_addr))
        self._heartbeat = heartbeat
        self._tasks: set[asyncio.Task[Any]] = set()
        self._greeted: set[str] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; failures are logged; :meth:`close` cancels it."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("client task %s failed", task.get_name(), exc_info=task.exception())

    def every(
        self, interval: float, action: Callable[[], Awaitable[None]], name: str, delay: float = 0
    ) -> None:
        """Run ``action`` every ``interval`` seconds (first after ``delay``); a failure is logged only."""

        async def loop() -> None:
            await asyncio.sleep(delay)
            while True:
                try:
                    await action()
                except (MQClientError, RemotingError, OSError) as exc:
                    log.warning("%s failed: %s", name, exc)
                await asyncio.sleep(interval)

        self.spawn(loop(), name)

    async def start(self) -> None:
        self.every(ROUTE_POLL_INTERVAL, self.routes.refresh_all, "route poll", delay=ROUTE_POLL_INTERVAL)
        self.every(HEARTBEAT_INTERVAL, self.send_heartbeat, "heartbeat", delay=HEARTBEAT_INTERVAL)

    async def send_heartbeat(self) -> None:
        """Heartbeat every master this client knows of."""
        data = self._heartbeat()
        for addr in self.routes.master_addrs():
            try:
                await self.api.heartbeat(addr, data)
                self._greeted.add(addr)
            except (MQClientError, RemotingError) as exc:
                log.warning("heartbeat to %s failed: %s", addr, exc)

    async def broker_addr(self, mq: MessageQueue) -> str:
        """The master serving ``mq``; a broker seen for the first time gets a heartbeat first, so it
        knows this client before any other request (transaction checks, consumer lists need that)."""
        return await self.greet(await self.routes.find_master(mq))

    async def greet(self, addr: str) -> str:
        """Heartbeat ``addr`` unless it already had one; returns it."""
        if addr not in self._greeted:
            await self.api.heartbeat(addr, self._heartbeat())
            self._greeted.add(addr)
        return addr

    async def stop_tasks(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self, producer_group: str | None = None, consumer_group: str | None = None) -> None:
        """Stop background work, unregister from every master, close connections."""
        await self.stop_tasks()
        for addr in self.routes.master_addrs():
            try:
                await self.api.unregister(addr, self.client_id, producer_group, consumer_group)
            except (MQClientError, RemotingError) as exc:
                log.warning("unregister from %s failed: %s", addr, exc)
        await self.remoting.close()
