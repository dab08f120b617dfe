"""``reserve.time``: a topic's queues stop serving messages older than its reserve time (hours), while the
CommitLog files every topic shares keep following ``fileReservedTime``."""

from __future__ import annotations

import time
from pathlib import Path

from broker.store.message_store import GetStatus, MessageStore, PutMessage
from tests.broker.store.helpers import small_config

HOUR = 3600.0


def test_reserve_time_expires_one_topics_old_messages_only(tmp_path: Path) -> None:
    now = [1_700_000_000.0]
    store = MessageStore(small_config(tmp_path), clock=lambda: now[0])
    store.start()
    try:
        for topic in ("Short", "Plain"):
            assert store.put_messages([PutMessage(topic, 0, b"old", {}) for _ in range(10)]).ok
        now[0] += 3 * HOUR
        for topic in ("Short", "Plain"):
            assert store.put_messages([PutMessage(topic, 0, b"new", {}) for _ in range(5)]).ok
        store.set_topic_policies(frozenset(), {"Short": 2})
        commitlog_before = store.commitlog.min_offset
        store.clean_expired()
        assert store.min_offset("Short", 0) == 10  # the ten older than two hours are gone
        assert store.get_messages("Short", 0, 0, 32).status is GetStatus.OFFSET_TOO_SMALL
        assert store.get_messages("Short", 0, 10, 32).count == 5
        assert store.min_offset("Plain", 0) == 0  # a topic without reserve.time keeps them
        assert store.get_messages("Plain", 0, 0, 32).count == 15
        assert store.commitlog.min_offset == commitlog_before  # shared files follow fileReservedTime
    finally:
        store.shutdown()


def test_the_clean_up_thread_applies_it_every_clean_resource_interval(tmp_path: Path) -> None:
    now = [1_700_000_000.0]
    store = MessageStore(small_config(tmp_path, clean_resource_interval_ms=50), clock=lambda: now[0])
    store.start()
    try:
        assert store.put_messages([PutMessage("Short", 0, b"old", {}) for _ in range(3)]).ok
        now[0] += 2 * HOUR
        store.set_topic_policies(frozenset(), {"Short": 1})
        deadline = time.monotonic() + 30
        while store.min_offset("Short", 0) == 0 and time.monotonic() < deadline:
            time.sleep(0.02)  # no clean_expired() call: the store's own thread does it
        assert store.min_offset("Short", 0) == 3
    finally:
        store.shutdown()
