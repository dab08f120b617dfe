"""In-process master/slave sets: a NameServer, a master and a slave on free ports in a temporary folder."""

from __future__ import annotations

import asyncio
import filecmp
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.namesrv.server import NameServer
from broker.server.broker import Broker
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig

FILE_SIZE = 1 << 20


def store_config(path: Path) -> StoreConfig:
    return StoreConfig(
        store_path=path,
        mapped_file_size_commit_log=FILE_SIZE,
        mapped_file_size_consume_queue_units=1000,
        max_hash_slot_num=1000,
        max_index_num=4000,
    )


def ha_broker(namesrv: str, store: Path, role: str, **overrides: Any) -> Broker:
    config = BrokerConfig(
        broker_name="broker-ha",
        broker_id=0 if role != "SLAVE" else 1,
        broker_role=role,
        listen_host="127.0.0.1",
        listen_port=0,
        ha_listen_port=0,
        namesrv_addr=namesrv,
        http_port=0,
        grpc_port=-1,
        ha_send_heartbeat_interval=500,
        slave_sync_interval_ms=500,
    )
    for key, value in overrides.items():
        setattr(config, key, value)
    return Broker(config, store_config(store))


@asynccontextmanager
async def namesrv(tmp: Path) -> AsyncIterator[NameServer]:
    server = NameServer(
        NamesrvConfig(listen_port=0, kv_config_path=tmp / "kv.json", config_store_path=tmp / "ns.properties"),
        host="127.0.0.1",
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@asynccontextmanager
async def running(*brokers: Broker) -> AsyncIterator[RemotingClient]:
    """``brokers`` started in order, and a client to talk to them; on exit the client closes and every
    broker stops, in reverse order (started or not)."""
    client = RemotingClient()
    try:
        for broker in brokers:
            await broker.start()
        yield client
    finally:
        await client.close()
        for broker in reversed(brokers):
            await broker.stop()


async def wait_for(predicate: Any, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def commitlogs_identical(a: Path, b: Path) -> bool:
    """Same CommitLog file names with byte-identical contents."""
    names_a = sorted(p.name for p in (a / "commitlog").iterdir())
    names_b = sorted(p.name for p in (b / "commitlog").iterdir())
    if names_a != names_b:
        return False
    _match, mismatch, errors = filecmp.cmpfiles(a / "commitlog", b / "commitlog", names_a, shallow=False)
    return not mismatch and not errors
