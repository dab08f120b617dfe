"""What every client owns (Java's MQClientInstance): an id, connections, routes, background tasks and the
heartbeat that tells brokers who it is."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from broker.client.api import ClientAPI
from broker.client.message import MQClientError
from broker.client.route import RouteCache
from broker.protocol.bodies import MessageQueue
from broker.protocol.group_bodies import HeartbeatData
from broker.protocol.msgid import local_ip
from broker.protocol.route import MASTER_ID
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingError

if TYPE_CHECKING:
    from broker.client.options import ClientOptions

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
        options: ClientOptions,
    ) -> None:
        self.client_id = make_client_id(options.instance_name)
        self.remoting = RemotingClient()
        if options.credentials is not None or options.ssl_context is not None:
            from broker.acl.client import ClientSecurity, secure  # ACL is optional: load it when used

            secure(self.remoting, ClientSecurity(options.credentials, options.ssl_context))
        self.api = ClientAPI(self.remoting, options.rpc_timeout)
        self.routes = RouteCache(self.api, parse_namesrv_addr(namesrv_addr))
        self._heartbeat = heartbeat
        self._tasks: set[asyncio.Task[Any]] = set()
        self._greeted: set[str] = set()
        self._pull_from: dict[MessageQueue, int] = {}  # suggestWhichBrokerId per queue

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
        """Heartbeat every master this client knows of (consumers: slaves too, they may read there)."""
        data = self._heartbeat()
        for addr in self.routes.all_addrs() if data.consumerDataSet else self.routes.master_addrs():
            try:
                await self.api.heartbeat(addr, data)
                self._greeted.add(addr)
            except (MQClientError, RemotingError) as exc:
                log.warning("heartbeat to %s failed: %s", addr, exc)

    async def broker_addr(self, mq: MessageQueue) -> str:
        """The master serving ``mq``; a broker seen for the first time gets a heartbeat first, so it
        knows this client before any other request (transaction checks, consumer lists need that)."""
        return await self.greet(await self.routes.find_master(mq))

    async def pull_addr(self, mq: MessageQueue) -> str:
        """Where to pull ``mq`` from: the broker id last suggested for it (Java's
        recalculatePullFromWhichNode), else the master, else a slave."""
        broker_id = self._pull_from.get(mq, MASTER_ID)
        addr = self.routes.subscribe_addr(mq.brokerName, broker_id)
        if addr is None:
            await self.routes.refresh(mq.topic)
            addr = self.routes.subscribe_addr(mq.brokerName, broker_id)
        if addr is None:
            raise MQClientError(f"broker {mq.brokerName} of {mq.topic} has no address")
        return await self.greet(addr)

    def pull_suggested(self, mq: MessageQueue, broker_id: int) -> None:
        self._pull_from[mq] = broker_id

    def pull_failed(self, mq: MessageQueue) -> None:
        """The broker did not answer: the next pull tries the master if it was a slave, else a slave."""
        slaves = self.routes.slave_ids(mq.brokerName)
        current = self._pull_from.get(mq, MASTER_ID)
        self._pull_from[mq] = slaves[0] if current == MASTER_ID and slaves else MASTER_ID

    async def offset_addr(self, mq: MessageQueue) -> str:
        """Where offsets of ``mq`` are committed: the master, or a slave while the route has none."""
        addr = self.routes.master_addr(mq.brokerName) or self.routes.subscribe_addr(mq.brokerName)
        return await self.greet(addr) if addr is not None else await self.broker_addr(mq)

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
