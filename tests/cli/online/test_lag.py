"""Lag wherever an operator looks: ``rmq group list``, ``rmq group lag --all`` with its CI limits, the
broker's ``/metrics`` and mqadmin ``consumerProgress`` (offline groups too)."""

from __future__ import annotations

import contextlib
import io
import re
import time
from collections.abc import Callable

import httpx
import pytest
from typer.testing import Result

from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode
from broker.protocol.headers import UpdateConsumerOffsetRequestHeader
from broker.protocol.remoting import make_request
from tests.cli.online.conftest import Cluster, json_out, send

Rmq = Callable[..., Result]
pytestmark = pytest.mark.servers
TOPIC, GROUP, IDLE = "LagTopic", "lag-cg", "idle-lag-cg"


@pytest.fixture(scope="module")
def lagging(cluster: Cluster) -> float:
    """``lag-cg`` two messages behind on queue 0 of ``LagTopic`` (and caught up on queue 1);
    ``idle-lag-cg`` exists and never consumed. Returns when the first unconsumed one was sent."""
    from admin.models import GroupSpec, TopicSpec
    from admin.service import AdminService

    async def setup() -> float:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec(TOPIC, 2, 2))
            await service.group_create(GroupSpec(GROUP))
            await service.group_create(GroupSpec(IDLE))
        client = RemotingClient()
        try:
            await send(client, cluster.broker, TOPIC, b"consumed", 0)
            sent_at = time.time()
            for body in (b"waiting 1", b"waiting 2"):
                await send(client, cluster.broker, TOPIC, body, 0)
            for queue_id, offset in ((0, 1), (1, 0)):
                header = UpdateConsumerOffsetRequestHeader(
                    consumerGroup=GROUP, topic=TOPIC, queueId=queue_id, commitOffset=offset
                )
                answer = await client.invoke(
                    cluster.broker, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, header), 10
                )
                assert answer.code == 0, answer.remark
        finally:
            await client.close()
        return sent_at

    return cluster.call(setup())


def test_group_list_shows_messages_and_time_behind(cluster: Cluster, rmq: Rmq, lagging: float) -> None:
    groups = {
        g["name"]: g for g in json_out(rmq("group", "list", "-n", cluster.namesrv, "-o", "json"))["groups"]
    }
    mine = groups[GROUP]
    waited_ms = (time.time() - lagging) * 1000
    assert mine["lag"] == 2 and 0 < mine["lagMs"] <= waited_ms + 1000
    assert (groups[IDLE]["lag"], groups[IDLE]["lagMs"]) == (0, 0)
    table = rmq("group", "list", "-n", cluster.namesrv).stdout
    assert "lag time" in table and any(line.split()[:1] == [GROUP] for line in table.splitlines())


def test_group_lag_all_and_its_limits(cluster: Cluster, rmq: Rmq, lagging: float) -> None:
    ns = ("-n", cluster.namesrv)
    every = json_out(rmq("group", "lag", "--all", *ns, "-o", "json"))
    assert GROUP in [g["name"] for g in every["groups"]]
    one = json_out(rmq("group", "lag", GROUP, "-t", TOPIC, *ns, "-o", "json"))
    behind = [q for q in one["queues"] if q["diff"]]
    assert [(q["queueId"], q["diff"]) for q in behind] == [(0, 2)] and behind[0]["lagMs"] > 0
    assert one["lagMs"] == behind[0]["lagMs"]
    over = rmq("group", "lag", "--all", "--max-lag", "1", *ns)
    assert over.exit_code == 1 and GROUP in over.stderr and "over the lag limit" in over.stderr
    assert over.stdout.strip(), "the table is still printed"
    assert rmq("group", "lag", "--all", "--max-lag", "1000000", *ns).exit_code == 0
    assert rmq("group", "lag", GROUP, "--max-lag-time", "1d", *ns).exit_code == 0
    late = rmq("group", "lag", GROUP, "--max-lag-time", "0s", *ns)
    assert late.exit_code == 1 and GROUP in late.stderr
    assert rmq("group", "lag", GROUP, "--max-lag-time", "soon", *ns).exit_code == 2
    assert rmq("group", "lag", *ns).exit_code == 2  # neither a group nor --all


def test_metrics_has_lag_per_group(cluster: Cluster, lagging: float) -> None:
    text = httpx.get(f"http://{cluster.http}/metrics", timeout=10).text
    count = re.search(rf'rocketmq_group_lag\{{[^}}]*group="{GROUP}"[^}}]*\}} (\S+)', text)
    seconds = re.search(rf'rocketmq_group_lag_seconds\{{[^}}]*group="{GROUP}"[^}}]*\}} (\S+)', text)
    assert count is not None and seconds is not None, text[:2000]
    assert float(count.group(1)) == 2 and 0 < float(seconds.group(1)) <= time.time() - lagging + 1


def test_mqadmin_consumer_progress_lists_offline_groups(
    cluster: Cluster, lagging: float, config_file: object
) -> None:
    from cli.mqadmin import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["consumerProgress", "-n", cluster.namesrv]) == 0
    rows = {line.split()[0]: line.split() for line in out.getvalue().splitlines()[1:] if line.strip()}
    assert rows[IDLE][1:3] == ["0", "OFFLINE"]
    assert rows[GROUP][-1] == "2"
