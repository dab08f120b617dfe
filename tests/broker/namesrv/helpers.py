"""Requests a broker or a tool would send, and ways to talk to a NameServer over loopback TCP."""

from __future__ import annotations

import asyncio
import functools
import socket
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.namesrv.server import NameServer
from broker.protocol import headers as H
from broker.protocol.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
)
from broker.protocol.codes import RequestCode, SerializeType
from broker.protocol.remoting import FrameDecoder, RemotingCommand, encode_command, make_request

TIMEOUT = 5.0  # generous: only reached when something is broken


def async_test(fn: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 20))

    return run


def config_in(folder: Path, **overrides: object) -> NamesrvConfig:
    """Settings on any free port, with every file inside ``folder``."""
    cfg = NamesrvConfig(
        listen_port=0,
        kv_config_path=folder / "kvConfig.json",
        config_store_path=folder / "namesrv.properties",
    )
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


@asynccontextmanager
async def serving(config: NamesrvConfig) -> AsyncIterator[tuple[NameServer, RemotingClient]]:
    ns = NameServer(config, "127.0.0.1")
    await ns.start()
    client = RemotingClient()
    try:
        yield ns, client
    finally:
        await client.close()
        await ns.stop()


def topic_table(*topics: str, queues: int = 4, perm: int = 6) -> dict[str, TopicConfig]:
    return {
        t: TopicConfig(topicName=t, readQueueNums=queues, writeQueueNums=queues, perm=perm) for t in topics
    }


def registration(
    cluster: str,
    name: str,
    addr: str,
    broker_id: int = 0,
    topics: dict[str, TopicConfig] | None = None,
    *,
    version: DataVersion | None = None,
    compressed: bool = False,
    with_crc: bool = True,
    timeout_ms: int | None = None,
) -> RemotingCommand:
    """REGISTER_BROKER as a 5.x broker sends it (HA port = broker port + 1)."""
    wrapper = TopicConfigAndMappingSerializeWrapper(
        topicConfigTable=topics or {}, dataVersion=version or DataVersion(counter=1)
    )
    body = RegisterBrokerBody(topicConfigSerializeWrapper=wrapper).encode(compressed)
    host, port = addr.rsplit(":", 1)
    header = H.RegisterBrokerRequestHeader(
        brokerName=name,
        brokerAddr=addr,
        clusterName=cluster,
        haServerAddr=f"{host}:{int(port) + 1}",
        brokerId=broker_id,
        heartbeatTimeoutMillis=timeout_ms,
        enableActingMaster=False,
        compressed=compressed,
        bodyCrc32=zlib.crc32(body) & 0x7FFFFFFF if with_crc else 0,
    )
    return make_request(RequestCode.REGISTER_BROKER, header, body=body)


def request(code: int, header: H.CommandHeader | None = None, **kwargs: Any) -> RemotingCommand:
    return make_request(code, header, **kwargs)


def raw_call(
    addr: str, cmd: RemotingCommand | bytes, serialize_type: SerializeType = SerializeType.JSON
) -> RemotingCommand:
    """One request on a fresh blocking socket: ``cmd`` may be a ready-made (possibly odd) frame."""
    host, port = addr.rsplit(":", 1)
    frame = cmd if isinstance(cmd, bytes) else encode_command(cmd, serialize_type)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(frame)
        decoder = FrameDecoder()
        while True:
            data = sock.recv(65536)
            assert data, "connection closed before a response"
            for response in decoder.feed(data):
                return response


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = TIMEOUT) -> None:
    """Poll ``check`` until it holds (no timing asserts: the deadline only catches a hang)."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)
