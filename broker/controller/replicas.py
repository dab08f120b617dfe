"""What each controller request decides, as RocketMQ's ReplicasInfoManager and DefaultElectPolicy do:
checks against the current state, then the events that carry the change (applied by the caller
through replication) and the answer to give once they are applied.

Election: candidates are the live members of the SyncStateSet; only with enableElectUncleanMaster do
live brokers outside it qualify (they may lack acknowledged messages). A live old master stays
master. Among candidates the highest epoch wins, then the longest CommitLog, then the smallest
electionPriority, then the smallest id. A group that never had a master takes the broker that asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.controller import state as S
from broker.controller.heartbeats import HeartbeatTable
from broker.controller.state import Event, GroupState, ReplicaState
from broker.protocol.codes import ResponseCode

MAX_GROUPS = 10_000  # broker groups one controller keeps (peers cannot grow the state without bound)
MAX_BROKERS_PER_GROUP = 64


class Refused(Exception):
    """A request the state does not allow: the RocketMQ response code and why."""

    def __init__(self, code: ResponseCode, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


@dataclass(slots=True)
class Decision:
    events: list[Event] = field(default_factory=list)


def _group(state: ReplicaState, broker_name: str) -> GroupState:
    group = state.groups.get(broker_name)
    if group is None:
        raise Refused(ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST, f"no broker group {broker_name}")
    return group


def next_broker_id(state: ReplicaState, broker_name: str) -> int:
    group = state.groups.get(broker_name)
    return 1 if group is None else group.next_id


def apply_broker_id(
    state: ReplicaState, cluster: str, broker_name: str, broker_id: int, check_code: str
) -> Decision:
    """APPLY_BROKER_ID: the next id is granted; asking again with the same check code is harmless."""
    group = state.groups.get(broker_name)
    address = check_code.split(";", 1)[0]
    if group is not None and broker_id in group.brokers:
        if group.brokers[broker_id].check_code == check_code:
            return Decision()
        raise Refused(
            ResponseCode.CONTROLLER_BROKER_ID_INVALID,
            f"broker id {broker_id} of {broker_name} belongs to another broker",
        )
    if group is None and len(state.groups) >= MAX_GROUPS:
        raise Refused(
            ResponseCode.CONTROLLER_INVALID_REQUEST, f"this controller keeps at most {MAX_GROUPS} groups"
        )
    if group is not None and len(group.brokers) >= MAX_BROKERS_PER_GROUP:
        raise Refused(
            ResponseCode.CONTROLLER_BROKER_ID_INVALID,
            f"{broker_name} has {MAX_BROKERS_PER_GROUP} brokers already",
        )
    expected = 1 if group is None else group.next_id
    if broker_id != expected:
        raise Refused(
            ResponseCode.CONTROLLER_BROKER_ID_INVALID,
            f"broker id {broker_id} of {broker_name} is not the next one ({expected})",
        )
    event = {
        "type": S.APPLY_BROKER_ID,
        "clusterName": cluster,
        "brokerName": broker_name,
        "brokerId": broker_id,
        "address": address,
        "checkCode": check_code,
    }
    return Decision([event])


def check_granted(state: ReplicaState, broker_name: str, broker_id: int, check_code: str) -> None:
    """After an APPLY_BROKER_ID was committed: refuse it when the log gave the id to another broker
    that applied at the same moment (that broker asks again for the next id)."""
    group = state.groups.get(broker_name)
    entry = None if group is None else group.brokers.get(broker_id)
    if entry is None or entry.check_code != check_code:
        raise Refused(
            ResponseCode.CONTROLLER_BROKER_ID_INVALID,
            f"broker id {broker_id} of {broker_name} went to another broker that applied at the same time",
        )


def register_broker(state: ReplicaState, broker_name: str, broker_id: int, address: str) -> Decision:
    """REGISTER_BROKER_TO_CONTROLLER: a known id announces its (maybe new) address."""
    group = _group(state, broker_name)
    entry = group.brokers.get(broker_id)
    if entry is None:
        raise Refused(
            ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
            f"broker id {broker_id} of {broker_name} was never applied for",
        )
    if entry.address == address:
        return Decision()
    event = {"type": S.UPDATE_ADDRESS, "brokerName": broker_name, "brokerId": broker_id, "address": address}
    return Decision([event])


def _rank(live: HeartbeatTable, broker_name: str, broker_id: int) -> tuple[int, int, int, int]:
    info = live.get(broker_name, broker_id)
    if info is None:
        return (0, 0, 0, broker_id)
    return (-info.epoch, -info.max_offset, info.election_priority, broker_id)


def elect_master(
    state: ReplicaState,
    live: HeartbeatTable,
    broker_name: str,
    requested: int | None,
    *,
    designated: bool,
    unclean: bool,
) -> Decision:
    """ELECT_MASTER (and the controller's own elections after a master's heartbeats stop)."""
    group = _group(state, broker_name)
    alive = [i for i in sorted(group.brokers) if live.alive(broker_name, i)]
    if group.never_had_master and requested is not None and requested in group.brokers:
        return Decision([_elect_event(broker_name, requested)])
    in_sync = [i for i in alive if i in group.sync_state_set]
    candidates = in_sync or (alive if unclean else [])
    if designated:
        if requested is None or requested not in alive:
            raise Refused(
                ResponseCode.CONTROLLER_ELECT_MASTER_FAILED,
                f"broker {requested} of {broker_name} is not alive and cannot become master",
            )
        if requested not in candidates and requested not in group.sync_state_set and not unclean:
            raise Refused(
                ResponseCode.CONTROLLER_ELECT_MASTER_FAILED,
                f"broker {requested} of {broker_name} is not in the SyncStateSet "
                "(enableElectUncleanMaster is false)",
            )
        if requested == group.master_id:
            raise Refused(ResponseCode.CONTROLLER_MASTER_STILL_EXIST, f"{requested} is master already")
        return Decision([_elect_event(broker_name, requested)])
    if group.master_id is not None and group.master_id in alive:
        raise Refused(
            ResponseCode.CONTROLLER_MASTER_STILL_EXIST,
            f"the master {group.master_id} of {broker_name} is still alive",
        )
    if not candidates:
        if group.master_id is None:
            raise Refused(
                ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE,
                f"no live broker of {broker_name} can become master",
            )
        return Decision([_elect_event(broker_name, None)])  # the master is gone: say so, keep waiting
    best = min(candidates, key=lambda i: _rank(live, broker_name, i))
    return Decision([_elect_event(broker_name, best)])


def _elect_event(broker_name: str, master_id: int | None) -> Event:
    return {"type": S.ELECT_MASTER, "brokerName": broker_name, "masterId": master_id}


def alter_sync_state_set(
    state: ReplicaState,
    live: HeartbeatTable,
    broker_name: str,
    master_id: int,
    master_epoch: int,
    new_set: Iterable[int],
    set_epoch: int,
) -> Decision:
    """ALTER_SYNC_STATE_SET from the master: only the current master at the current epochs may."""
    group = _group(state, broker_name)
    members = set(new_set)
    if group.master_id != master_id:
        raise Refused(
            ResponseCode.CONTROLLER_INVALID_MASTER, f"{master_id} is not the master of {broker_name}"
        )
    if group.master_epoch != master_epoch:
        raise Refused(
            ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH,
            f"master epoch {master_epoch} is not the current {group.master_epoch}",
        )
    if group.sync_state_set_epoch != set_epoch:
        raise Refused(
            ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            f"SyncStateSet epoch {set_epoch} is not the current {group.sync_state_set_epoch}",
        )
    if master_id not in members:
        raise Refused(ResponseCode.CONTROLLER_INVALID_REPLICAS, "the SyncStateSet must hold the master")
    unknown = [i for i in members if i not in group.brokers]
    dead = [i for i in members - group.sync_state_set if not live.alive(broker_name, i)]
    if unknown or dead:
        raise Refused(
            ResponseCode.CONTROLLER_INVALID_REPLICAS, f"brokers {sorted(unknown + dead)} cannot be in sync"
        )
    if members == group.sync_state_set:
        return Decision()
    event = {"type": S.ALTER_SYNC_STATE_SET, "brokerName": broker_name, "syncStateSet": sorted(members)}
    return Decision([event])


def clean_broker_data(
    state: ReplicaState,
    live: HeartbeatTable,
    broker_name: str,
    ids: list[int] | None,
    *,
    clean_living: bool,
) -> Decision:
    """CLEAN_BROKER_DATA: forget brokers (all of the group when ``ids`` is None); living ones only
    with isCleanLivingBroker."""
    group = _group(state, broker_name)
    targets = sorted(group.brokers) if ids is None else ids
    missing = [i for i in targets if i not in group.brokers]
    if missing:
        raise Refused(
            ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
            f"brokers {missing} of {broker_name} are unknown",
        )
    living = [i for i in targets if live.alive(broker_name, i)]
    if living and not clean_living:
        raise Refused(
            ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
            f"brokers {living} of {broker_name} are alive (isCleanLivingBroker is false)",
        )
    return Decision([{"type": S.CLEAN_BROKER_DATA, "brokerName": broker_name, "brokerIds": ids}])
