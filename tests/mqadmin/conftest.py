"""A NameServer + broker with deterministic data for the mqadmin golden tests: topic ``Orders``
(4 queues, 12 messages with keys ``order-N``), group ``orders-cg`` (offsets at 2 per queue, online
through a heartbeat), and an in-process ``mqadmin`` runner."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.codes import RequestCode
from broker.protocol.headers import SendMessageResponseHeader, UpdateConsumerOffsetRequestHeader
from broker.protocol.msgid import UniqKeyGenerator
from broker.protocol.remoting import make_request
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig
from tests.cli_online.conftest import (
    GROUP,
    MESSAGES,
    TOPIC,
    Cluster,
    _start_loop,
    heartbeat,
    keep_heartbeating,
    send,
)

__all__ = ["GROUP", "MESSAGES", "TOPIC", "Cluster", "Run"]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from admin.models import GroupSpec, TopicSpec
    from admin.service import AdminService

    store = tmp_path_factory.mktemp("mqadmin-store")
    plan = NodePlan(
        namesrv=NamesrvConfig(
            listen_port=0,
            kv_config_path=store / "namesrv" / "kvConfig.json",
            config_store_path=store / "namesrv" / "namesrv.properties",
        ),
        broker=BrokerConfig(
            broker_name="broker-a",
            listen_host="127.0.0.1",
            listen_port=0,
            http_port=0,
            ha_listen_port=0,
            grpc_port=-1,
        ),
        store=StoreConfig(
            store_path=store,
            mapped_file_size_commit_log=1 << 20,
            mapped_file_size_consume_queue_units=1000,
            max_hash_slot_num=1000,
            max_index_num=4000,
        ),
    )
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
    yield Cluster(node, loop, f"127.0.0.1:{node.namesrv.port}", node.broker.address, "", sent, keys)
    beating.cancel()

    async def teardown() -> None:
        await client.close()
        await node.stop()

    asyncio.run_coroutine_threadsafe(teardown(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


@pytest.fixture
def mqadmin(node: Cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Run]:
    """Run ``mqadmin`` in-process against :func:`node`: ``mqadmin("topicRoute", "-t", "Orders")``."""
    from cli.mqadmin import main

    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("NAMESRV_ADDR", node.namesrv)

    def invoke(*args: object) -> Run:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
        return Run(code, out.getvalue(), err.getvalue())

    return invoke


@pytest.fixture
def rmq_alias(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., tuple[int, str]]:
    """Run ``rmq <camelCaseCommand> …`` in-process: (exit code, stdout)."""
    from cli.main import main

    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))

    def invoke(*args: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(list(args))
        return code, out.getvalue()

    return invoke
