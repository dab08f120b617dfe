"""Allocation strategies: tables worked out by hand with RocketMQ's algorithms, plus properties."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from broker.protocol.allocate import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateStrategy,
    java_queue_string,
    md5_hash,
)
from broker.protocol.bodies import MessageQueue


def queues(n: int, broker: str = "b") -> list[MessageQueue]:
    return [MessageQueue("T", broker, i) for i in range(n)]


def ids(mqs: list[MessageQueue]) -> list[int]:
    return [mq.queueId for mq in mqs]


def table(strategy: AllocateStrategy, mqs: list[MessageQueue], cids: list[str]) -> dict[str, list[int]]:
    return {cid: ids(strategy.allocate("g", cid, mqs, cids)) for cid in cids}


def test_averagely_tables() -> None:
    avg = AllocateAveragely()
    # 5 % 2 = 1: the first consumer takes 5 // 2 + 1 = 3 from 0, the second 2 from 1 * 2 + 1 = 3
    assert table(avg, queues(5), ["c0", "c1"]) == {"c0": [0, 1, 2], "c1": [3, 4]}
    # 8 % 3 = 2: sizes 3, 3, 2; starts 0, 3, 2 * 2 + 2 = 6
    assert table(avg, queues(8), ["c0", "c1", "c2"]) == {"c0": [0, 1, 2], "c1": [3, 4, 5], "c2": [6, 7]}
    # fewer queues than consumers: one each while they last
    assert table(avg, queues(2), ["c0", "c1", "c2"]) == {"c0": [0], "c1": [1], "c2": []}
    assert table(avg, queues(4), ["c0", "c1"]) == {"c0": [0, 1], "c1": [2, 3]}


def test_averagely_by_circle_tables() -> None:
    circle = AllocateAveragelyByCircle()
    assert table(circle, queues(5), ["c0", "c1"]) == {"c0": [0, 2, 4], "c1": [1, 3]}
    assert table(circle, queues(2), ["c0", "c1", "c2"]) == {"c0": [0], "c1": [1], "c2": []}


def test_unknown_consumer_gets_nothing() -> None:
    for strategy in (AllocateAveragely(), AllocateAveragelyByCircle(), AllocateConsistentHash()):
        assert strategy.allocate("g", "stranger", queues(4), ["c0", "c1"]) == []


def test_md5_hash_is_the_first_four_digest_bytes() -> None:
    assert md5_hash("") == 0xD41D8CD9  # md5("") = d41d8cd98f00b204e9800998ecf8427e
    assert java_queue_string(MessageQueue("T", "b", 3)) == "MessageQueue [topic=T, brokerName=b, queueId=3]"


def ring_owner(mq: MessageQueue, cids: list[str], vnodes: int) -> str:
    """ConsistentHashRouter by hand: the first virtual node at or after the key's hash, else the first."""
    points: dict[int, str] = {}
    for cid in cids:
        for i in range(vnodes):
            key = f"{cid}-{i}"
            points[int(hashlib.md5(key.encode()).hexdigest()[:8], 16)] = cid
    h = int(hashlib.md5(java_queue_string(mq).encode()).hexdigest()[:8], 16)
    at_or_after = [p for p in points if p >= h]
    return points[min(at_or_after)] if at_or_after else points[min(points)]


def test_consistent_hash_table() -> None:
    mqs, cids = queues(8), ["10.0.0.1@1", "10.0.0.2@1", "10.0.0.3@1"]
    strategy = AllocateConsistentHash(virtual_nodes=10)
    expected = {cid: [mq.queueId for mq in mqs if ring_owner(mq, cids, 10) == cid] for cid in cids}
    assert table(strategy, mqs, cids) == expected
    assert sum(len(v) for v in expected.values()) == 8


class RoomByPrefix:
    """Rooms are the part before '-' of a broker name and before '@' of a client id."""

    def broker_deploy_in(self, mq: MessageQueue) -> str:
        return mq.brokerName.split("-")[0]

    def consumer_deploy_in(self, client_id: str) -> str:
        return client_id.split("@")[0]


def test_machine_room_nearby_table() -> None:
    mqs = sorted(queues(2, "bj-c") + queues(2, "hz-a") + queues(2, "sh-b"))
    cids = ["hz@1", "hz@2", "sh@1"]
    strategy = AllocateMachineRoomNearby(AllocateAveragely(), RoomByPrefix())
    got = {
        cid: [(mq.brokerName, mq.queueId) for mq in strategy.allocate("g", cid, mqs, cids)] for cid in cids
    }
    # hz queues split between hz consumers; sh's both to sh@1; bj has no consumer: shared by all three
    assert got == {
        "hz@1": [("hz-a", 0), ("bj-c", 0)],
        "hz@2": [("hz-a", 1), ("bj-c", 1)],
        "sh@1": [("sh-b", 0), ("sh-b", 1)],
    }
    assert strategy.name == "MACHINE_ROOM_NEARBY-AVG"


STRATEGIES: list[AllocateStrategy] = [
    AllocateAveragely(),
    AllocateAveragelyByCircle(),
    AllocateConsistentHash(),
    AllocateConsistentHash(virtual_nodes=3),
    AllocateMachineRoomNearby(AllocateAveragely(), RoomByPrefix()),
]


@given(
    n_queues=st.integers(1, 40),
    brokers=st.lists(st.sampled_from(["hz-a", "sh-b", "bj-c"]), min_size=1, max_size=3, unique=True),
    cids=st.lists(
        st.sampled_from([f"{r}@{i}" for r in ("hz", "sh", "gz") for i in range(6)]), min_size=1, unique=True
    ),
    which=st.integers(0, len(STRATEGIES) - 1),
)
def test_every_queue_is_allocated_exactly_once(
    n_queues: int, brokers: list[str], cids: list[str], which: int
) -> None:
    strategy = STRATEGIES[which]
    mqs = sorted([mq for b in brokers for mq in queues(n_queues, b)])
    cids = sorted(cids)
    allocated = [mq for cid in cids for mq in strategy.allocate("g", cid, mqs, cids)]
    assert sorted(allocated) == mqs
    again = [mq for cid in cids for mq in strategy.allocate("g", cid, list(mqs), list(cids))]
    assert again == allocated
