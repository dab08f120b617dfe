"""The project's SDK against real third-party clients:
messages produced by the SDK are consumed by ali-ons and by the C++ client, and the other way round,
with bodies, tags and keys byte-identical."""

from __future__ import annotations

import time

from broker.client import BlockingLitePullConsumer, BlockingProducer, ConsumeFrom, Message, SendStatus
from broker.client.message import MessageExt
from tests.peers import runner
from tests.peers.conftest import Cluster
from tests.peers.test_interop import TAGS, assert_identical, expected_messages, produce


def _sdk_produce(cluster: Cluster, topic: str, prefix: str, count: int) -> dict[str, tuple[bytes, str]]:
    want = expected_messages(prefix, count)
    with BlockingProducer("PID_sdk_interop", cluster.namesrv) as producer:
        for key, (body, tag) in want.items():
            result = producer.send(Message(topic, body, tags=tag, keys=[key]))
            assert result.status is SendStatus.SEND_OK, result
    return want


def _sdk_consume(
    cluster: Cluster, topic: str, group: str, count: int, timeout: float = 40
) -> list[MessageExt]:
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout
    with BlockingLitePullConsumer(group, cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET) as consumer:
        consumer.subscribe(topic)
        while len(got) < count and time.monotonic() < deadline:
            got += consumer.poll(timeout=1.0)
    return got


def test_sdk_to_alions_and_cpp(node_cluster: Cluster) -> None:
    cluster = node_cluster
    topic = "InteropSdkToPeers"
    cluster.create_topic(topic)
    want = _sdk_produce(cluster, topic, "s2p", 30)

    with runner.start_alions_consumer(
        cluster.namesrv, topic, group="GID_sdk_to_alions", expect=30, timeout=40, linger=1
    ) as consumer:
        alions = consumer.finish().check()
    assert_identical("ali-ons consumer of SDK messages", alions.consumed, want)
    assert len(alions.consumed) == 30, alions.describe(f"consumed {len(alions.consumed)}, want 30")

    pulled = runner.run_cpp_pull_consumer(cluster.namesrv, topic, group="GID_sdk_to_cpp", timeout=30).check()
    assert_identical("C++ pull consumer of SDK messages", pulled.received, want)
    assert len(pulled.received) == 30, pulled.describe(f"pulled {len(pulled.received)}, want 30")


def test_alions_and_cpp_to_sdk(node_cluster: Cluster) -> None:
    cluster = node_cluster
    topic = "InteropPeersToSdk"
    cluster.create_topic(topic)
    want = expected_messages("a2s", 20) | expected_messages("c2s", 20)
    produce("alions", cluster, topic, "a2s", 20)
    produce("cpp", cluster, topic, "c2s", 20)

    got = _sdk_consume(cluster, topic, "GID_peers_to_sdk", 40)
    seen = {}
    for m in got:
        assert len(m.keys) == 1 and m.keys[0] in want, f"unexpected message keys {m.keys!r} tags {m.tags!r}"
        seen[m.keys[0]] = (m.body, m.tags)
    missing = sorted(set(want) - set(seen))
    assert not missing, f"SDK consumer missed {len(missing)} of {len(want)}: {missing[:5]}"
    for key, (body, tag) in want.items():
        assert seen[key] == (body, tag), f"{key} came back as {seen[key]!r}, sent {(body, tag)!r}"
    assert set(TAGS) == {tag for _body, tag in seen.values()}
