"""What the failover tests share: a local controller-mode cluster (`rmq cluster up --controllers`), asked
about its group over remoting, and conditions to wait on with generous bounded timeouts (a loaded
machine slows every step; no step is timed).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from broker.client.admin_api import AdminApi, RemoteError
from broker.client.controller_api import sync_state_data
from broker.client.remoting_client import RemotingClient, RemotingError
from broker.protocol.codes import RequestCode
from broker.protocol.ha import HARuntimeInfo
from broker.store.message_store import MessageStore
from cli import cluster_local
from cli.cluster_local import Member
from tests.ports import free_base_port

# small store files: a killed broker's restart recovers in a moment instead of reading 1 GiB files
SMALL_STORE = (
    "mappedFileSizeCommitLog=4194304",
    "mappedFileSizeConsumeQueueUnits=10000",
    "maxHashSlotNum=10000",
    "maxIndexNum=40000",
)
GROUP = "broker-a"
WAIT = 120.0  # seconds any one condition may take on a loaded machine before the test gives up
CALL_TIMEOUT = 10.0  # a process just resumed or restarted under load can be slow to answer


async def until(condition: Callable[[], object], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.1)


class Cluster:
    def __init__(self, tmp: Path, members: list[Member]) -> None:
        self.tmp = tmp
        self.members = members
        self.api = AdminApi(RemotingClient(connect_timeout=2.0), timeout=CALL_TIMEOUT)
        self.namesrv = next(f"127.0.0.1:{m.port}" for m in members if m.role == "NAMESRV")

    @classmethod
    async def start(
        cls, tmp: Path, controllers: int, replicas: int = 2, settings: tuple[str, ...] = ()
    ) -> Cluster:
        base = free_base_port()
        members = await asyncio.to_thread(
            cluster_local.start, tmp, 1, replicas, base, True, None, controllers, SMALL_STORE + settings
        )
        return cls(tmp, members)

    async def stop(self) -> None:
        await self.api.client.close()
        await asyncio.to_thread(cluster_local.stop, self.tmp)

    @property
    def controllers(self) -> list[str]:
        return [f"127.0.0.1:{m.port}" for m in self.members if m.role == "CONTROLLER"]

    def broker(self, addr: str) -> Member:
        return next(m for m in self.members if f"127.0.0.1:{m.port}" == addr)

    async def replicas(self) -> tuple[str, set[str]]:
        """The master's address and the addresses in the SyncStateSet ("" while unknown)."""
        try:
            info = (await sync_state_data(self.api, self.controllers, [GROUP])).replicasInfoTable[GROUP]
        except (RemotingError, RemoteError, KeyError):
            return "", set()
        return info.masterAddress, {r.brokerAddress for r in info.inSyncReplicas}

    async def master(self) -> str:
        return (await self.replicas())[0]

    async def all_in_sync(self) -> bool:
        master, in_sync = await self.replicas()
        return bool(master) and len(in_sync) == 3

    async def master_is_not(self, old: str) -> bool:
        master = await self.master()
        return bool(master) and master != old

    async def caught_up(self) -> bool:
        """Both replicas acknowledged the master's whole CommitLog."""
        master = await self.master()
        if not master:
            return False
        try:
            status = await self.api.call(master, RequestCode.GET_BROKER_HA_STATUS)
        except (RemotingError, RemoteError):
            return False
        info = HARuntimeInfo.from_json(status.body or b"{}")
        acks = [c.slaveAckOffset for c in info.haConnectionInfo]
        return len(acks) == 2 and all(a == info.masterCommitLogMaxOffset for a in acks)

    async def acts_as_master(self, addr: str) -> bool:
        """What the broker itself says of its role (not what the controller decided)."""
        try:
            status = await self.api.call(addr, RequestCode.GET_BROKER_HA_STATUS)
        except (RemotingError, RemoteError):
            return False
        return HARuntimeInfo.from_json(status.body or b"{}").master

    def restart(self, member: Member) -> None:
        cluster_local.restart(self.tmp, member.name)
        self.members = cluster_local.read_state(self.tmp)


def commitlog_digest(store: MessageStore) -> str:
    """The CommitLog's written range and a digest of its bytes."""
    digest = hashlib.sha256()
    cl = store.commitlog
    offset = cl.min_offset
    while offset < cl.max_offset:
        chunk = cl.read_raw(offset, 1 << 20)
        digest.update(chunk)
        offset += len(chunk)
    return f"{cl.min_offset}-{cl.max_offset}:{digest.hexdigest()}"
