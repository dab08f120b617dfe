"""Brokers for the interop tests: one in-process Node per module, or ``rmq up`` as a subprocess.

The peer drivers are blocking subprocesses, so the in-process Node runs on an asyncio loop in a
background thread; tests reach it (and the admin API) through :meth:`LoopThread.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from broker.client.admin_api import AdminApi, RemoteError
from broker.client.remoting_client import RemotingClient, RemotingConnectError
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.bodies import TopicConfig
from broker.protocol.group_bodies import ConsumeStats
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig
from tests.peers import install

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
RMQ = REPO / ".venv" / "bin" / "rmq"


class LoopThread:
    """An asyncio loop running in a daemon thread; ``run`` executes a coroutine there and waits."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="interop-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


def small_store(path: Path, **overrides: Any) -> StoreConfig:
    return StoreConfig(
        store_path=path,
        mapped_file_size_commit_log=4 << 20,
        mapped_file_size_consume_queue_units=10_000,
        max_hash_slot_num=10_000,
        max_index_num=40_000,
        **overrides,
    )


def wait_until(what: str, check: Callable[[], T | None], timeout: float = 30.0, every: float = 0.2) -> T:
    """Polls ``check`` until it returns something truthy; raises AssertionError naming ``what``."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except (RemoteError, RemotingConnectError, OSError, TimeoutError) as exc:
            last_error = exc
        if time.monotonic() > deadline:
            extra = f" (last error: {last_error})" if last_error else ""
            raise AssertionError(f"{what}: not reached within {timeout:g}s{extra}")
        time.sleep(every)


@dataclass
class Cluster:
    """What a test needs to know about a running NameServer + broker, and admin helpers."""

    namesrv: str  # host:port, what the drivers get
    broker_addr: str
    runner: Callable[[Callable[[AdminApi], Awaitable[Any]]], Any]

    def admin(self, fn: Callable[[AdminApi], Awaitable[T]]) -> T:
        result: T = self.runner(fn)
        return result

    def create_topic(self, topic: str, queues: int = 4) -> None:
        """Creates the topic on the broker and waits until the NameServer routes it."""
        config = TopicConfig(topicName=topic, readQueueNums=queues, writeQueueNums=queues)
        self.admin(lambda api: api.create_topic(self.broker_addr, config))

        def routed() -> bool:
            route = self.admin(lambda api: api.topic_route([self.namesrv], topic))
            return any(q.readQueueNums == queues for q in route.queueDatas)

        wait_until(f"route of {topic} at the NameServer", routed, timeout=20)

    def consume_stats(self, group: str, topic: str) -> ConsumeStats:
        return self.admin(lambda api: api.consume_stats(self.broker_addr, group, topic))

    def consumer_ids(self, group: str) -> list[str]:
        conn = self.admin(lambda api: api.consumer_connection(self.broker_addr, group))
        return [] if conn is None else sorted(c.clientId or "" for c in conn.connectionSet)

    def committed_all(self, group: str, topic: str) -> bool:
        table = self.consume_stats(group, topic).offsetTable
        return bool(table) and all(w.consumerOffset == w.brokerOffset for w in table.values())


@pytest.fixture(scope="module")
def peers_installed() -> None:
    install.ensure_ali_ons()
    install.ensure_cpp_client()


@pytest.fixture(scope="module")
def node_cluster(tmp_path_factory: pytest.TempPathFactory, peers_installed: None) -> Iterator[Cluster]:
    """One NameServer + broker in this process on free ports with a temporary store."""
    loop = LoopThread()
    store = tmp_path_factory.mktemp("interop-store")
    plan = NodePlan(
        namesrv=NamesrvConfig(listen_port=0),
        broker=BrokerConfig(
            broker_name="interop-broker", listen_host="127.0.0.1", listen_port=0, http_port=0
        ),
        store=small_store(store),
    )
    node = Node(plan)
    loop.run(node.start())
    client = RemotingClient()
    api = AdminApi(client, timeout=10)
    assert node.namesrv is not None and node.broker is not None
    cluster = Cluster(
        namesrv=f"127.0.0.1:{node.namesrv.port}",
        broker_addr=node.broker.address,
        runner=lambda fn: loop.run(_awaited(fn(api))),
    )
    try:
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            loop.run(client.close())
        loop.run(node.stop(), timeout=60)
        loop.close()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _admin_once(fn: Callable[[AdminApi], Awaitable[T]]) -> T:
    async def go() -> T:
        client = RemotingClient(connect_timeout=3)
        try:
            return await fn(AdminApi(client, timeout=10))
        finally:
            await client.close()

    return asyncio.run(go())


class RmqUp:
    """``rmq up`` as a subprocess on fixed ports, so it can be stopped, killed and started again."""

    def __init__(self, store: Path, *settings: str) -> None:
        self.store = store
        self.namesrv_port = free_port()
        self.broker_port = free_port()
        self.settings = settings
        self.proc: subprocess.Popen[str] | None = None
        self.log = store.parent / f"{store.name}-rmq-up.log"
        self.cluster = Cluster(
            namesrv=f"127.0.0.1:{self.namesrv_port}",
            broker_addr=f"127.0.0.1:{self.broker_port}",
            runner=_admin_once,
        )

    def start(self) -> Cluster:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        cmd = [
            str(RMQ), "up", "--store", str(self.store), "--namesrv-port", str(self.namesrv_port),
            "--broker-port", str(self.broker_port), "--no-http",
        ]  # fmt: skip
        for setting in self.settings:
            cmd += ["--set", setting]
        env = {k: v for k, v in os.environ.items() if not k.startswith("NAMESRV_ADDR")}
        with self.log.open("a") as log:
            log.write(f"\n=== {' '.join(cmd)}\n")
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, text=True, env=env,
                start_new_session=True,
            )  # fmt: skip

        def serving() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"rmq up exited {self.proc.returncode}:\n{self.tail()}")
            info = self.cluster.admin(lambda api: api.cluster_info([self.cluster.namesrv]))
            return bool(info.brokerAddrTable)

        wait_until(f"rmq up serving\n{self.tail()}", serving, timeout=30)
        return self.cluster

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                raise AssertionError(
                    f"rmq up ignored signal {sig} for {timeout:g}s:\n{self.tail()}"
                ) from None
        return self.proc.returncode

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def rmq_up(tmp_path: Path, peers_installed: None) -> Iterator[Callable[..., RmqUp]]:
    """Factory: ``rmq_up("flushDiskType=SYNC_FLUSH")`` -> a started :class:`RmqUp` (killed at teardown)."""
    made: list[RmqUp] = []

    def make(*settings: str) -> RmqUp:
        up = RmqUp(tmp_path / f"store{len(made)}", *settings)
        made.append(up)
        up.start()
        return up

    try:
        yield make
    finally:
        for up in made:
            up.close()


__all__ = ["Cluster", "LoopThread", "RmqUp", "free_port", "small_store", "wait_until"]
