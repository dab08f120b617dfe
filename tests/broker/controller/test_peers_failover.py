"""Failover under third-party clients: five rounds of SIGKILL of the master of a controller-mode group
(`rmq cluster up --controllers 1`, one master and two replicas, allAckInSyncStateSet) while the C++
client sends synchronously and an ali-ons push consumer reads. Each round a new master is elected and
the old one comes back as a replica; afterwards every message the C++ client saw acknowledged is in
every broker's store and reached the ali-ons consumer, and the three CommitLogs are byte-identical.

The C++ client (0.4.4, librocketmq 1.0.1) learns routes only from its own poll of the NameServer,
every 30 s: a failed send does not refresh them. So it may skip whole rounds, sending to the dead
(or returned, now replica) old master until its next poll, and the test waits for it to come back
once after the last round (the SDK failover test and `python -m benchmarks failover` measure how
soon the group and each client take writes again).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from broker.client.admin_api import RemoteError
from broker.client.remoting_client import RemotingError
from broker.protocol.bodies import TopicConfig
from broker.store.message_store import MessageStore
from tests.broker.controller.harness import GROUP, WAIT, Cluster, commitlog_digest, until
from tests.peers import install
from tests.peers.runner import DriverProcess, start_alions_consumer, start_driver

pytestmark = [pytest.mark.servers, pytest.mark.alone]

TOPIC = "PeerFailover"
ROUNDS = 5
INTERVAL_MS = 100  # a modest steady load: about 10 sends a second while the route is good
BEFORE_FIRST_KILL = 20
AFTER_LAST_ROUND = 10
DRIVER_TIMEOUT = 400


def _acked(producer: DriverProcess) -> list[tuple[float, str]]:
    """(when read, body) of each send the C++ client saw acknowledged (its SendStatus OK: SEND_OK)."""
    return [
        (at, f"cf-{e['index']}")
        for at, e in zip(producer.arrived, list(producer.events), strict=False)
        if e.get("event") == "sent" and e.get("status") == "OK"
    ]


def _consumed(consumer: DriverProcess) -> set[str]:
    return {
        base64.b64decode(e.get("body") or "").decode()
        for e in list(consumer.events)
        if e.get("event") == "received" and e.get("action") != "fail"
    }


def _stored_bodies(store_dir: Path) -> tuple[set[str], str]:
    """The topic's bodies found through its ConsumeQueues, and the CommitLog's digest."""
    store = MessageStore.open_read_only(store_dir)
    try:
        bodies = set()
        for queue_id in store.topic_queue_ids(TOPIC):
            queue = store.consume_queue(TOPIC, queue_id)
            assert queue is not None
            for _, phys, _, _ in queue.iter_units(0):
                record = store.message_at(phys)
                if record is not None:
                    bodies.add(bytes(record.body).decode())
        return bodies, commitlog_digest(store)
    finally:
        store.shutdown()


async def _rounds(producer: DriverProcess, consumer: DriverProcess, cluster: Cluster) -> dict[str, Any]:
    last_kill = 0.0
    await asyncio.to_thread(producer.wait_for, "ready", WAIT)
    await until(
        lambda: len(_acked(producer)) >= BEFORE_FIRST_KILL, "the C++ client's first acknowledged sends"
    )
    for _ in range(ROUNDS):
        old = await cluster.master()
        victim = cluster.broker(old)
        os.kill(victim.pid, signal.SIGKILL)
        last_kill = time.monotonic()
        await until(functools.partial(cluster.master_is_not, old), "a new master after the kill")
        await asyncio.to_thread(cluster.restart, victim)
        await until(cluster.all_in_sync, "the old master back in the SyncStateSet as a replica")
    await until(
        lambda: sum(1 for at, _ in _acked(producer) if at > last_kill) >= AFTER_LAST_ROUND,
        "the C++ client's sends acknowledged after the last round (its route poll is every 30 s)",
    )
    acked = _acked(producer)
    wanted = {body for _, body in acked}
    await until(lambda: wanted <= _consumed(consumer), "ali-ons to receive every acknowledged message")
    return {"acked": wanted}


async def _routed(cluster: Cluster) -> bool:
    try:
        return TOPIC in await cluster.api.topic_list([cluster.namesrv])
    except (RemotingError, RemoteError):
        return False


def test_five_killed_masters_under_the_cpp_client_and_ali_ons_lose_no_acknowledged_message(
    tmp_path: Path,
) -> None:
    install.ensure_cpp_client()
    install.ensure_ali_ons()

    async def scenario() -> dict[str, Any]:
        cluster = await Cluster.start(tmp_path, 1)
        try:
            await until(cluster.all_in_sync, "a SyncStateSet of all three brokers")
            for member in cluster.members:  # on the replicas too: any of them may be the next master
                if member.role == "AUTO":
                    topic = TopicConfig(topicName=TOPIC, readQueueNums=4, writeQueueNums=4)
                    await cluster.api.create_topic(f"127.0.0.1:{member.port}", topic)
            routed = functools.partial(_routed, cluster)
            await until(routed, f"the NameServer to route {TOPIC}")
            args = [cluster.namesrv, TOPIC, "--count", "100000", "--body", "cf",
                    "--interval-ms", str(INTERVAL_MS), "--timeout", str(DRIVER_TIMEOUT)]  # fmt: skip
            with (
                start_driver("cpp", "cpp_producer.py", args, timeout=DRIVER_TIMEOUT) as producer,
                start_alions_consumer(
                    cluster.namesrv, TOPIC, group="peer-failover-cg", timeout=DRIVER_TIMEOUT
                ) as consumer,
            ):
                figures = await _rounds(producer, consumer, cluster)
            await until(cluster.caught_up, "the replicas' copy of the master's last bytes")
            return figures
        finally:
            await cluster.stop()

    figures = asyncio.run(asyncio.wait_for(scenario(), 900))
    acked: set[str] = figures["acked"]
    digests = set()
    for i in range(3):
        bodies, digest = _stored_bodies(tmp_path / f"{GROUP}-{i}")
        missing = sorted(acked - bodies)
        assert not missing, (
            f"{len(missing)} of {len(acked)} acknowledged messages not in {GROUP}-{i}: {missing[:5]}"
        )
        digests.add(digest)
    assert len(digests) == 1, f"the brokers' CommitLogs differ after catching up: {digests}"
