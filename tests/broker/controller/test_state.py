"""The controller's decisions and the epoch file, without servers: elections prefer the in-sync
replicas, SyncStateSet changes are fenced by epochs, and the epoch file reads what RocketMQ writes."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.controller import replicas as R
from broker.controller.heartbeats import BrokerLiveInfo, HeartbeatTable
from broker.controller.state import ReplicaState
from broker.protocol.codes import ResponseCode
from broker.store.epoch_file import Epoch, EpochFile, consistent_point, decode, encode


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _group(live: HeartbeatTable, size: int = 3) -> ReplicaState:
    """A group of ``size`` brokers, all alive, broker 1 master, all in sync."""
    state = ReplicaState()
    for i in range(1, size + 1):
        for event in R.apply_broker_id(state, "c", "g", i, f"127.0.0.1:{100 + i};1").events:
            state.apply(event)
        _beat(live, i)
    for event in R.elect_master(state, live, "g", 1, designated=False, unclean=False).events:
        state.apply(event)
    decision = R.alter_sync_state_set(state, live, "g", 1, 1, set(range(1, size + 1)), 1)
    for event in decision.events:
        state.apply(event)
    return state


def _beat(live: HeartbeatTable, broker_id: int, epoch: int = 1, offset: int = 0) -> None:
    live.beat(BrokerLiveInfo("c", "g", broker_id, f"127.0.0.1:{100 + broker_id}", 0.0, 3000, epoch, offset))


def _apply(state: ReplicaState, decision: R.Decision) -> None:
    for event in decision.events:
        state.apply(event)


def test_the_first_broker_to_ask_becomes_master_and_then_the_longest_in_sync_replica_wins() -> None:
    clock = Clock()
    live = HeartbeatTable(clock)
    state = _group(live)
    group = state.groups["g"]
    assert (group.master_id, group.master_epoch, group.sync_state_set) == (1, 1, {1, 2, 3})
    clock.now += 10  # every heartbeat stops; 2 and 3 come back, 3 with the longer CommitLog
    _beat(live, 2, offset=500)
    _beat(live, 3, offset=900)
    _apply(state, R.elect_master(state, live, "g", None, designated=False, unclean=False))
    assert (group.master_id, group.master_epoch, group.sync_state_set) == (3, 2, {3})
    assert group.sync_state_set_epoch == 3


def test_a_replica_outside_the_sync_state_set_is_elected_only_when_unclean_elections_are_on() -> None:
    clock = Clock()
    live = HeartbeatTable(clock)
    state = _group(live)
    _apply(state, R.alter_sync_state_set(state, live, "g", 1, 1, {1, 2}, 2))
    clock.now += 10
    _beat(live, 3)  # only the replica that was not in sync is alive
    decision = R.elect_master(state, live, "g", None, designated=False, unclean=False)
    _apply(state, decision)
    assert state.groups["g"].master_id is None  # no master, but nothing lost
    _beat(live, 3)
    _apply(state, R.elect_master(state, live, "g", None, designated=False, unclean=True))
    assert state.groups["g"].master_id == 3


def test_a_live_master_stays_and_stale_epochs_are_fenced() -> None:
    live = HeartbeatTable(Clock())
    state = _group(live)
    with pytest.raises(R.Refused) as still:
        R.elect_master(state, live, "g", None, designated=False, unclean=False)
    assert still.value.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
    with pytest.raises(R.Refused) as fenced:
        R.alter_sync_state_set(state, live, "g", 1, 0, {1}, 2)
    assert fenced.value.code == ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH
    with pytest.raises(R.Refused) as stale_set:
        R.alter_sync_state_set(state, live, "g", 1, 1, {1}, 1)
    assert stale_set.value.code == ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
    with pytest.raises(R.Refused) as not_master:
        R.alter_sync_state_set(state, live, "g", 2, 1, {1, 2}, 2)
    assert not_master.value.code == ResponseCode.CONTROLLER_INVALID_MASTER


def test_broker_ids_are_granted_in_order_and_once() -> None:
    state = ReplicaState()
    _apply(state, R.apply_broker_id(state, "c", "g", 1, "a:1;5"))
    assert R.next_broker_id(state, "g") == 2
    assert R.apply_broker_id(state, "c", "g", 1, "a:1;5").events == []  # the same broker asking again
    with pytest.raises(R.Refused) as taken:
        R.apply_broker_id(state, "c", "g", 1, "b:2;6")
    assert taken.value.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID
    with pytest.raises(R.Refused):
        R.apply_broker_id(state, "c", "g", 5, "b:2;6")


def test_two_brokers_applying_for_one_id_at_once_get_it_once() -> None:
    """Three controllers decide before the log applies: both applications pass the check, the first in
    the log keeps the id and the second broker is told to ask again."""
    state = ReplicaState()
    _apply(state, R.apply_broker_id(state, "c", "g", 1, "m:1;1"))
    first = R.apply_broker_id(state, "c", "g", 2, "a:2;5")
    second = R.apply_broker_id(state, "c", "g", 2, "b:3;6")
    _apply(state, first)
    _apply(state, second)
    assert state.groups["g"].brokers[2].address == "a:2"
    R.check_granted(state, "g", 2, "a:2;5")
    with pytest.raises(R.Refused) as lost:
        R.check_granted(state, "g", 2, "b:3;6")
    assert lost.value.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID
    assert R.next_broker_id(state, "g") == 3


def test_a_snapshot_restores_the_same_state() -> None:
    live = HeartbeatTable(Clock())
    state = _group(live)
    copy = ReplicaState()
    copy.restore(state.snapshot())
    assert copy.snapshot() == state.snapshot()


# -- the epoch file --------------------------------------------------------------------------------


def test_the_epoch_file_is_rocketmqs_checkpoint_format(tmp_path: Path) -> None:
    epochs = EpochFile(tmp_path)
    assert epochs.append(1, 0) and epochs.append(3, 4096)
    assert not epochs.append(2, 8192)  # older than the last: refused
    data = (tmp_path / "epochFileCheckpoint").read_bytes()
    lines = b"1-0\n3-4096\n"
    assert data == b"2\n" + str(zlib.crc32(lines) & 0x7FFFFFFF).encode() + b"\n" + lines
    assert EpochFile(tmp_path).entries == [Epoch(1, 0), Epoch(3, 4096)]


def test_a_torn_epoch_file_falls_back_to_its_copy(tmp_path: Path) -> None:
    EpochFile(tmp_path).append(1, 0)
    (tmp_path / "epochFileCheckpoint").write_bytes(b"2\n123\n1-0\n")
    assert EpochFile(tmp_path).entries == [Epoch(1, 0)]


@given(st.binary(max_size=64))
def test_any_bytes_decode_to_entries_or_a_value_error(data: bytes) -> None:
    try:
        entries = decode(data)
    except ValueError:  # a torn or foreign file: the reader falls back to the copy
        return
    assert decode(encode(entries)) == entries


@given(st.lists(st.tuples(st.integers(1, 50), st.integers(0, 10**12)), max_size=10))
def test_encode_then_decode_gives_the_entries_back(pairs: list[tuple[int, int]]) -> None:
    entries = [Epoch(e, s) for e, s in pairs]
    assert decode(encode(entries)) == entries


def test_the_consistent_point_is_the_end_of_the_last_shared_epoch() -> None:
    old_master = [Epoch(1, 0)]  # it wrote on past 1000 before it died
    new_master = [Epoch(1, 0), Epoch(2, 1000)]
    assert consistent_point(old_master, new_master, 5000) == 1000
    assert consistent_point(new_master, new_master, 5000) == 5000
    assert consistent_point([Epoch(4, 10)], new_master, 5000) == -1


def test_a_group_holds_a_bounded_number_of_brokers() -> None:
    state = ReplicaState()
    for i in range(1, R.MAX_BROKERS_PER_GROUP + 1):
        _apply(state, R.apply_broker_id(state, "c", "g", i, f"h:{i};1"))
    with pytest.raises(R.Refused):
        R.apply_broker_id(state, "c", "g", R.MAX_BROKERS_PER_GROUP + 1, "h:0;1")
