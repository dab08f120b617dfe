"""An in-process NameServer + broker serving gRPC on a free port, and a runner for the 5.x drivers."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.bodies import TopicConfig
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.server.config import BrokerConfig
from tests.grpc import peers5
from tests.peers.conftest import LoopThread, small_store

DRIVERS = Path(__file__).resolve().parent / "drivers"


@dataclass
class Run:
    argv: list[str]
    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    def check(self) -> Run:
        if self.returncode != 0:
            tail = "\n".join(self.stderr.strip().splitlines()[-30:])
            lines = "\n".join(json.dumps(e) for e in self.events[-30:])
            raise AssertionError(
                f"{' '.join(self.argv[1:3])} exited {self.returncode}\n{lines}\n--- stderr\n{tail}"
            )
        return self


def run5(client: str, script: str, *args: str, timeout: float = 60) -> Run:
    """Runs a driver of the Python ("py5") or Node ("node5") 5.x client and parses its JSON lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "NODE_"))}
    if client == "py5":
        cmd = [str(peers5.ensure_python5_client()), str(DRIVERS / script)]
        env["PYTHONUNBUFFERED"] = "1"
    else:
        env["NODE_PATH"] = str(peers5.ensure_nodejs5_client())
        cmd = ["node", str(DRIVERS / script)]
    with tempfile.TemporaryDirectory(prefix="rmq-grpc-home-") as home:
        env["HOME"] = home
        try:
            proc = subprocess.run(
                [*cmd, *args],
                capture_output=True,
                text=True,
                timeout=timeout + 20,
                env=env,
                stdin=subprocess.DEVNULL,
                cwd=DRIVERS,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(
                f"{script} did not finish within {timeout + 20:g}s: {exc.stdout!r:.2000}"
            ) from None
    events = []
    for line in proc.stdout.splitlines():
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict):
                events.append(item)
    return Run([*cmd, *args], proc.returncode, events, proc.stderr)


class GrpcCluster:
    def __init__(self, loop: LoopThread, node: Node) -> None:
        self.loop = loop
        self.node = node
        assert node.broker is not None and node.namesrv is not None
        self.broker = node.broker
        self.endpoints = f"127.0.0.1:{node.broker.grpc_port}"
        self.namesrv = f"127.0.0.1:{node.namesrv.port}"

    def call(self, fn: Any, *args: Any) -> Any:
        async def go() -> Any:
            return fn(*args)

        return self.loop.run(go())

    def create_topic(self, name: str, queues: int = 4, message_type: str | None = None) -> None:
        attrs = {"message.type": message_type} if message_type else {}
        config = TopicConfig(topicName=name, readQueueNums=queues, writeQueueNums=queues, attributes=attrs)
        self.call(self.broker.topics.put, config)

    def create_group(self, name: str, **fields: Any) -> None:
        self.call(self.broker.groups.put, SubscriptionGroupConfig(groupName=name, **fields))

    def max_offset(self, topic: str, queue_id: int = 0) -> int:
        return int(self.call(self.broker.store.max_offset, topic, queue_id))

    def wait_routed(self, topic: str, timeout: float = 15) -> None:
        """The NameServer knows the topic (for the remoting peers)."""
        from broker.client.admin_api import AdminApi
        from broker.client.remoting_client import RemotingClient

        async def routed() -> bool:
            client = RemotingClient()
            try:
                route = await AdminApi(client, timeout=5).topic_route([self.namesrv], topic)
                return bool(route.queueDatas)
            except Exception:
                return False
            finally:
                await client.close()

        deadline = time.monotonic() + timeout
        while not self.loop.run(routed()):
            self.broker.registration.trigger()
            if time.monotonic() > deadline:
                raise AssertionError(f"the NameServer does not route {topic}")
            time.sleep(0.3)


@pytest.fixture(scope="module")
def grpc_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcCluster]:
    loop = LoopThread()
    plan = NodePlan(
        namesrv=NamesrvConfig(listen_port=0),
        broker=BrokerConfig(
            broker_name="grpc-broker",
            listen_host="127.0.0.1",
            listen_port=0,
            http_port=0,
            grpc_port=0,
            transaction_time_out=1000,
            transaction_check_interval=1000,
        ),
        store=small_store(tmp_path_factory.mktemp("grpc-store")),
    )
    node = Node(plan)
    loop.run(node.start())
    try:
        yield GrpcCluster(loop, node)
    finally:
        loop.run(node.stop(), timeout=60)
        loop.close()
