"""``rmq transaction list`` shows half messages waiting per topic and the ones given up after the
check limit; ``rmq transaction resume`` has the broker check those again (RESUME_CHECK_HALF_MESSAGE)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from typer.testing import Result

from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.server.config import BrokerConfig
from tests.broker.store.helpers import small_config
from tests.cli.online.conftest import _start_loop, send

Rmq = Callable[..., Result]
pytestmark = pytest.mark.servers
TOPIC = "TxTopic"


@dataclass
class TxNode:
    node: Node
    loop: asyncio.AbstractEventLoop
    namesrv: str

    def check(self) -> None:
        """One pass of the broker's transaction checker."""
        assert self.node.broker is not None
        asyncio.run_coroutine_threadsafe(self.node.broker.transactions.check(), self.loop).result(30)


@pytest.fixture(scope="module")
def tx_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TxNode]:
    """A node whose checker gives up after one check and checks at once; two half messages of
    ``TxTopic`` whose producer never answers."""
    from admin.models import TopicSpec
    from admin.service import AdminService

    store = tmp_path_factory.mktemp("tx-store")
    namesrv_config = NamesrvConfig.in_folder(store / "namesrv")
    namesrv_config.listen_port = 0
    broker = BrokerConfig(broker_name="broker-t", listen_host="127.0.0.1", listen_port=0)
    broker.transaction_check_max = 1
    broker.transaction_time_out = 0
    broker.transaction_check_interval = 3_600_000  # the test runs the checker itself
    node = Node(NodePlan(namesrv=namesrv_config, broker=broker, store=small_config(store)))
    loop = _start_loop()

    async def setup() -> str:
        await node.start()
        assert node.namesrv is not None and node.broker is not None
        namesrv = f"127.0.0.1:{node.namesrv.port}"
        async with AdminService([namesrv], 10) as service:
            await service.wait_ready(20)
            await service.topic_create(TopicSpec(TOPIC, 1, 1))
        client = RemotingClient()
        try:
            for i in range(2):
                await send(
                    client, node.broker.address, TOPIC, f"tx {i}".encode(), 0, TRAN_MSG="true", PGROUP="tx-pg"
                )
        finally:
            await client.close()
        return namesrv

    namesrv = asyncio.run_coroutine_threadsafe(setup(), loop).result(60)
    yield TxNode(node, loop, namesrv)
    asyncio.run_coroutine_threadsafe(node.stop(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


def _listed(rmq: Rmq, tx: TxNode) -> dict[str, object]:
    result = rmq("transaction", "list", "-n", tx.namesrv, "-o", "json")
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_waiting_given_up_and_resumed(tx_node: TxNode, rmq: Rmq) -> None:
    (topic,) = _listed(rmq, tx_node)["topics"]  # type: ignore[misc]
    assert (topic["topic"], topic["waiting"], topic["givenUp"]) == (TOPIC, 2, 0)
    assert topic["oldestWaitingMs"] > 0
    for _ in range(3):  # checked once, then given up
        tx_node.check()
    listed = _listed(rmq, tx_node)
    (topic,) = listed["topics"]  # type: ignore[misc]
    assert (topic["waiting"], topic["givenUp"]) == (0, 2)
    assert [m["topic"] for m in listed["givenUp"]] == [TOPIC, TOPIC]  # type: ignore[attr-defined]
    table = rmq("transaction", "list", "-n", tx_node.namesrv).stdout
    assert TOPIC in table and "given up" in table.lower()
    assert rmq("transaction", "resume", "-n", tx_node.namesrv, "--yes").exit_code == 2  # resume what?
    resumed = rmq("transaction", "resume", "-t", TOPIC, "--yes", "-n", tx_node.namesrv, "-o", "json")
    assert resumed.exit_code == 0, resumed.output
    assert len(json.loads(resumed.stdout)["resumed"]) == 2
    (topic,) = _listed(rmq, tx_node)["topics"]  # type: ignore[misc]
    assert (topic["waiting"], topic["givenUp"], topic["mostChecks"]) == (2, 0, 0)
    missing = rmq("transaction", "resume", "0" * 32, "--yes", "-n", tx_node.namesrv)
    assert missing.exit_code == 1
