"""A store of many queues: each queue's files appear with its first message, at most the budget's
worth of ConsumeQueue files are mapped at once, and nothing written is lost to a dropped map, through
reads, flushes and a restart."""

from __future__ import annotations

from pathlib import Path

from broker.protocol.message import decode_record
from broker.store.message_store import GetStatus, PutMessage
from tests.broker.store.helpers import open_store

QUEUES, ROUNDS, BUDGET = 40, 3, 4


def _topic(n: int) -> str:
    return f"Many{n % 10}"


def test_queues_beyond_the_map_budget_keep_every_message(tmp_path: Path) -> None:
    store = open_store(tmp_path, max_mapped_consume_queue_files=BUDGET)
    assert not (tmp_path / "consumequeue").exists()  # no queue files before a message
    for r in range(ROUNDS):
        for n in range(QUEUES):
            body = f"{n}:{r}".encode()
            assert store.put_messages([PutMessage(_topic(n), n // 10, body, {})]).ok
        assert len(store.queues.budget) <= BUDGET
    assert len(list((tmp_path / "consumequeue").iterdir())) == 10
    store.queues.flush()
    assert not store.queues.dirty
    for n in range(QUEUES):
        got = store.get_messages(_topic(n), n // 10, 0, 32)
        assert got.status is GetStatus.FOUND
        assert [decode_record(b).body for b in got.records] == [f"{n}:{r}".encode() for r in range(ROUNDS)]
    assert len(store.queues.budget) <= BUDGET
    store.shutdown()

    again = open_store(tmp_path, max_mapped_consume_queue_files=BUDGET)
    assert [again.max_offset(_topic(n), n // 10) for n in range(QUEUES)] == [ROUNDS] * QUEUES
    again.shutdown()
