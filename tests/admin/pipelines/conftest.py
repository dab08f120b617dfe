"""One SparkSession for every Spark test, and one NameServer + broker in a background thread with a
topic of known messages."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from broker.client.message import Message
from broker.client.producer import Producer
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pyspark_rocketmq.py is a top-level module of the repository
    sys.path.insert(0, str(ROOT))

T = TypeVar("T")
TOPIC = "SparkOrders"
BROKER = "broker-s"
QUEUES = 4
MESSAGES = 40


@dataclass
class Sent:
    body: bytes
    tags: str
    keys: str
    uniq_key: str
    queue_id: int
    queue_offset: int


@dataclass
class Cluster:
    node: Node
    loop: asyncio.AbstractEventLoop
    namesrv: str
    broker: str
    store: Path
    sent: list[Sent]

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(60)

    def send(self, topic: str, bodies: list[bytes], tags: str = "t") -> list[Sent]:
        async def go() -> list[Sent]:
            out = []
            async with Producer("spark-test-pg", self.namesrv) as producer:
                for i, body in enumerate(bodies):
                    msg = Message(topic, body, tags=tags if tags else None, keys=[f"k{i}", "all"])
                    r = await producer.send(msg)
                    out.append(
                        Sent(body, tags, f"k{i} all", r.msg_id, r.message_queue.queueId, r.queue_offset)
                    )
            return out

        return self.call(go())


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from admin.pipelines.session import build_session

    session = build_session("local[2]", "rmqkit-tests", {"spark.default.parallelism": "2"}, short_jobs=True)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Topic ``SparkOrders`` (4 queues) with 40 messages, tags even/odd, keys ``k<i> all``."""
    from admin.models import TopicSpec
    from admin.service import AdminService

    store = tmp_path_factory.mktemp("spark-store")
    plan = NodePlan(
        namesrv=NamesrvConfig(
            listen_port=0,
            kv_config_path=store / "namesrv" / "kvConfig.json",
            config_store_path=store / "namesrv" / "namesrv.properties",
        ),
        broker=BrokerConfig(
            broker_name=BROKER,
            listen_host="127.0.0.1",
            listen_port=0,
            http_port=0,
            ha_listen_port=0,
            grpc_port=-1,
            enable_property_filter=True,  # SQL92 subExpressions
        ),
        store=StoreConfig(
            store_path=store / "data",
            mapped_file_size_commit_log=4 << 20,
            mapped_file_size_consume_queue_units=1000,
            max_hash_slot_num=1000,
            max_index_num=4000,
        ),
    )
    node = Node(plan)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="spark-test-node", daemon=True).start()

    async def setup() -> str:
        await node.start()
        assert node.namesrv is not None
        namesrv = f"127.0.0.1:{node.namesrv.port}"
        async with AdminService([namesrv], 10) as service:
            await service.wait_ready(20)
            await service.topic_create(TopicSpec(TOPIC, QUEUES, QUEUES))
            await service.topic_create(TopicSpec("SparkOut", 2, 2))
            await service.topic_create(TopicSpec("SparkStream", 2, 2))
        return namesrv

    namesrv = asyncio.run_coroutine_threadsafe(setup(), loop).result(60)
    assert node.broker is not None
    c = Cluster(node, loop, namesrv, node.broker.address, store / "data", [])

    async def produce() -> list[Sent]:
        out = []
        async with Producer("spark-test-pg", namesrv) as producer:
            for i in range(MESSAGES):
                tags = "even" if i % 2 == 0 else "odd"
                msg = Message(TOPIC, f"order {i}".encode(), tags=tags, keys=[f"order-{i}", "all"])
                r = await producer.send(msg)
                out.append(
                    Sent(msg.body, tags, f"order-{i} all", r.msg_id, r.message_queue.queueId, r.queue_offset)
                )
        return out

    c.sent = c.call(produce())
    yield c
    asyncio.run_coroutine_threadsafe(node.stop(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)
