"""Helpers for the SDK tests: an asyncio runner and a NameServer + broker node in a temporary folder."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from broker.client.api import ClientAPI, request
from broker.client.remoting_client import RemotingClient
from broker.protocol import headers as H
from broker.protocol.codes import RequestCode, ResponseCode

SERVERS_AVAILABLE = (
    importlib.util.find_spec("broker.server.broker") is not None
    and importlib.util.find_spec("broker.namesrv.server") is not None
)
needs_servers = pytest.mark.skipif(
    not SERVERS_AVAILABLE, reason="broker.server.broker / broker.namesrv.server cannot be imported yet"
)
FAST_DELAY_LEVELS = " ".join(["1s"] * 18)


def async_test(timeout: float = 60.0) -> Callable[[Callable[..., Awaitable[None]]], Callable[..., None]]:
    def wrap(fn: Callable[..., Awaitable[None]]) -> Callable[..., None]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> None:
            asyncio.run(asyncio.wait_for(fn(*args, **kwargs), timeout))

        return run

    return wrap


class Cluster:
    """A running NameServer + broker and an admin connection to them."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self.namesrv = f"127.0.0.1:{node.namesrv.port}"
        self.broker_addr: str = node.broker.address
        self.broker_name: str = node.broker.config.broker_name
        self.api = ClientAPI(RemotingClient(), timeout=5.0)

    async def supports(self, code: int) -> bool:
        """Whether the broker serves request ``code`` (it answers 3 for unknown codes)."""
        response = await self.api.remoting.invoke(self.broker_addr, request(code), 5.0)
        return response.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED

    async def create_topic(self, topic: str, queues: int = 4) -> None:
        """UPDATE_AND_CREATE_TOPIC, then wait until the NameServer routes it."""
        header = H.CreateTopicRequestHeader(
            topic=topic,
            defaultTopic="TBW102",
            readQueueNums=queues,
            writeQueueNums=queues,
            perm=6,
            topicFilterType="SINGLE_TAG",
        )
        await self.api.invoke(self.broker_addr, request(RequestCode.UPDATE_AND_CREATE_TOPIC, header))
        await self.wait_route(topic)

    async def wait_route(self, topic: str) -> None:
        while await self.api.route([self.namesrv], topic) is None:
            await asyncio.sleep(0.05)


@asynccontextmanager
async def running_cluster(
    tmp: Path, broker: dict[str, Any] | None = None, **store: Any
) -> AsyncIterator[Cluster]:
    from broker.namesrv.config import NamesrvConfig
    from broker.node import Node, NodePlan
    from broker.server.config import BrokerConfig
    from broker.store.config import StoreConfig

    plan = NodePlan(
        namesrv=NamesrvConfig(
            listen_port=0, kv_config_path=tmp / "kv.json", config_store_path=tmp / "namesrv.properties"
        ),
        broker=BrokerConfig(listen_port=0, http_port=0, broker_name="broker-a", **(broker or {})),
        store=StoreConfig(
            store_path=tmp / "store",
            mapped_file_size_commit_log=1 << 20,
            mapped_file_size_consume_queue_units=1000,
            max_hash_slot_num=1000,
            max_index_num=4000,
            **store,
        ),
    )
    node = Node(plan)
    await node.start()
    cluster = Cluster(node)
    try:
        while not node.ready:
            await asyncio.sleep(0.02)
        await cluster.wait_route("TBW102")
        yield cluster
    finally:
        await cluster.api.remoting.close()
        await node.stop()
