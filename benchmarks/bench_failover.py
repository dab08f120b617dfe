"""Failover benchmark: a local controller-mode cluster (`rmq cluster up --controllers 1`, one master
and two replicas, allAckInSyncStateSet) under synchronous sends; the master is SIGKILLed and the time
from the kill to the first write a new master acknowledges is measured, then the old master comes
back as a replica before the next round. The floor is the heartbeat timeout (3 s): the controller
cannot tell a dead master from a slow one sooner.

The same for the C++ client (the peer driver, when it installs here): it learns routes only from its
own NameServer poll every 30 s, so its figure is the election plus the wait for that poll. The old
master comes back only after the client resumed, so its stale route never points at the right
broker by chance.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import statistics
import tempfile
import time
from pathlib import Path

from broker.client import Message, Producer
from broker.client.admin_api import AdminApi, RemoteError
from broker.client.controller_api import sync_state_data
from broker.client.message import MQClientError
from broker.client.remoting_client import RemotingClient, RemotingError
from broker.protocol.bodies import TopicConfig
from broker.protocol.msgid import decode_offset_msg_id
from cli import cluster_local

Result = dict[str, object]
TOPIC = "BenchFailover"
GROUP = "broker-a"
HEARTBEAT_TIMEOUT_S = cluster_local.CONTROLLER_MODE_TIMING["controllerHeartBeatTimeoutMills"] / 1000
TARGET_S = 5.0
CPP_ROUTE_POLL_S = 30.0  # the C++ client's fixed topic route refresh period
SMALL_STORE = ("mappedFileSizeCommitLog=67108864", "maxHashSlotNum=100000", "maxIndexNum=400000")


def _base_port() -> int:
    for base in range(26000, 32000, 100):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", base))
            except OSError:
                continue
        return base
    raise RuntimeError("no free ports")


async def _wait(condition: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()  # type: ignore[operator]
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise TimeoutError("the cluster did not settle")
        await asyncio.sleep(0.05)


async def _rounds(tmp: Path, rounds: int) -> list[float]:
    base = _base_port()
    members = await asyncio.to_thread(cluster_local.start, tmp, 1, 2, base, True, None, 1, SMALL_STORE)
    api = AdminApi(RemotingClient(connect_timeout=1.0), timeout=2.0)
    controllers = [f"127.0.0.1:{m.port}" for m in members if m.role == "CONTROLLER"]
    producer = Producer("bench-failover", f"127.0.0.1:{base}", retry_times=2)
    acks: list[tuple[float, str]] = []
    stop = False

    async def replicas() -> tuple[str, int]:
        try:
            info = (await sync_state_data(api, controllers, [GROUP])).replicasInfoTable[GROUP]
        except (RemotingError, RemoteError, KeyError):
            return "", 0
        return info.masterAddress, len(info.inSyncReplicas)

    async def settled() -> bool:
        master, in_sync = await replicas()
        return bool(master) and in_sync == 3

    async def load() -> None:
        while not stop:
            try:
                result = await producer.send(Message(TOPIC, b"x" * 1024))
            except (MQClientError, RemotingError):
                await asyncio.sleep(0.02)
                continue
            if result.status.name == "SEND_OK":
                acks.append((time.monotonic(), decode_offset_msg_id(result.offset_msg_id).address))

    times: list[float] = []
    try:
        await _wait(settled)
        await producer.start()
        sender = asyncio.create_task(load())
        for _ in range(rounds):
            await _wait(lambda: len(acks) > 20)
            master = (await replicas())[0]
            victim = next(m for m in cluster_local.read_state(tmp) if f"127.0.0.1:{m.port}" == master)
            os.kill(victim.pid, signal.SIGKILL)
            killed = time.monotonic()
            await _wait(lambda: any(t > killed and a != master for t, a in acks))  # noqa: B023
            times.append(next(t for t, a in acks if t > killed and a != master) - killed)
            await asyncio.to_thread(cluster_local.restart, tmp, victim.name)
            await _wait(settled)
        stop = True
        await sender
    finally:
        await producer.shutdown()
        await api.client.close()
        await asyncio.to_thread(cluster_local.stop, tmp)
    return times


async def _cpp_rounds(tmp: Path, rounds: int) -> list[float]:
    """Kill -> the first send the C++ client sees acknowledged, per round."""
    from tests.peers.runner import start_driver

    base = _base_port()
    members = await asyncio.to_thread(cluster_local.start, tmp, 1, 2, base, True, None, 1, SMALL_STORE)
    api = AdminApi(RemotingClient(connect_timeout=1.0), timeout=5.0)
    controllers = [f"127.0.0.1:{m.port}" for m in members if m.role == "CONTROLLER"]
    times: list[float] = []

    async def master() -> str:
        try:
            return (await sync_state_data(api, controllers, [GROUP])).replicasInfoTable[GROUP].masterAddress
        except (RemotingError, RemoteError, KeyError):
            return ""

    try:
        for m in members:
            if m.role == "AUTO":
                await api.create_topic(f"127.0.0.1:{m.port}", TopicConfig(TOPIC, 4, 4))
        args = [f"127.0.0.1:{base}", TOPIC, "--count", "1000000", "--interval-ms", "50", "--timeout", "600"]
        with start_driver("cpp", "cpp_producer.py", args, timeout=600) as producer:

            def acked_after(moment: float) -> list[float]:
                events = zip(producer.arrived, list(producer.events), strict=False)
                return [
                    at
                    for at, e in events
                    if at > moment and e.get("event") == "sent" and e.get("status") == "OK"
                ]

            start = time.monotonic()
            await _wait(lambda: len(acked_after(start)) > 20, 120)
            for _ in range(rounds):
                old = await master()
                victim = next(m for m in cluster_local.read_state(tmp) if f"127.0.0.1:{m.port}" == old)
                os.kill(victim.pid, signal.SIGKILL)
                killed = time.monotonic()
                await _wait(lambda: acked_after(killed), CPP_ROUTE_POLL_S * 3)  # noqa: B023
                times.append(acked_after(killed)[0] - killed)
                await asyncio.to_thread(cluster_local.restart, tmp, victim.name)
                resumed = time.monotonic()
                await _wait(lambda: len(acked_after(resumed)) > 20, 120)  # noqa: B023
    finally:
        await api.client.close()
        await asyncio.to_thread(cluster_local.stop, tmp)
    return times


def _cpp_result(rounds: int) -> Result:
    from tests.peers import install

    try:
        install.ensure_cpp_client()
    except install.PeerInstallError as exc:
        return {"name": "failover, C++ client: skipped", "value": 0, "unit": "s", "note": str(exc)[:200]}
    with tempfile.TemporaryDirectory(prefix="bench-failover-cpp-") as tmp:
        times = asyncio.run(_cpp_rounds(Path(tmp), rounds))
    median = statistics.median(times)
    return {
        "name": f"failover, C++ client: kill -> its first acknowledged send (median of {rounds})",
        "value": round(median, 2),
        "unit": "s",
        "baseline": "its route poll period",
        "baseline_value": CPP_ROUTE_POLL_S,
        "note": "rounds: " + ", ".join(f"{t:.2f}" for t in times),
    }


def run(quick: bool) -> list[Result]:
    rounds = 3 if quick else 5
    with tempfile.TemporaryDirectory(prefix="bench-failover-") as tmp:
        times = asyncio.run(_rounds(Path(tmp), rounds))
    median = statistics.median(times)
    return [
        {
            "name": f"failover: kill -> first acknowledged write (median of {rounds})",
            "value": round(median, 2),
            "unit": "s",
            "target": TARGET_S,
            "baseline": "heartbeat timeout",
            "baseline_value": HEARTBEAT_TIMEOUT_S,
            "met": median <= TARGET_S,
            "note": "rounds: " + ", ".join(f"{t:.2f}" for t in times),
        },
        _cpp_result(2 if quick else 3),
    ]
