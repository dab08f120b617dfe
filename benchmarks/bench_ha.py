"""Replication benchmark: batched 1 KiB sends to a SYNC_MASTER and to an ASYNC_MASTER, each with one
slave (master and slave in their own processes), and the replication rate the slave keeps up."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from broker.client import Message, Producer
from broker.client.admin_api import AdminApi
from broker.client.ha_api import ha_status
from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.namesrv.server import NameServer

Result = dict[str, object]
BODY = b"x" * 1024
BATCH = 32
CONCURRENCY = 8
TOPIC = "BenchHa"
SERVE = "import sys, asyncio; from benchmarks.bench_ha import serve; asyncio.run(serve(*sys.argv[1:]))"


async def serve(role: str, store: str, namesrv: str, port: str, ha_port: str) -> None:
    """One broker process of the benchmark (run by :func:`_spawn`)."""
    from broker.server.broker import Broker
    from broker.server.config import BrokerConfig
    from broker.store.config import StoreConfig

    config = BrokerConfig(
        broker_name="bench-ha",
        broker_id=1 if role == "SLAVE" else 0,
        broker_role=role,
        listen_host="127.0.0.1",
        listen_port=int(port),
        ha_listen_port=int(ha_port),
        namesrv_addr=namesrv,
        http_port=0,
        grpc_port=-1,
    )
    broker = Broker(config, StoreConfig(store_path=Path(store)))
    await broker.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


def _spawn(role: str, store: Path, namesrv: str, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, role, str(store), namesrv, str(port), str(port + 2)],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # "ready"
    return proc


def _free_port() -> int:
    import socket

    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port < 60000:
            return port


async def _load(namesrv: str, seconds: float) -> tuple[int, list[float]]:
    latencies: list[float] = []
    sent = 0
    async with Producer("bench-ha-pg", namesrv) as producer:
        await producer.send_batch([Message(TOPIC, BODY) for _ in range(BATCH)])  # creates the topic
        deadline = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal sent
            while time.monotonic() < deadline:
                started = time.perf_counter()
                for result in await producer.send_batch([Message(TOPIC, BODY) for _ in range(BATCH)]):
                    assert result.status.name == "SEND_OK", result.status
                latencies.append((time.perf_counter() - started) * 1e6)
                sent += BATCH

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return sent, latencies


async def _one_mode(role: str, root: Path, seconds: float) -> tuple[float, float, float, float]:
    """msgs/s, p50 and p99 batch latency (us), replication MB/s for one master role."""
    ns = NameServer(
        NamesrvConfig(listen_port=0, kv_config_path=root / "kv.json", config_store_path=root / "ns.props"),
        host="127.0.0.1",
    )
    await ns.start()
    master_port = _free_port()
    # spawned off the loop: the NameServer serving their registrations runs on it
    master = await asyncio.to_thread(_spawn, role, root / "master", ns.address, master_port)
    slave = await asyncio.to_thread(_spawn, "SLAVE", root / "slave", ns.address, _free_port())
    api = AdminApi(RemotingClient(), timeout=5.0)
    addr = f"127.0.0.1:{master_port}"
    try:
        while not (await ha_status(api, addr)).inSyncSlaveNums:
            await asyncio.sleep(0.05)
        start_offset = (await ha_status(api, addr)).masterCommitLogMaxOffset
        started = time.monotonic()
        sent, latencies = await _load(ns.address, seconds)
        elapsed = time.monotonic() - started
        while True:
            info = await ha_status(api, addr)
            if (
                info.haConnectionInfo
                and info.haConnectionInfo[0].slaveAckOffset >= info.masterCommitLogMaxOffset
            ):
                break
            await asyncio.sleep(0.01)
        caught_up = time.monotonic() - started
        replicated = info.masterCommitLogMaxOffset - start_offset
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        return sent / elapsed, statistics.median(latencies), p99, replicated / caught_up / 1e6
    finally:
        await api.client.close()
        for proc in (slave, master):
            proc.terminate()
            proc.wait(10)
        await ns.stop()


def _result(name: str, value: float, unit: str, **extra: object) -> Result:
    base = {"name": name, "value": round(value, 1), "unit": unit, "target": None}
    base.update({"baseline": None, "baseline_value": None, "note": ""})
    base.update(extra)
    return base


def run(quick: bool) -> list[Result]:
    seconds = 2.0 if quick else 6.0
    figures = {}
    for role in ("ASYNC_MASTER", "SYNC_MASTER"):
        with tempfile.TemporaryDirectory(prefix="bench-ha-") as tmp:
            figures[role] = asyncio.run(_one_mode(role, Path(tmp), seconds))
    a_rate, a_p50, a_p99, a_mbs = figures["ASYNC_MASTER"]
    s_rate, s_p50, s_p99, s_mbs = figures["SYNC_MASTER"]
    batch = f"batches of {BATCH} x 1 KiB, {CONCURRENCY} in flight"
    return [
        _result("ha async-master send", a_rate, "msg/s", note=batch),
        _result(
            "ha sync-master send",
            s_rate,
            "msg/s",
            target=round(0.6 * a_rate, 1),
            baseline="async-master send",
            baseline_value=round(a_rate, 1),
            note="target: 60% of async",
        ),
        _result("ha async-master batch p50", a_p50, "us"),
        _result("ha async-master batch p99", a_p99, "us"),
        _result("ha sync-master batch p50", s_p50, "us"),
        _result("ha sync-master batch p99", s_p99, "us"),
        _result("ha replication (async run)", a_mbs, "MB/s"),
        _result("ha replication (sync run)", s_mbs, "MB/s"),
    ]
