"""A real NameServer + broker (with its HTTP endpoint) running in a background thread for the CLI and
admin tests, helpers that produce test data with raw SEND_MESSAGE_V2, and an in-process ``rmq`` runner
with an isolated config file."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner, Result

from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.codes import RequestCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData, SubscriptionData
from broker.protocol.headers import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from broker.protocol.msgid import UniqKeyGenerator
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import make_request
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig
from cli.main import app

T = TypeVar("T")
TOPIC = "Orders"
GROUP = "orders-cg"
MESSAGES = 12
CLOSED_ADDR = "127.0.0.1:1"  # nothing listens on port 1


@dataclass
class Cluster:
    """A running node and a loop to talk to it from synchronous tests."""

    node: Node
    loop: asyncio.AbstractEventLoop
    namesrv: str
    broker: str
    http: str
    sent: list[SendMessageResponseHeader]
    uniq_keys: list[str]

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(30)


async def send(
    client: RemotingClient, broker: str, topic: str, body: bytes, queue_id: int, **props: str
) -> SendMessageResponseHeader:
    v1 = SendMessageRequestHeader(
        producerGroup="PG",
        topic=topic,
        defaultTopic="TBW102",
        defaultTopicQueueNums=4,
        queueId=queue_id,
        sysFlag=0,
        bornTimestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties(props),
    )
    request = make_request(RequestCode.SEND_MESSAGE_V2, SendMessageRequestHeaderV2.from_v1(v1), body=body)
    response = await client.invoke(broker, request, 10)
    assert response.code == 0, response.remark
    return SendMessageResponseHeader.from_ext_fields(response.ext_fields)


async def heartbeat(client: RemotingClient, broker: str, client_id: str, group: str, topic: str) -> None:
    data = HeartbeatData(
        clientID=client_id,
        consumerDataSet=[
            ConsumerData(groupName=group, subscriptionDataSet=[SubscriptionData(topic=topic, subString="*")])
        ],
    )
    response = await client.invoke(broker, make_request(RequestCode.HEART_BEAT, body=data.to_json()), 10)
    assert response.code == 0, response.remark


async def keep_heartbeating(
    client: RemotingClient, broker: str, client_id: str, group: str, topic: str
) -> None:
    """Heartbeat every 20 s, as a consumer does (every 30 s), so that the group stays online for
    however long the session's tests take (a silent client's channel expires after 120 s)."""
    while True:
        await asyncio.sleep(20)
        with contextlib.suppress(Exception):  # a missed beat is retried by the next one
            await heartbeat(client, broker, client_id, group, topic)


def _start_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="test-node", daemon=True).start()
    return loop


def node_plan(store: Path, *, http: bool = True, **broker: Any) -> NodePlan:
    """A NameServer and broker ``broker-a`` on free loopback ports, keeping everything in ``store``;
    ``broker`` overrides settings of the broker (``grpc_port=-1`` ...), ``http`` the HTTP endpoint."""
    return NodePlan(
        namesrv=NamesrvConfig(
            listen_port=0,
            kv_config_path=store / "namesrv" / "kvConfig.json",
            config_store_path=store / "namesrv" / "namesrv.properties",
        ),
        broker=BrokerConfig(
            broker_name="broker-a", listen_host="127.0.0.1", listen_port=0, http_port=0, **broker
        ),
        store=StoreConfig(
            store_path=store,
            mapped_file_size_commit_log=1 << 20,
            mapped_file_size_consume_queue_units=1000,
            max_hash_slot_num=1000,
            max_index_num=4000,
        ),
        http_host="127.0.0.1",
        http_port=0 if http else None,
    )


@contextlib.contextmanager
def seeded_cluster(plan: NodePlan) -> Iterator[Cluster]:
    """``plan`` running on a loop of its own, with topic ``Orders`` (4 queues, 12 messages) and group
    ``orders-cg`` (offsets committed up to 2 per queue, online through a heartbeat); stopped on exit."""
    from admin.models import GroupSpec, TopicSpec
    from admin.service import AdminService
    from broker.protocol.headers import UpdateConsumerOffsetRequestHeader

    node = Node(plan)
    loop = _start_loop()
    client = RemotingClient()

    async def setup() -> tuple[list[SendMessageResponseHeader], list[str]]:
        await node.start()
        assert node.namesrv is not None and node.broker is not None
        async with AdminService([f"127.0.0.1:{node.namesrv.port}"], 10) as service:
            await service.wait_ready(20)
            await service.topic_create(TopicSpec(TOPIC, 4, 4))
            await service.group_create(GroupSpec(GROUP))
        gen = UniqKeyGenerator()
        sent, keys = [], []
        for i in range(MESSAGES):
            key = gen.next()
            keys.append(key)
            sent.append(
                await send(
                    client, node.broker.address, TOPIC, f"order {i}".encode(), i % 4,
                    TAGS="even" if i % 2 == 0 else "odd", KEYS=f"order-{i} all", UNIQ_KEY=key,
                )
            )  # fmt: skip
        for qid in range(4):
            header = UpdateConsumerOffsetRequestHeader(
                consumerGroup=GROUP, topic=TOPIC, queueId=qid, commitOffset=2
            )
            r = await client.invoke(
                node.broker.address, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, header), 10
            )
            assert r.code == 0, r.remark
        await heartbeat(client, node.broker.address, "10.0.0.9@test", GROUP, TOPIC)
        return sent, keys

    sent, keys = asyncio.run_coroutine_threadsafe(setup(), loop).result(60)
    assert node.namesrv is not None and node.broker is not None
    beating = asyncio.run_coroutine_threadsafe(
        keep_heartbeating(client, node.broker.address, "10.0.0.9@test", GROUP, TOPIC), loop
    )
    http = "" if node.http is None else f"127.0.0.1:{node.http.port}"
    yield Cluster(node, loop, f"127.0.0.1:{node.namesrv.port}", node.broker.address, http, sent, keys)
    beating.cancel()

    async def teardown() -> None:
        await client.close()
        await node.stop()

    asyncio.run_coroutine_threadsafe(teardown(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One node for the whole session, with its HTTP endpoint and the data of :func:`seeded_cluster`."""
    with seeded_cluster(node_plan(tmp_path_factory.mktemp("online-store"))) as running:
        assert running.http
        yield running


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty, private rmq config file; the environment cannot leak into tests."""
    path = tmp_path / "rmq" / "config.toml"
    monkeypatch.setenv("RMQ_CONFIG", str(path))
    for var in ("NAMESRV_ADDR", "RMQ_PROFILE", "RMQ_OUTPUT", "RMQ_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    return path


def json_out(result: Result) -> Any:
    """The JSON a successful ``rmq … -o json`` printed."""
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def rmq(config_file: Path) -> Callable[..., Result]:
    """Run ``rmq`` in-process with an isolated config: ``rmq("topic", "list", "-n", addr)``."""
    runner = CliRunner()

    def invoke(*args: object, input: str | None = None) -> Result:
        return runner.invoke(app, [str(a) for a in args], input=input)

    return invoke


def interrupt_watch_after(monkeypatch: pytest.MonkeyPatch, refreshes: int) -> None:
    """Make ``--watch`` end with Ctrl-C on its ``refreshes``-th pause; the nodes' own loops (other
    threads) sleep as usual."""
    calls = 0
    real_sleep = asyncio.sleep
    cli_thread = threading.current_thread()

    async def sleep(delay: float, *args: object) -> object:
        if threading.current_thread() is not cli_thread:
            await real_sleep(delay, *args)
            return None
        nonlocal calls
        calls += 1
        if calls == refreshes:
            raise KeyboardInterrupt
        return None

    monkeypatch.setattr(asyncio, "sleep", sleep)
