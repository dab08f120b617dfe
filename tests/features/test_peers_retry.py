"""Proof with real clients: ali-ons fails a message on purpose, it comes back through %RETRY% after
the level-3 delay with reconsumeTimes+1; the C++ client's failures land in %DLQ% after the last retry,
and its delay-level sends arrive no earlier than their level.

ali-ons sends CONSUMER_SEND_MSG_BACK with version V3_4_9 and maxReconsumeTimes 16, which (as in
RocketMQ) takes precedence over the group's retryMaxTimes; the short delay levels keep the 16 retries
to about 20 seconds. Skipped only with RMQ_SKIP_PEERS=1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.bodies import TopicConfig
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.server.config import BrokerConfig
from tests.features.conftest import DELAY_LEVELS, pull_all
from tests.peers import install
from tests.peers.conftest import LoopThread, small_store, wait_until
from tests.peers.runner import (
    run_alions_producer,
    run_cpp_producer,
    start_alions_consumer,
    start_cpp_push_consumer,
)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[LoopThread, Node, AdminApi]]:
    install.ensure_ali_ons()
    install.ensure_cpp_client()
    loop = LoopThread()
    store = small_store(tmp_path / "store", message_delay_level=DELAY_LEVELS)
    plan = NodePlan(
        namesrv=NamesrvConfig(listen_port=0),
        broker=BrokerConfig(broker_name="retry-broker", listen_host="127.0.0.1", listen_port=0, http_port=0),
        store=store,
    )
    node = Node(plan)
    loop.run(node.start())
    client = RemotingClient()
    try:
        yield loop, node, AdminApi(client, timeout=10)
    finally:
        with contextlib.suppress(Exception):
            loop.run(client.close())
        loop.run(node.stop(), timeout=60)
        loop.close()


def _prepare(loop: LoopThread, server: Node, admin: AdminApi, topic: str, group: str) -> tuple[str, str]:
    assert server.namesrv is not None and server.broker is not None
    namesrv, addr = f"127.0.0.1:{server.namesrv.port}", server.broker.address
    loop.run(admin.create_topic(addr, TopicConfig(topicName=topic, readQueueNums=1, writeQueueNums=1)))
    loop.run(admin.create_group(addr, SubscriptionGroupConfig(groupName=group, retryMaxTimes=2)))
    wait_until("route", lambda: loop.run(admin.topic_route([namesrv], topic)).queueDatas, timeout=20)
    return namesrv, addr


def test_alions_failure_comes_back_through_retry_after_level_3(
    node: tuple[LoopThread, Node, AdminApi],
) -> None:
    """ali-ons hands a %RETRY% message to the topic's handler but ignores its answer (its wrapper
    returns nothing), so only the first retry is observable with it; the DLQ proof uses the C++ client."""
    loop, server, admin = node
    namesrv, _addr = _prepare(loop, server, admin, "PeerRetryOns", "PeerRetryOnsGroup")
    with start_alions_consumer(
        namesrv, "PeerRetryOns", group="PeerRetryOnsGroup", fail_first=1, expect=1, timeout=60
    ) as consumer:
        consumer.wait_for("assigned", timeout=30)
        run_alions_producer(namesrv, "PeerRetryOns", count=1, body="again").check()
        result = consumer.finish()
    got = result.received
    assert [(m.reconsume_times, m.action) for m in got] == [(0, "fail"), (1, "ok")], result.describe(
        "deliveries"
    )
    assert got[1].properties.get("RETRY_TOPIC") == "PeerRetryOns" and got[1].body == b"again-0"
    gap = int(got[1].raw["storeTimestamp"]) - int(got[0].raw["storeTimestamp"])
    assert gap >= 2000, f"the retry came back {gap} ms after the original was stored; level 3 is 2 s"


def test_cpp_failures_end_in_the_dead_letter_queue(node: tuple[LoopThread, Node, AdminApi]) -> None:
    """The C++ client sends no maxReconsumeTimes, so the group's retryMaxTimes (2) applies."""
    loop, server, admin = node
    namesrv, addr = _prepare(loop, server, admin, "PeerRetryCpp", "PeerRetryCppGroup")

    def dead() -> int:
        return loop.run(admin.max_offset(addr, "%DLQ%PeerRetryCppGroup", 0))

    with start_cpp_push_consumer(
        namesrv, "PeerRetryCpp", group="PeerRetryCppGroup", fail_first=3, timeout=60
    ) as consumer:
        consumer.wait_for("ready", timeout=30)
        run_cpp_producer(namesrv, "PeerRetryCpp", count=1, body="doomed").check()
        wait_until("the dead letter", dead, timeout=45, every=0.5)
        result = consumer.stop()
    assert [m.reconsume_times for m in result.received] == [0, 1, 2], result.describe("deliveries")
    letters = loop.run(pull_all(admin.client, addr, "%DLQ%PeerRetryCppGroup", 0))
    assert len(letters) == 1 and letters[0].reconsume_times == 3 and letters[0].body == b"doomed-0"
    props = letters[0].properties
    assert (props["DLQ_ORIGIN_TOPIC"], props["RETRY_TOPIC"]) == ("PeerRetryCpp", "PeerRetryCpp")
    assert "ORIGIN_MESSAGE_ID" in props


def test_cpp_delay_level_arrives_no_earlier_than_its_level(node: tuple[LoopThread, Node, AdminApi]) -> None:
    """The C++ client sends with delay level 3 (2 s here): nothing is in the topic before that, and each
    message is stored there no earlier than 2 s after it was born."""
    loop, server, admin = node
    namesrv, addr = _prepare(loop, server, admin, "PeerDelayCpp", "PeerDelayCppGroup")
    sent = run_cpp_producer(namesrv, "PeerDelayCpp", count=3, body="later", delay_level=3).check()
    assert len(sent.sent) == 3, sent.describe("sends")
    assert loop.run(admin.max_offset(addr, "PeerDelayCpp", 0)) == 0, "a delayed message arrived at once"
    wait_until("delivery", lambda: loop.run(admin.max_offset(addr, "PeerDelayCpp", 0)) == 3, timeout=30)
    arrived = loop.run(pull_all(admin.client, addr, "PeerDelayCpp", 0))
    assert sorted(m.body for m in arrived) == [b"later-0", b"later-1", b"later-2"]
    for m in arrived:
        waited = m.store_timestamp - m.born_timestamp
        assert waited >= 2000, f"{m.body!r} arrived {waited} ms after it was born; level 3 is 2 s"
        assert "DELAY" not in m.properties and m.properties.get("REAL_TOPIC") == "PeerDelayCpp"
