"""Automatic failover with real processes (`rmq cluster up --controllers`): a 1-master-2-replica group
under synchronous sends, its master killed, stopped and brought back.

Acknowledged means SEND_OK with allAckInSyncStateSet: every acknowledged message must be in every
replica's CommitLog at the offset its MessageId names once they caught up, and the replicas'
CommitLogs end byte-identical. The brokers run with the settings `rmq cluster up --controllers` gives
(cluster_local.CONTROLLER_MODE_TIMING): enableControllerMode with controllerAddr naming the
controllers, allAckInSyncStateSet, controllerHeartBeatTimeoutMills 3000 (what the elections here wait
for) and haMaxTimeSlaveNotCatchup 5000 (how long a connected replica may lag before it leaves the
SyncStateSet; a restarted one joins once it caught up).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import random
import signal
import socket
import time
from pathlib import Path

import pytest

from broker.client import Message, Producer
from broker.client.admin_api import AdminApi, RemoteError
from broker.client.controller_api import metadata, sync_state_data
from broker.client.message import MQClientError
from broker.client.remoting_client import RemotingClient, RemotingError
from broker.protocol import headers as H
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.ha import HARuntimeInfo
from broker.protocol.msgid import decode_offset_msg_id
from broker.store.message_store import MessageStore
from cli import cluster_local
from cli.cluster_local import Member

pytestmark = pytest.mark.servers

TOPIC = "FailoverTopic"
# small store files: a killed broker's restart recovers in a moment instead of reading 1 GiB files
SMALL_STORE = (
    "mappedFileSizeCommitLog=4194304",
    "mappedFileSizeConsumeQueueUnits=10000",
    "maxHashSlotNum=10000",
    "maxIndexNum=40000",
)
GROUP = "broker-a"


def _free_base_port() -> int:
    """A base below the ephemeral range with every port of the cluster free (bound once to check)."""
    while True:
        base = random.randrange(20000, 32700, 100)
        if all(_bindable(base + d) for d in (0, 3, 4, 5, 6, 7, 8, 10, 12, 20, 22, 30, 32)):
            return base


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def _until(condition: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await _check(condition):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def _check(condition: object) -> bool:
    result = condition()  # type: ignore[operator]
    if asyncio.iscoroutine(result):
        result = await result
    return bool(result)


class _Load:
    """Sends numbered messages one at a time until stopped; remembers the acknowledged ones."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.acked: dict[str, str] = {}  # body -> offset MessageId
        self.acked_by: list[tuple[float, str]] = []  # (when, storing broker address)
        self.next = 0
        self.stopped = False

    async def run(self) -> None:
        while not self.stopped:
            body = f"m-{self.next:08d}"
            self.next += 1
            try:
                result = await self.producer.send(Message(TOPIC, body.encode()))
            except (MQClientError, RemotingError):
                await asyncio.sleep(0.05)
                continue
            if result.status.name == "SEND_OK":
                self.acked[body] = result.offset_msg_id
                self.acked_by.append((time.monotonic(), decode_offset_msg_id(result.offset_msg_id).address))


class _Cluster:
    def __init__(self, tmp: Path, members: list[Member]) -> None:
        self.tmp = tmp
        self.members = members
        self.api = AdminApi(RemotingClient(connect_timeout=1.0), timeout=2.0)
        self.namesrv = next(f"127.0.0.1:{m.port}" for m in members if m.role == "NAMESRV")

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

    def restart(self, member: Member) -> None:
        cluster_local.restart(self.tmp, member.name)
        self.members = cluster_local.read_state(self.tmp)


def _read_back(store_dir: Path, acked: dict[str, str]) -> tuple[list[str], str]:
    """The acknowledged bodies the store lacks at the offsets their MessageIds name, and a digest of
    its CommitLog's written bytes."""
    store = MessageStore.open_read_only(store_dir)
    try:
        missing = []
        for body, mid in acked.items():
            record = store.message_at(decode_offset_msg_id(mid).offset)
            if record is None or bytes(record.body) != body.encode():
                missing.append(body)
        digest = hashlib.sha256()
        cl = store.commitlog
        offset = cl.min_offset
        while offset < cl.max_offset:
            chunk = cl.read_raw(offset, 1 << 20)
            digest.update(chunk)
            offset += len(chunk)
        return missing, f"{cl.min_offset}-{cl.max_offset}:{digest.hexdigest()}"
    finally:
        store.shutdown()


async def _send_direct(api: AdminApi, addr: str) -> int:
    """One SEND_MESSAGE straight to ``addr`` (no route, no retry): the response code."""
    header = H.SendMessageRequestHeader(
        producerGroup="fence-pg",
        topic=TOPIC,
        defaultTopic="TBW102",
        defaultTopicQueueNums=4,
        queueId=0,
        sysFlag=0,
        bornTimestamp=int(time.time() * 1000),
        flag=0,
        properties="",
    )
    try:
        response = await api.call(
            addr,
            RequestCode.SEND_MESSAGE,
            header,
            body=b"from-a-stale-master",
            ok=[int(c) for c in ResponseCode],
        )
    except RemoteError as exc:
        return exc.code
    return response.code


