"""The official RocketMQ 5 gRPC clients (Python 5.1.2, Node.js 1.0.8) against the broker's gRPC port,
and messages crossing between gRPC and remoting (ali-ons)."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

from tests.broker.grpc.conftest import GrpcCluster, Run, run5
from tests.peers import runner


def _bodies(events: list[dict[str, object]]) -> list[str]:
    return [str(e["body"]) for e in events]


def send5(c: GrpcCluster, topic: str, *args: str, client: str = "py5") -> Run:
    """A 5.x client's producer driver sending to ``topic`` over gRPC; fails the test unless it succeeds."""
    script = "py5_producer.py" if client == "py5" else "node5_producer.js"
    return run5(client, script, "--endpoints", c.endpoints, "--topic", topic, *args).check()


def receive5(
    c: GrpcCluster, topic: str, group: str, expect: int, *args: str, client: str = "py5", kind: str = "simple"
) -> Run:
    """A 5.x client's ``kind`` (simple or push) consumer driver run until ``expect`` messages came."""
    script = f"py5_{kind}_consumer.py" if client == "py5" else f"node5_{kind}_consumer.js"
    common = ["--endpoints", c.endpoints, "--topic", topic, "--group", group, "--expect", str(expect)]
    return run5(client, script, *common, *args)


