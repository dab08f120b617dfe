"""NOTIFY_BROKER_ROLE_CHANGED (1008): after an election the controller leader tells every live broker
of the group who its master is now, so role switches do not wait for the brokers' next
GET_REPLICA_INFO poll (which stays as the fallback when a notification is lost).

As upstream, a notification is one-way and carries the new master (header) and SyncStateSet (body).
Per broker address at most one notification is in flight: a newer election replaces an older one
still waiting, so a flapping group cannot grow the controller's tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging

from broker.controller.heartbeats import HeartbeatTable
from broker.controller.state import GroupState
from broker.protocol import controller as C
from broker.protocol.codes import RequestCode
from broker.protocol.remoting import make_request
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 1.0


class RoleNotifier:
    def __init__(self, live: HeartbeatTable) -> None:
        self._live = live
        self._client = RemotingClient(connect_timeout=CONNECT_TIMEOUT)
        self._pending: dict[str, asyncio.Task[None]] = {}  # broker address -> its notification

    def group_changed(self, group: GroupState) -> None:
        """Tell the group's live brokers its master (nothing while it has none)."""
        if group.master_id is None:
            return
        header = C.NotifyBrokerRoleChangedRequestHeader(
            masterAddress=group.master_address,
            masterEpoch=group.master_epoch,
            syncStateSetEpoch=group.sync_state_set_epoch,
            masterBrokerId=group.master_id,
        )
        body = C.SyncStateSet(sorted(group.sync_state_set), group.sync_state_set_epoch).to_json()
        for broker_id, entry in group.brokers.items():
            if not entry.address or not self._live.alive(group.name, broker_id):
                continue
            older = self._pending.pop(entry.address, None)
            if older is not None:
                older.cancel()
            task = asyncio.create_task(self._send(entry.address, header, body), name="notify-role")
            self._pending[entry.address] = task
            task.add_done_callback(functools.partial(self._done, entry.address))

    def _done(self, addr: str, task: asyncio.Task[None]) -> None:
        if self._pending.get(addr) is task:
            del self._pending[addr]

    async def _send(self, addr: str, header: C.NotifyBrokerRoleChangedRequestHeader, body: bytes) -> None:
        request = make_request(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, header, body=body)
        try:
            await self._client.invoke_oneway(addr, request)
        except RemotingError as exc:  # the broker's own poll finds the change all the same
            log.info("could not tell %s its new master: %s", addr, exc)

    async def stop(self) -> None:
        tasks = list(self._pending.values())
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
        self._pending.clear()
        await self._client.close()
