"""Retention with an injected clock and disk-usage source."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from broker.store.message_store import MessageStore, PutMessage, PutStatus
from tests.broker.store.helpers import small_config

HOUR = 3600.0


class World:
    """The clock and the disk the store sees."""

    def __init__(self) -> None:
        self.now = dt.datetime(2026, 11, 20, 10, 0).timestamp()  # 10:00, not deleteWhen
        self.disk = 0.5

    def clock(self) -> float:
        return self.now

    def usage(self, _path: Path) -> float:
        return self.disk


def _filled_store(tmp_path: Path, world: World) -> MessageStore:
    store = MessageStore(small_config(tmp_path), clock=world.clock, disk_usage=world.usage)
    store.start()
    for i in range(300):
        assert store.put_messages([PutMessage("T", i % 2, b"z" * 800, {"KEYS": f"k{i}"})]).ok
    assert len(store.commitlog.files.files) >= 4
    return store


def _age_files(store: MessageStore, world: World, hours: float) -> None:
    for mf in store.commitlog.files.files:
        os.utime(mf.path, (world.now - hours * HOUR, world.now - hours * HOUR))


def test_expired_files_wait_for_delete_when(tmp_path: Path) -> None:
    world = World()
    store = _filled_store(tmp_path, world)
    _age_files(store, world, 100)
    assert store.clean_expired().deleted_files == []  # 10:00 is not "04"
    world.now = dt.datetime(2026, 11, 21, 4, 5).timestamp()
    _age_files(store, world, 100)
    report = store.clean_expired()
    n = len(report.deleted_files)
    assert n >= 3 and len(store.commitlog.files.files) == 1  # never the file being written
    # queues and index follow the CommitLog's new min offset
    assert store.min_offset("T", 0) > 0
    first = store.get_messages("T", 0, store.min_offset("T", 0), 1)
    assert first.records and store.commitlog.min_offset <= int.from_bytes(first.records[0][28:36], "big")
    store.shutdown()


def test_unexpired_files_stay_until_the_disk_is_forcibly_full(tmp_path: Path) -> None:
    world = World()
    store = _filled_store(tmp_path, world)
    _age_files(store, world, 1)
    world.disk = 0.80  # above 75 %: expired files would go, but none is expired
    assert store.clean_expired().deleted_files == []
    world.disk = 0.86  # above 85 %: the oldest go even unexpired
    files_before = len(store.commitlog.files.files)
    assert len(store.clean_expired().deleted_files) == files_before - 1
    store.shutdown()


def test_writes_refused_above_warning_level_until_space_returns(tmp_path: Path) -> None:
    world = World()
    store = _filled_store(tmp_path, world)
    _age_files(store, world, 1)
    world.disk = 0.91
    store.clean_expired()
    refused = store.put_messages([PutMessage("T", 0, b"x", {})])
    assert refused.status is PutStatus.SERVICE_NOT_AVAILABLE and "90% full" in refused.remark
    world.disk = 0.5
    store.clean_expired()
    assert store.put_messages([PutMessage("T", 0, b"x", {})]).ok
    store.shutdown()


def test_retention_survives_restart(tmp_path: Path) -> None:
    world = World()
    store = _filled_store(tmp_path, world)
    _age_files(store, world, 100)
    store.clean_expired(manual=True)
    low = store.min_offset("T", 1)
    store.shutdown()
    store = MessageStore(small_config(tmp_path), clock=world.clock, disk_usage=world.usage)
    store.start()
    assert store.min_offset("T", 1) == low
    assert store.put_messages([PutMessage("T", 1, b"again", {})]).ok
    store.shutdown()