def test_python_producer_tags_keys_to_simple_consumer(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Normal")
    sent = send5(
        c, "G5Normal", "--count", "4", "--tag", "TagA", "--key-prefix", "key-", "--property", "color=blue"
    )
    assert len(sent.of("sent")) == 4
    got = receive5(c, "G5Normal", "G5Simple", 4, "--tag", "TagA").check()
    received = got.of("received")
    assert sorted(_bodies(received)) == [f"py5-{i}" for i in range(4)]
    assert {e["tag"] for e in received} == {"TagA"}
    assert sorted(k for e in received for k in e["keys"]) == [f"key-{i}" for i in range(4)]
    assert all(e["properties"].get("color") == "blue" for e in received)
    assert {e["message_id"] for e in received} == {e["message_id"] for e in sent.of("sent")}
    assert all(e["delivery_attempt"] == 1 for e in received)
    # the group's committed offsets caught up (what consume stats show)
    offsets = c.call(c.broker.offsets.offsets_of, "G5Simple", "G5Normal")
    assert sum(offsets.values()) == 4


def test_redelivery_after_invisible_time(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Redeliver", queues=2)
    send5(c, "G5Redeliver", "--count", "2")
    got = receive5(
        c, "G5Redeliver", "G5Redeliver", 2, "--mode", "redeliver", "--invisible", "2", "--timeout", "30"
    ).check()
    attempts: dict[str, list[int]] = defaultdict(list)
    for e in got.of("received"):
        attempts[str(e["message_id"])].append(int(e["delivery_attempt"]))
    assert sorted(attempts.values()) == [[1, 2], [1, 2]]


def test_change_invisible_duration(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Change", queues=1)
    send5(c, "G5Change", "--count", "1")
    started = time.monotonic()
    got = receive5(
        c, "G5Change", "G5Change", 1, "--mode", "change", "--invisible", "60", "--timeout", "30"
    ).check()
    assert [e["delivery_attempt"] for e in got.of("received")] == [1, 2]
    assert len(got.of("changed")) == 1
    assert time.monotonic() - started < 25  # back after ~1 s, not after the 60 s invisible time


def test_fifo_topic_delivers_message_groups_in_order(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Fifo", queues=2, message_type="FIFO")
    send5(c, "G5Fifo", "--count", "8", "--kind", "fifo", "--message-groups", "2")
    got = receive5(c, "G5Fifo", "G5Fifo", 8, "--batch", "4").check()
    per_group: dict[str, list[int]] = defaultdict(list)
    for e in got.of("received"):
        per_group[str(e["message_group"])].append(int(str(e["body"]).split("-")[1]))
    assert per_group == {"group-0": [0, 2, 4, 6], "group-1": [1, 3, 5, 7]}


def test_delay_message_by_delivery_timestamp(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Delay", queues=1, message_type="DELAY")
    sent = send5(c, "G5Delay", "--count", "1", "--kind", "delay", "--delay-ms", "3000")
    sent_at = float(sent.of("sent")[0]["t"])
    got = receive5(c, "G5Delay", "G5Delay", 1, "--timeout", "30").check()
    (msg,) = got.of("received")
    assert float(msg["t"]) - sent_at >= 2.5
    assert msg["delivery_timestamp"]


def _update_broker_config(c: GrpcCluster, values: dict[str, str]) -> None:
    """UPDATE_BROKER_CONFIG over remoting, as ``rmq broker config`` sends it."""
    from broker.client.admin_api import AdminApi
    from broker.client.remoting_client import RemotingClient

    async def update() -> None:
        client = RemotingClient()
        try:
            await AdminApi(client, timeout=10).update_broker_config(c.broker.address, values)
        finally:
            await client.close()

    c.loop.run(update())


def test_python_producer_recalls_delay_messages(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Recall", queues=1, message_type="DELAY")
    # recallMessageEnable is off by default: the client is told recall is forbidden (the message is
    # due long after this test, so it stays out of the counts below)
    refused = send5(c, "G5Recall", "--kind", "delay", "--delay-ms", "600000", "--recall")
    (error,) = refused.of("recall_error")
    assert "recallMessageEnable" in error["error"], error
    args = ["--kind", "delay", "--delay-ms", "3000"]
    _update_broker_config(c, {"recallMessageEnable": "true"})
    try:
        recalled = send5(c, "G5Recall", *args, "--count", "2", "--recall")
    finally:
        _update_broker_config(c, {"recallMessageEnable": "false"})
    ids = [e["message_id"] for e in recalled.of("sent")]
    assert [e["message_id"] for e in recalled.of("recalled")] == ids
    assert all(e["recall_handle"] for e in recalled.of("sent"))
    kept = send5(c, "G5Recall", *args, "--count", "1", "--body-prefix", "kept-")
    # the kept message is due after the recalled ones: once it is in the topic, they were dropped
    deadline = time.monotonic() + 30
    while c.max_offset("G5Recall") < 1:
        assert time.monotonic() < deadline, "the kept delay message was not delivered"
        time.sleep(0.2)
    assert c.max_offset("G5Recall") == 1
    assert kept.of("sent")[0]["recall_handle"]


@pytest.mark.parametrize("mode", ["commit", "rollback", "check-commit"])
def test_transactional_producer(grpc_cluster: GrpcCluster, mode: str) -> None:
    c = grpc_cluster
    topic = f"G5Tx{mode.replace('-', '')}"
    c.create_topic(topic, queues=1, message_type="TRANSACTION")
    sent = send5(
        c,
        topic,
        "--count",
        "1",
        "--kind",
        "transaction",
        "--tx",
        mode,
        "--linger",
        "15" if mode.startswith("check") else "0",
    )
    if mode.startswith("check"):
        assert sent.of("checked"), "the broker never asked the checker"
    got = receive5(c, topic, f"G5Tx{mode}", 1, "--timeout", "4" if mode == "rollback" else "20")
    if mode == "rollback":
        assert not got.of("received")
    else:
        got.check()
        assert _bodies(got.of("received")) == ["py5-0"]


def test_push_consumer_consumes_everything(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Push")
    send5(c, "G5Push", "--count", "6")
    got = receive5(c, "G5Push", "G5Push", 6, "--timeout", "30", kind="push").check()
    assert sorted(set(_bodies(got.of("consumed")))) == [f"py5-{i}" for i in range(6)]


def test_push_consumer_failures_end_in_dead_letter_queue(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5PushFail", queues=1)
    policy = {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 1000, 1000]}}
    c.create_group("G5PushFail", retryMaxTimes=2, groupRetryPolicy=policy)
    send5(c, "G5PushFail", "--count", "2")
    got = receive5(c, "G5PushFail", "G5PushFail", 2, "--fail", "--timeout", "9", kind="push").check()
    attempts: dict[str, set[int]] = defaultdict(set)
    for e in got.of("consumed"):
        attempts[str(e["body"])].add(int(e["delivery_attempt"]))
    assert attempts == {"py5-0": {1, 2, 3}, "py5-1": {1, 2, 3}}
    deadline = time.monotonic() + 10
    while c.max_offset("%DLQ%G5PushFail") < 2 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert c.max_offset("%DLQ%G5PushFail") == 2


def test_node_producer_and_simple_consumer(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Node")
    sent = send5(c, "G5Node", "--count", "3", "--tag", "NodeTag", "--key-prefix", "nk", client="node5")
    assert len(sent.of("sent")) == 3
    got = receive5(c, "G5Node", "G5Node", 3, "--tag", "NodeTag", client="node5").check()
    received = got.of("received")
    assert sorted(_bodies(received)) == ["node5-0", "node5-1", "node5-2"]
    assert {e["tag"] for e in received} == {"NodeTag"}


def test_grpc_to_remoting_and_back(grpc_cluster: GrpcCluster) -> None:
    c = grpc_cluster
    c.create_topic("G5Cross")
    c.wait_routed("G5Cross")
    # gRPC (Python 5.x) -> remoting (ali-ons push consumer)
    send5(c, "G5Cross", "--count", "3", "--tag", "X", "--body-prefix", "grpc-")
    consumed = runner.run_alions_consumer(c.namesrv, "G5Cross", group="G5CrossOns", expect=3, timeout=40)
    consumed.check()
    assert sorted(m.body for m in consumed.consumed) == [b"grpc-0", b"grpc-1", b"grpc-2"]
    # remoting (ali-ons producer) -> gRPC (Python 5.x SimpleConsumer and Node.js SimpleConsumer)
    c.create_topic("G5Cross2")
    c.wait_routed("G5Cross2")
    runner.run_alions_producer(c.namesrv, "G5Cross2", count=3, tags="Y", body="ons").check()
    got = receive5(c, "G5Cross2", "G5X2", 3, "--tag", "Y").check()
    assert len(got.of("received")) == 3 and {e["tag"] for e in got.of("received")} == {"Y"}
    got = receive5(c, "G5Cross2", "G5X2Node", 3, client="node5").check()
    assert len(got.of("received")) == 3


def test_one_pop_group_over_remoting_and_grpc(grpc_cluster: GrpcCluster) -> None:
    """The SDK's SimpleConsumer (remoting) and the official one (gRPC) share a group's POP state: what
    one acked never reaches the other, and what one hands back the other receives as a redelivery."""
    from broker.client import Message, Producer, SimpleConsumer

    c = grpc_cluster
    c.create_topic("G5Shared", queues=1)
    c.wait_routed("G5Shared")
    consumer = SimpleConsumer("G5SharedGroup", c.namesrv, await_duration=1.0)
    consumer.subscribe("G5Shared")

    async def receive_two() -> list[str]:
        async with Producer("G5SharedProducer", c.namesrv) as producer:
            for body in (b"acked-over-remoting", b"handed-back"):
                await producer.send(Message("G5Shared", body))
        await consumer.start()
        got = []
        for _ in range(10):
            got += await consumer.receive(8, 60.0)
            if len(got) == 2:
                break
        first, second = sorted(got, key=lambda m: m.queue_offset)
        await consumer.ack(first)
        await consumer.change_invisible_duration(second, 0)
        return [m.body.decode() for m in (first, second)]

    assert c.loop.run(receive_two()) == ["acked-over-remoting", "handed-back"]
    got = receive5(c, "G5Shared", "G5SharedGroup", 1, "--timeout", "30").check()
    received = got.of("received")
    assert [(e["body"], e["delivery_attempt"]) for e in received] == [("handed-back", 2)]

    async def nothing_left() -> list[object]:
        try:
            return list(await consumer.receive(8, 60.0, await_duration=0.5))
        finally:
            await consumer.shutdown()

    assert c.loop.run(nothing_left()) == []
