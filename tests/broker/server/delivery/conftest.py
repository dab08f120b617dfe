"""A broker with short delay levels (level 3 = 2 s, every other level 1 s) and helpers to wait for
messages; ``RmqUpProcess`` runs ``rmq up`` as a subprocess so a test can kill it."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import MessageRecord, decode_records
from broker.protocol.remoting import make_request
from broker.server.broker import Broker
from tests.broker.server.conftest import pull_header, running_broker

DELAY_LEVELS = "1s 1s 2s " + " ".join(["1s"] * 15)
REPO = Path(__file__).resolve().parents[4]
RMQ = REPO / ".venv" / "bin" / "rmq"


@asynccontextmanager
async def feature_broker(store: Path, **overrides: Any) -> AsyncIterator[tuple[Broker, RemotingClient]]:
    async with running_broker(
        store, store_settings={"message_delay_level": DELAY_LEVELS}, **overrides
    ) as running:
        yield running


async def pull_all(client: RemotingClient, addr: str, topic: str, queue_id: int) -> list[MessageRecord]:
    """Every message of the queue from offset 0 (one pull of up to 32 is enough for these tests)."""
    request = make_request(RequestCode.PULL_MESSAGE, pull_header(topic, queue_id, 0))
    response = await client.invoke(addr, request, 10)
    return list(decode_records(response.body or b"")) if response.code == ResponseCode.SUCCESS else []


async def wait_for(
    client: RemotingClient, addr: str, topic: str, queue_id: int, count: int, timeout: float = 10.0
) -> list[MessageRecord]:
    """Poll until the queue holds at least ``count`` messages; returns them."""
    deadline = time.monotonic() + timeout
    while True:
        got = await pull_all(client, addr, topic, queue_id)
        if len(got) >= count or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.1)


def v2_fields(topic: str, props: str, **extra: str) -> dict[str, str]:
    """SEND_MESSAGE_V2 extFields as raw strings, the way a C++ or Node client puts them on the wire."""
    fixed = {"a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}
    return {**fixed, "i": props, **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class RmqUpProcess:
    """``rmq up`` on fixed free ports with the short delay levels, started and killed at will."""

    def __init__(self, store: Path, *settings: str) -> None:
        self.store = store
        self.broker_port = free_port()
        self.namesrv_port = free_port()
        self.settings = (f"messageDelayLevel={DELAY_LEVELS}", *settings)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = store.parent / "rmq-up.log"

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    async def start(self) -> None:
        cmd = [str(RMQ), "up", "--store", str(self.store), "--no-http",
               "--broker-port", str(self.broker_port), "--namesrv-port", str(self.namesrv_port)]  # fmt: skip
        for setting in self.settings:
            cmd += ["--set", setting]
        env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        client = RemotingClient(connect_timeout=1)
        try:
            deadline = time.monotonic() + 30
            while True:
                assert self.proc.poll() is None, self.log.read_text(errors="replace")[-3000:]
                try:
                    request = make_request(RequestCode.GET_BROKER_RUNTIME_INFO)
                    if (await client.invoke(self.addr, request, 2)).code == ResponseCode.SUCCESS:
                        return
                except Exception:  # not listening yet (connection refused, timeout)
                    if time.monotonic() > deadline:
                        raise
                await asyncio.sleep(0.2)
        finally:
            await client.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


__all__ = ["DELAY_LEVELS", "RmqUpProcess", "feature_broker", "pull_all", "v2_fields", "wait_for"]
