"""Every reset saves the offsets it moves; ``rmq group offsets undo`` goes back to them (and can itself
be undone)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from typer.testing import Result

from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode
from broker.protocol.headers import UpdateConsumerOffsetRequestHeader
from broker.protocol.remoting import make_request
from tests.cli.online.conftest import Cluster, send

Rmq = Callable[..., Result]
pytestmark = pytest.mark.servers
TOPIC, GROUP = "UndoTopic", "undo-cg"


@pytest.fixture(scope="module")
def committed(cluster: Cluster) -> None:
    """``undo-cg`` at offset 1 of ``UndoTopic`` (one queue, three messages)."""
    from admin.models import GroupSpec, TopicSpec
    from admin.service import AdminService

    async def setup() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec(TOPIC, 1, 1))
            await service.group_create(GroupSpec(GROUP))
        client = RemotingClient()
        try:
            for i in range(3):
                await send(client, cluster.broker, TOPIC, f"undo {i}".encode(), 0)
            header = UpdateConsumerOffsetRequestHeader(
                consumerGroup=GROUP, topic=TOPIC, queueId=0, commitOffset=1
            )
            answer = await client.invoke(
                cluster.broker, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, header), 10
            )
            assert answer.code == 0, answer.remark
        finally:
            await client.close()

    cluster.call(setup())


def _offset(rmq: Rmq, cluster: Cluster) -> int:
    lag = json.loads(rmq("group", "lag", GROUP, "-t", TOPIC, "-n", cluster.namesrv, "-o", "json").stdout)
    (queue,) = lag["queues"]
    return int(queue["consumerOffset"])


def test_undo_goes_back_to_before_the_reset(cluster: Cluster, rmq: Rmq, committed: None) -> None:
    ns = ("-n", cluster.namesrv)
    assert rmq("group", "offsets", "show", GROUP, *ns).exit_code == 1  # nothing saved yet
    moved = rmq("group", "reset-offset", GROUP, "-t", TOPIC, "--to-latest", "--yes", *ns)
    assert moved.exit_code == 0, moved.output
    assert _offset(rmq, cluster) == 3
    shown = json.loads(rmq("group", "offsets", "show", GROUP, *ns, "-o", "json").stdout)
    assert shown["reason"] == "reset to latest" and [q["current"] for q in shown["queues"]] == [1]
    preview = json.loads(rmq("group", "offsets", "undo", GROUP, "--dry-run", *ns, "-o", "json").stdout)
    assert [(q["current"], q["target"]) for q in preview["queues"]] == [(3, 1)]
    assert _offset(rmq, cluster) == 3  # a dry run changes nothing
    assert rmq("group", "offsets", "undo", GROUP, "--yes", *ns).exit_code == 0
    assert _offset(rmq, cluster) == 1
    assert rmq("group", "offsets", "undo", GROUP, "--yes", *ns).exit_code == 0  # the undo undone
    assert _offset(rmq, cluster) == 3
    assert rmq("group", "offsets", "redo", GROUP, *ns).exit_code == 2
