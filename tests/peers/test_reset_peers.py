"""An operator's online offset reset reaches a running ali-ons consumer at once. ali-ons answers no
broker request (it ignores the RESET_CONSUMER_CLIENT_OFFSET push), so it learns of a reset only from
a pull's answer: the broker wakes the pull it holds for the consumer (15 s, ali-ons' suspend time) and
answers it PULL_OFFSET_MOVED, instead of leaving the consumer unaware until that pull times out."""

from __future__ import annotations

import time

import pytest

from tests.peers import runner
from tests.peers.conftest import Cluster, wait_until
from tests.peers.runner import DriverProcess

pytestmark = pytest.mark.servers
HELD_PULL_SECONDS = 15  # ali-ons' brokerSuspendMaxTimeMillis


def _received(consumer: DriverProcess) -> list[str]:
    return [e.get("keys") or "" for e in list(consumer.events) if e.get("event") == "received"]


def test_an_online_reset_reaches_a_running_alions_consumer_at_once(node_cluster: Cluster) -> None:
    cluster = node_cluster
    topic, group = "ResetPeerTopic", "reset-peer-cg"
    cluster.create_topic(topic, queues=1)
    sent = runner.run_alions_producer(cluster.namesrv, topic, count=3, key_prefix="rs", body="reset")
    sent.check()
    with runner.start_alions_consumer(cluster.namesrv, topic, group=group, timeout=60) as consumer:
        wait_until("the three messages consumed", lambda: len(_received(consumer)) >= 3)
        time.sleep(1)  # its next pull, at the end of the queue, is held by the broker now
        table = cluster.admin(lambda api: api.reset_offset(cluster.broker_addr, group, topic, timestamp=0))
        assert list(table.offsetTable.values()) == [0]
        # no message is sent: only the reset can end the held pull before its suspend time
        wait_until(
            "the first message delivered again",
            lambda: _received(consumer)[3:4] == ["rs-0"],
            timeout=HELD_PULL_SECONDS - 5,
        )
    assert sorted(_received(consumer)) == sorted(["rs-0", "rs-1", "rs-2"] * 2)
