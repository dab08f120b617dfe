"""A compaction topic read by a third-party client: the C++ client's pull consumer, reading every queue
from offset 0, gets each key's newest value and none of the values compaction removed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.client import BlockingProducer, Message, SendStatus
from broker.protocol.bodies import TopicConfig
from tests.peers import runner
from tests.peers.conftest import RmqUp, wait_until

pytestmark = pytest.mark.servers

TOPIC = "InteropCompacted"
KEYS = 40
SENDS = 1200
SETTINGS = (
    "compactionCqMappedFileSize=2116",  # 46 units a queue file, ~10 KiB log files: many closed files
    "compactionMappedFileSize=1",
    "compactionScheduleInternal=300",
)


def test_cpp_pull_consumer_reads_each_keys_newest_value(rmq_up: Callable[..., RmqUp]) -> None:
    cluster = rmq_up(*SETTINGS).cluster
    config = TopicConfig(
        topicName=TOPIC, readQueueNums=2, writeQueueNums=2, attributes={"cleanup.policy": "COMPACTION"}
    )
    cluster.admin(lambda api: api.create_topic(cluster.broker_addr, config))
    wait_until(
        "the topic's route",
        lambda: cluster.admin(lambda api: api.topic_route([cluster.namesrv], TOPIC)).queueDatas,
    )
    with BlockingProducer("PID_compaction_peers", cluster.namesrv) as producer:
        for seq in range(SENDS):
            result = producer.send(Message(TOPIC, f"v{seq}".encode(), keys=[f"key-{seq % KEYS}"]))
            assert result.status is SendStatus.SEND_OK, result
    newest = {f"key-{k}": f"v{max(s for s in range(SENDS) if s % KEYS == k)}".encode() for k in range(KEYS)}

    def compacted() -> bool:
        runtime = cluster.admin(lambda api: api.runtime_info(cluster.broker_addr))
        runs = [
            int(v.rsplit(",", 1)[1])
            for k, v in runtime.items()
            if k.startswith(f"compactionProgress_{TOPIC}_")
        ]
        return len(runs) == 2 and min(runs) >= 1

    wait_until("both queues compacted", compacted, timeout=60)
    result = runner.run_cpp_pull_consumer(cluster.namesrv, TOPIC, timeout=60)
    result.check()
    latest: dict[str, bytes] = {}
    for message in result.received:
        latest[message.keys or ""] = message.body
    assert latest == newest
    assert len(result.received) < SENDS / 2, "superseded values were read"
