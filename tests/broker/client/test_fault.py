"""Queue selection and latency fault tolerance."""

from __future__ import annotations

from broker.client.fault import LatencyFaultTolerance, QueueSelector, not_available_ms
from broker.protocol.bodies import MessageQueue

QUEUES = [MessageQueue("T", b, i) for b in ("a", "b") for i in range(2)]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def test_not_available_table() -> None:
    assert [not_available_ms(x) for x in (0, 49, 50, 100, 549, 550, 999, 1000, 2000, 3000, 14999, 15000)] == [
        0, 0, 0, 0, 0, 30000, 30000, 60000, 120000, 180000, 180000, 600000,
    ]  # fmt: skip


def test_round_robin_covers_all_queues() -> None:
    selector = QueueSelector()
    assert {selector.select(QUEUES) for _ in range(4)} == set(QUEUES)


def test_retry_avoids_the_broker_that_failed() -> None:
    selector = QueueSelector()
    for _ in range(10):
        assert selector.select(QUEUES, last_failed_broker="a").brokerName == "b"


def test_failed_broker_is_avoided_until_its_penalty_ends() -> None:
    clock = Clock()
    selector = QueueSelector(fault_tolerance=True, clock=clock)
    selector.record("a", 10, failed=True)  # counts as 30 s latency: avoided for 600 s
    assert {selector.select(QUEUES).brokerName for _ in range(10)} == {"b"}
    clock.now += 600_000
    assert {selector.select(QUEUES).brokerName for _ in range(10)} == {"a", "b"}


def test_fast_answers_keep_a_broker_available() -> None:
    clock = Clock()
    selector = QueueSelector(fault_tolerance=True, clock=clock)
    selector.record("a", 40, failed=False)
    assert {selector.select(QUEUES).brokerName for _ in range(10)} == {"a", "b"}


def test_when_all_brokers_are_penalised_the_least_bad_is_used() -> None:
    clock = Clock()
    selector = QueueSelector(fault_tolerance=True, clock=clock)
    selector.record("a", 700, failed=False)  # 30 s
    selector.record("b", 10, failed=True)  # 600 s
    assert selector.select(QUEUES).brokerName == "a"


def test_pick_one_at_least_rotates_over_the_better_half() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    for name, latency in (("a", 100), ("b", 200), ("c", 300), ("d", 400)):
        faults.update(name, latency, 1000)
    assert [faults.pick_one_at_least() for _ in range(4)] == ["a", "b", "a", "b"]