async def _kill_rounds(tmp: Path) -> dict[str, object]:
    base = _free_base_port()
    members = await asyncio.to_thread(cluster_local.start, tmp, 1, 2, base, True, None, 1, SMALL_STORE)
    cluster = _Cluster(tmp, members)
    producer = Producer("ctrl-pg", cluster.namesrv, retry_times=2)
    failovers: list[float] = []
    try:
        await _until(lambda: _all_in_sync(cluster), "a SyncStateSet of all three brokers")
        await producer.start()
        load = _Load(producer)
        sender = asyncio.create_task(load.run())
        await _until(lambda: len(load.acked) >= 100, "acknowledged sends before the first kill")
        for _ in range(2):  # SIGKILL the master; it comes back as a replica
            old = await cluster.master()
            victim = cluster.broker(old)
            os.kill(victim.pid, signal.SIGKILL)
            killed = time.monotonic()
            acked_by_new = functools.partial(_new_master_ack, load, killed, victim)
            await _until(acked_by_new, "a write acknowledged by a new master")
            failovers.append(_new_master_ack(load, killed, victim) - killed)
            await asyncio.to_thread(cluster.restart, victim)
            await _until(lambda: _all_in_sync(cluster), "the old master back in the SyncStateSet")
        # SIGSTOP the master: once another is elected, the stopped one takes no write when resumed
        old = await cluster.master()
        victim = cluster.broker(old)
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            await _until(lambda: _master_is_not(cluster, old), "a new master while the old one is stopped")
        finally:
            os.kill(victim.pid, signal.SIGCONT)
        fenced = await _send_direct(cluster.api, old)
        await _until(lambda: _all_in_sync(cluster), "the resumed master back as a replica")
        before = len(load.acked)
        await _until(lambda: len(load.acked) >= before + 50, "sends after the last switch")
        load.stopped = True
        await sender
        await asyncio.sleep(1.0)  # the replicas fetch the last bytes
        return {"acked": dict(load.acked), "failovers": failovers, "fenced": fenced}
    finally:
        await producer.shutdown()
        await cluster.api.client.close()
        await asyncio.to_thread(cluster_local.stop, tmp)


def _new_master_ack(load: _Load, killed: float, victim: Member) -> float:
    """When a broker other than ``victim`` first acknowledged a write after ``killed`` (0: not yet)."""
    return next((t for t, a in load.acked_by if t > killed and a != f"127.0.0.1:{victim.port}"), 0.0)


async def _all_in_sync(cluster: _Cluster) -> bool:
    master, in_sync = await cluster.replicas()
    return bool(master) and len(in_sync) == 3


async def _master_is_not(cluster: _Cluster, old: str) -> bool:
    master = await cluster.master()
    return bool(master) and master != old


def test_master_killed_twice_and_stopped_once_loses_no_acknowledged_message(tmp_path: Path) -> None:
    figures = asyncio.run(asyncio.wait_for(_kill_rounds(tmp_path), 240))
    acked: dict[str, str] = figures["acked"]  # type: ignore[assignment]
    print(f"failover (kill -> first acknowledged write on the new master): {figures['failovers']} s")
    assert figures["fenced"] in (ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_BUSY)
    digests = set()
    for i in range(3):
        missing, digest = _read_back(tmp_path / f"{GROUP}-{i}", acked)
        assert not missing, f"{len(missing)} of {len(acked)} acknowledged messages not in {GROUP}-{i}"
        digests.add(digest)
    assert len(digests) == 1, f"the replicas' CommitLogs differ: {digests}"


async def _controller_losses(tmp: Path) -> dict[str, object]:
    base = _free_base_port()
    members = await asyncio.to_thread(cluster_local.start, tmp, 1, 2, base, True, None, 3, SMALL_STORE)
    cluster = _Cluster(tmp, members)
    try:
        await _until(lambda: _all_in_sync(cluster), "a SyncStateSet of all three brokers")
        _, meta = await metadata(cluster.api, cluster.controllers)
        leader = next(m for m in cluster.members if m.name == f"controller-{meta.controllerLeaderId}")
        old = await cluster.master()
        # the controller leader dies during the failover: the others elect a master all the same
        os.kill(cluster.broker(old).pid, signal.SIGKILL)
        os.kill(leader.pid, signal.SIGKILL)
        cluster.members = [m for m in cluster.members if m.pid != leader.pid]
        await _until(lambda: _master_is_not(cluster, old), "an election after the leader died", 40)
        elected = await cluster.master()
        # a second controller goes: no majority, so the next dead master gets no successor
        second = next(m for m in cluster.members if m.role == "CONTROLLER")
        os.kill(second.pid, signal.SIGKILL)
        cluster.members = [m for m in cluster.members if m.pid != second.pid]
        os.kill(cluster.broker(elected).pid, signal.SIGKILL)
        await asyncio.sleep(8.0)  # well past the 3 s heartbeat timeout
        last = next(
            m for m in cluster.members if m.role == "AUTO" and f"127.0.0.1:{m.port}" not in (old, elected)
        )
        status = await cluster.api.call(f"127.0.0.1:{last.port}", RequestCode.GET_BROKER_HA_STATUS)
        return {"last_is_master": HARuntimeInfo.from_json(status.body or b"{}").master}
    finally:
        await cluster.api.client.close()
        await asyncio.to_thread(cluster_local.stop, tmp)


def test_three_controllers_survive_a_dead_leader_but_not_a_lost_majority(tmp_path: Path) -> None:
    figures = asyncio.run(asyncio.wait_for(_controller_losses(tmp_path), 180))
    assert figures["last_is_master"] is False
