"""Automatic failover with real processes (`rmq cluster up --controllers`): a 1-master-2-replica group
under synchronous sends, its master killed, stopped and brought back; three controllers losing their
leader, then their majority; and an operator's election reaching brokers that poll only every ten
minutes (the controller's NOTIFY_BROKER_ROLE_CHANGED push). Every wait is on a condition with a
generous bound (harness.WAIT), so a loaded machine makes a run slower, not red.

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
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from broker.client import Message, Producer
from broker.client.admin_api import AdminApi, RemoteError
from broker.client.controller_api import elect_master, metadata, sync_state_data, update_config
from broker.client.message import MQClientError
from broker.client.remoting_client import RemotingError
from broker.protocol import headers as H
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.ha import HARuntimeInfo
from broker.protocol.msgid import decode_offset_msg_id
from broker.store.message_store import MessageStore
from cli.cluster_local import Member
from tests.broker.controller.harness import GROUP, Cluster, commitlog_digest, until

pytestmark = [pytest.mark.servers, pytest.mark.alone]

TOPIC = "FailoverTopic"


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


def _read_back(store_dir: Path, acked: dict[str, str]) -> tuple[list[str], str]:
    """The acknowledged bodies the store lacks at the offsets their MessageIds name, and a digest of
    its CommitLog."""
    store = MessageStore.open_read_only(store_dir)
    try:
        missing = []
        for body, mid in acked.items():
            record = store.message_at(decode_offset_msg_id(mid).offset)
            if record is None or bytes(record.body) != body.encode():
                missing.append(body)
        return missing, commitlog_digest(store)
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
    cluster = await Cluster.start(tmp, 1)
    producer = Producer("ctrl-pg", cluster.namesrv, retry_times=2)
    failovers: list[float] = []
    try:
        await until(cluster.all_in_sync, "a SyncStateSet of all three brokers")
        await producer.start()
        load = _Load(producer)
        sender = asyncio.create_task(load.run())
        await until(lambda: len(load.acked) >= 100, "acknowledged sends before the first kill")
        for _ in range(2):  # SIGKILL the master; it comes back as a replica
            old = await cluster.master()
            victim = cluster.broker(old)
            os.kill(victim.pid, signal.SIGKILL)
            killed = time.monotonic()
            acked_by_new = functools.partial(_new_master_ack, load, killed, victim)
            await until(acked_by_new, "a write acknowledged by a new master")
            failovers.append(_new_master_ack(load, killed, victim) - killed)
            await asyncio.to_thread(cluster.restart, victim)
            await until(cluster.all_in_sync, "the old master back in the SyncStateSet")
        # SIGSTOP the master: once another is elected, the stopped one takes no write when resumed
        old = await cluster.master()
        victim = cluster.broker(old)
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            stopped_out = functools.partial(cluster.master_is_not, old)
            await until(stopped_out, "a new master while the old one is stopped")
        finally:
            os.kill(victim.pid, signal.SIGCONT)
        fenced = await _send_direct(cluster.api, old)
        await until(cluster.all_in_sync, "the resumed master back as a replica")
        before = len(load.acked)
        await until(lambda: len(load.acked) >= before + 50, "sends after the last switch")
        load.stopped = True
        await sender
        await until(cluster.caught_up, "the replicas' copy of the last bytes")
        return {"acked": dict(load.acked), "failovers": failovers, "fenced": fenced}
    finally:
        await producer.shutdown()
        await cluster.stop()


def _new_master_ack(load: _Load, killed: float, victim: Member) -> float:
    """When a broker other than ``victim`` first acknowledged a write after ``killed`` (0: not yet)."""
    return next((t for t, a in load.acked_by if t > killed and a != f"127.0.0.1:{victim.port}"), 0.0)


def test_master_killed_twice_and_stopped_once_loses_no_acknowledged_message(tmp_path: Path) -> None:
    figures = asyncio.run(asyncio.wait_for(_kill_rounds(tmp_path), 600))
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
    cluster = await Cluster.start(tmp, 3)
    try:
        await until(cluster.all_in_sync, "a SyncStateSet of all three brokers")
        _, meta = await metadata(cluster.api, cluster.controllers)
        leader = next(m for m in cluster.members if m.name == f"controller-{meta.controllerLeaderId}")
        old = await cluster.master()
        # the controller leader dies during the failover: the others elect a master all the same
        os.kill(cluster.broker(old).pid, signal.SIGKILL)
        os.kill(leader.pid, signal.SIGKILL)
        cluster.members = [m for m in cluster.members if m.pid != leader.pid]
        await until(functools.partial(cluster.master_is_not, old), "an election after the leader died")
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
        await cluster.stop()


def test_three_controllers_survive_a_dead_leader_but_not_a_lost_majority(tmp_path: Path) -> None:
    figures = asyncio.run(asyncio.wait_for(_controller_losses(tmp_path), 400))
    assert figures["last_is_master"] is False


async def _pushed_election(tmp: Path) -> dict[str, bool]:
    # the brokers poll the controller only every 10 minutes: only the push can switch them in time
    cluster = await Cluster.start(tmp, 1, replicas=1, settings=("syncBrokerMetadataPeriod=600000",))
    try:
        await until(cluster.master, "a first master")
        first = await cluster.master()
        # the replica joins the SyncStateSet only on a poll: let the operator's election skip that
        await update_config(cluster.api, cluster.controllers[0], {"enableElectUncleanMaster": "true"})

        async def replicas() -> list[Any]:
            data = await sync_state_data(cluster.api, cluster.controllers, [GROUP])
            info = data.replicasInfoTable.get(GROUP)
            members = info.notInSyncReplicas + info.inSyncReplicas if info is not None else []
            return [r for r in members if r.brokerAddress != first]

        await until(replicas, "the replica known to the controller")  # it registers after the master
        other = (await replicas())[0]
        await elect_master(cluster.api, cluster.controllers, "LocalCluster", GROUP, other.brokerId)
        await until(lambda: cluster.acts_as_master(other.brokerAddress), "the elected broker to take over")
        return {"old_still_master": await cluster.acts_as_master(first)}
    finally:
        await cluster.stop()


def test_an_election_reaches_the_brokers_without_waiting_for_their_poll(tmp_path: Path) -> None:
    figures = asyncio.run(asyncio.wait_for(_pushed_election(tmp_path), 300))
    assert figures["old_still_master"] is False
