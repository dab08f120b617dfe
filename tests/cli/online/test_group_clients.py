"""``rmq group clients``: what online clients report of themselves (GET_CONSUMER_RUNNING_INFO)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator

import pytest
from typer.testing import Result

from broker.client import ConsumeConcurrentlyStatus, ConsumeFrom, Message, MessageExt, Producer, PushConsumer
from broker.client.remoting_client import RemotingChannel, RemotingClient
from broker.protocol.codes import RequestCode
from broker.protocol.remoting import RemotingCommand
from broker.server import consumer_admin_processor
from tests.cli.online.conftest import Cluster, heartbeat

Rmq = Callable[..., Result]
TOPIC = "ClientsTopic"
GROUP = "clients-cg"
SILENT_GROUP = "silent-cg"
SILENT_ID = "10.0.0.7@silent"


@pytest.fixture(scope="module")
def consumer(cluster: Cluster) -> Iterator[PushConsumer]:
    """A push consumer of ``clients-cg`` that has consumed the 6 messages of ``ClientsTopic``."""
    from admin.models import TopicSpec
    from admin.service import AdminService

    got: list[MessageExt] = []

    async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    push = PushConsumer(GROUP, cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    push.subscribe(TOPIC, "a || b")
    push.register_message_listener_concurrently(listen)

    async def start() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec(TOPIC, 2, 2))
        async with Producer("clients-pg", cluster.namesrv) as producer:
            for i in range(6):
                await producer.send(Message(TOPIC, f"m{i}".encode(), tags="ab"[i % 2]))
        await push.start()
        async with asyncio.timeout(20):
            while len(got) < 6 or sum(push.offsets.read_memory(mq) for mq in push.rebalancer.table) < 6:
                await asyncio.sleep(0.05)

    cluster.call(start())
    yield push
    cluster.call(push.shutdown())


def _json(result: Result) -> dict[str, object]:
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def test_json_shows_each_client_and_its_queues(cluster: Cluster, consumer: PushConsumer, rmq: Rmq) -> None:
    doc = _json(rmq("group", "clients", GROUP, "-n", cluster.namesrv, "-o", "json"))
    assert doc["group"] == GROUP and doc["sameSubscriptions"] is True
    (client,) = doc["clients"]  # type: ignore[misc]
    assert set(client) == {
        "clientId", "address", "language", "version", "broker", "error", "clientVersion",
        "consumeType", "orderly", "startTimestamp", "namesrvAddr", "properties", "subscriptions",
        "queues", "rates", "problems", "jstack",
    }  # fmt: skip
    assert client["clientId"] == consumer.client_id and client["error"] is None
    assert client["consumeType"] == "PUSH" and client["clientVersion"] == "V5_3_3"
    assert {"topic": TOPIC, "expression": "a || b", "expressionType": "TAG"} in client["subscriptions"]
    queues = [q for q in client["queues"] if q["topic"] == TOPIC]
    assert [q["queueId"] for q in queues] == [0, 1]
    assert sum(q["commitOffset"] for q in queues) == 6
    assert set(queues[0]) == {
        "topic", "brokerName", "queueId", "commitOffset", "cachedCount", "cachedSizeMib",
        "cachedMinOffset", "cachedMaxOffset", "consumingCount", "consumingMinOffset",
        "consumingMaxOffset", "locked", "tryUnlockTimes", "lastLockTimestamp", "dropped",
        "lastPullTimestamp", "lastConsumeTimestamp",
    }  # fmt: skip
    assert all(q["lastPullTimestamp"] > 0 and q["lastConsumeTimestamp"] > 0 for q in queues)
    one = _json(
        rmq("group", "clients", GROUP, "--client", consumer.client_id, "-n", cluster.namesrv, "-o", "json")
    )
    assert [c["clientId"] for c in one["clients"]] == [consumer.client_id]  # type: ignore[attr-defined]


def test_table_lists_client_queues_and_rates(cluster: Cluster, consumer: PushConsumer, rmq: Rmq) -> None:
    result = rmq("group", "clients", GROUP, "-n", cluster.namesrv)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"Client {consumer.client_id}" in out
    assert "PUSH" in out and f"{TOPIC} (a || b)" in out
    assert "commit offset" in out and "last consume" in out and "Rates (last minute)" in out


def test_unknown_client_is_not_online(cluster: Cluster, consumer: PushConsumer, rmq: Rmq) -> None:
    result = rmq("group", "clients", GROUP, "--client", "10.0.0.1@nobody", "-n", cluster.namesrv)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "The Consumer <clients-cg> <10.0.0.1@nobody> not online" in result.stderr


def test_a_client_that_never_answers(cluster: Cluster, rmq: Rmq, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumer_admin_processor, "CLIENT_ANSWER_TIMEOUT", 0.5)
    silent = RemotingClient()

    async def ignore(cmd: RemotingCommand, channel: RemotingChannel) -> RemotingCommand | None:
        return None  # heartbeats as a consumer, never answers GET_CONSUMER_RUNNING_INFO

    silent.register(RequestCode.GET_CONSUMER_RUNNING_INFO, ignore)
    cluster.call(heartbeat(silent, cluster.broker, SILENT_ID, SILENT_GROUP, TOPIC))
    try:
        one = rmq("group", "clients", SILENT_GROUP, "--client", SILENT_ID, "-n", cluster.namesrv)
        assert one.exit_code == 1 and one.stderr.count("\n") == 1
        assert f"<{SILENT_ID}> did not answer within 0.5 s" in one.stderr
        listing = _json(rmq("group", "clients", SILENT_GROUP, "-n", cluster.namesrv, "-o", "json"))
        (client,) = listing["clients"]  # type: ignore[misc]
        assert client["clientId"] == SILENT_ID and "did not answer" in client["error"]
        assert client["queues"] == [] and client["consumeType"] is None
    finally:
        cluster.call(silent.close())
