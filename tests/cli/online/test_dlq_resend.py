"""``rmq dlq resend`` delivers a dead letter to the group that failed it and to no other group of its
topic; ``--to-topic`` reaches them all (after naming them); a repeat skips what was resent."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator

import pytest
from typer.testing import Result

from broker.client import ConsumeConcurrentlyStatus, ConsumeFrom, Message, MessageExt, Producer, PushConsumer
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.server.config import BrokerConfig
from tests.admin.tui.conftest import dead_letters
from tests.broker.store.helpers import small_config
from tests.cli.online.conftest import Cluster, _start_loop

Rmq = Callable[..., Result]
pytestmark = pytest.mark.servers
TOPIC, FAILING, HEALTHY = "Invoices", "billing-cg", "audit-cg"


class Consumers:
    """Push consumers of both groups, recording (topic, body) of what their listeners get."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.got: dict[str, list[tuple[str, bytes]]] = {FAILING: [], HEALTHY: []}
        self.clients = [self._consumer(group) for group in self.got]

    def _consumer(self, group: str) -> PushConsumer:
        consumer = PushConsumer(
            group, self.cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, rebalance_interval=1.0
        )
        consumer.subscribe(TOPIC)

        async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
            self.got[group].extend((m.topic, m.body) for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer.register_message_listener_concurrently(listen)
        return consumer

    def bodies(self, group: str) -> list[bytes]:
        return sorted(body for _, body in self.got[group])

    def wait(self, check: Callable[[], bool], what: str) -> None:
        for _ in range(300):
            if check():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}: {self.got}")

    def mark(self, body: bytes) -> None:
        """Send ``body`` to the topic and wait until both groups have it: what was delivered before
        it has been delivered."""

        async def send() -> None:
            async with Producer("dlq-resend-pg", self.cluster.namesrv) as producer:
                await producer.send(Message(TOPIC, body))

        self.cluster.call(send())
        self.wait(lambda: all(body in self.bodies(g) for g in self.got), f"marker {body!r}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A node of this module only: its dead letters stay out of the session node's DLQ listings."""
    from admin.service import AdminService

    store = tmp_path_factory.mktemp("resend-store")
    namesrv_config = NamesrvConfig.in_folder(store / "namesrv")
    namesrv_config.listen_port = 0
    node = Node(
        NodePlan(
            namesrv=namesrv_config,
            broker=BrokerConfig(broker_name="broker-r", listen_host="127.0.0.1", listen_port=0),
            store=small_config(store),
        )
    )
    loop = _start_loop()

    async def start() -> str:
        await node.start()
        assert node.namesrv is not None
        namesrv = f"127.0.0.1:{node.namesrv.port}"
        async with AdminService([namesrv], 10) as service:
            await service.wait_ready(20)
        return namesrv

    namesrv = asyncio.run_coroutine_threadsafe(start(), loop).result(60)
    assert node.broker is not None
    yield Cluster(node, loop, namesrv, node.broker.address, "", [], [])
    asyncio.run_coroutine_threadsafe(node.stop(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


@pytest.fixture(scope="module")
def consumers(cluster: Cluster) -> Iterator[Consumers]:
    """Both groups online and past two dead letters of ``billing-cg`` (sent to the topic first)."""
    from admin.models import GroupSpec, TopicSpec
    from admin.service import AdminService
    from broker.client.remoting_client import RemotingClient

    async def prepare() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec(TOPIC, 1, 1))
            for group in (FAILING, HEALTHY):
                await service.group_create(GroupSpec(group))
        client = RemotingClient()
        try:
            await dead_letters(client, cluster.broker, TOPIC, FAILING, 2)
        finally:
            await client.close()

    cluster.call(prepare())
    group = Consumers(cluster)
    for consumer in group.clients:
        cluster.call(consumer.start())
    group.wait(lambda: all(len(group.got[g]) == 2 for g in group.got), "the first delivery")
    yield group
    for consumer in group.clients:
        cluster.call(consumer.shutdown())


def test_resend_reaches_the_failing_group_only(cluster: Cluster, rmq: Rmq, consumers: Consumers) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    report = json.loads(rmq("dlq", "resend", FAILING, "--offset", "0", "--yes", *ns).stdout)
    (sent,) = report["messages"]
    assert (sent["topic"], sent["sentTo"], sent["error"]) == (TOPIC, f"%RETRY%{FAILING}", None)
    consumers.wait(lambda: len(consumers.got[FAILING]) == 3, "the resent dead letter")
    assert consumers.got[FAILING][-1] == (TOPIC, b'{"n": 0}')  # the listener sees the original topic
    consumers.mark(b"after the resend")
    assert consumers.bodies(HEALTHY) == sorted([b'{"n": 0}', b'{"n": 1}', b"after the resend"])

    # a repeat skips it; --again sends it once more
    again = rmq("dlq", "resend", FAILING, "--offset", "0", "--yes", *ns)
    assert again.exit_code == 0 and json.loads(again.stdout)["skipped"] == [0]
    forced = json.loads(rmq("dlq", "resend", FAILING, "--offset", "0", "--again", "--yes", *ns).stdout)
    assert [m["dlqOffset"] for m in forced["messages"]] == [0]
    consumers.wait(lambda: consumers.bodies(FAILING).count(b'{"n": 0}') == 3, "the forced resend")


def test_to_topic_reaches_every_group_and_says_so(cluster: Cluster, rmq: Rmq, consumers: Consumers) -> None:
    result = rmq("dlq", "resend", FAILING, "--offset", "1", "--to-topic", "--rate", "5", "--yes",
                 "-n", cluster.namesrv)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning" in result.stderr and HEALTHY in result.stderr
    consumers.wait(
        lambda: all(consumers.bodies(g).count(b'{"n": 1}') == 2 for g in consumers.got), "the topic resend"
    )


def test_resend_of_offsets_not_in_the_dlq_fails(cluster: Cluster, rmq: Rmq, consumers: Consumers) -> None:
    result = rmq("dlq", "resend", FAILING, "--offset", "99999", "--yes", "-n", cluster.namesrv)
    assert result.exit_code == 1 and "no dead letter" in result.stderr
    assert rmq("dlq", "resend", FAILING, "--all", "--rate", "0", "-n", cluster.namesrv).exit_code == 2


def test_message_deliver_hands_one_message_to_one_client(
    cluster: Cluster, rmq: Rmq, consumers: Consumers
) -> None:
    from admin.service import AdminService

    async def first_id() -> str:
        async with AdminService([cluster.namesrv], 10) as service:
            return (await service.message_query(TOPIC, key="dead-0")).messages[0].offset_msg_id

    msg_id = cluster.call(first_id())
    client = consumers.clients[1].client_id  # the healthy group's
    before = consumers.bodies(HEALTHY).count(b'{"n": 0}')
    result = rmq(
        "message", "deliver", msg_id, "-g", HEALTHY, "--client", client, "-n", cluster.namesrv, "-o", "json"
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert (answer["result"], answer["clientId"], answer["topic"]) == ("CR_SUCCESS", client, TOPIC)
    assert consumers.bodies(HEALTHY).count(b'{"n": 0}') == before + 1
    gone = rmq(
        "message", "deliver", msg_id, "-g", HEALTHY, "--client", "no-such@client", "-n", cluster.namesrv
    )
    assert gone.exit_code == 1 and "not online" in gone.stderr
