"""The replicated state of a controller: per broker group its brokers, its master and master epoch,
and its SyncStateSet with that set's epoch.

Changes are events (plain dicts, so they travel through Raft and into a snapshot file unchanged) and
:meth:`ReplicaState.apply` is the only writer: every controller that applies the same events in the
same order holds the same state. Deciding *which* event to make lives in
:mod:`broker.controller.replicas`; this module only records.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

Event = dict[str, Any]

APPLY_BROKER_ID = "applyBrokerId"
UPDATE_ADDRESS = "updateAddress"
ELECT_MASTER = "electMaster"
ALTER_SYNC_STATE_SET = "alterSyncStateSet"
CLEAN_BROKER_DATA = "cleanBrokerData"


@dataclass(slots=True)
class BrokerEntry:
    address: str
    check_code: str  # registerCheckCode: "address;timestamp" of the broker that applied for the id


@dataclass(slots=True)
class GroupState:
    """One broker group (brokerName): RocketMQ's BrokerReplicaInfo and SyncStateInfo together."""

    cluster: str
    name: str
    brokers: dict[int, BrokerEntry] = field(default_factory=dict)
    master_id: int | None = None
    master_epoch: int = 0
    sync_state_set: set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0

    @property
    def next_id(self) -> int:
        return max(self.brokers, default=0) + 1

    @property
    def never_had_master(self) -> bool:
        return self.master_epoch == 0

    @property
    def master_address(self) -> str:
        entry = self.brokers.get(self.master_id) if self.master_id is not None else None
        return entry.address if entry is not None else ""

    def to_obj(self) -> dict[str, Any]:
        obj = asdict(self)
        obj["brokers"] = {str(i): asdict(b) for i, b in self.brokers.items()}
        obj["sync_state_set"] = sorted(self.sync_state_set)
        return obj

    @classmethod
    def from_obj(cls, obj: dict[str, Any]) -> GroupState:
        return cls(
            cluster=obj["cluster"],
            name=obj["name"],
            brokers={int(i): BrokerEntry(**b) for i, b in obj["brokers"].items()},
            master_id=obj["master_id"],
            master_epoch=obj["master_epoch"],
            sync_state_set=set(obj["sync_state_set"]),
            sync_state_set_epoch=obj["sync_state_set_epoch"],
        )


class ReplicaState:
    """Every group the controller knows, changed only by :meth:`apply`."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupState] = {}

    def apply(self, event: Event) -> None:
        kind = event["type"]
        name = event["brokerName"]
        if kind == APPLY_BROKER_ID:
            group = self.groups.setdefault(name, GroupState(event["clusterName"], name))
            # two brokers that asked for the same id at once both pass the leader's check while their
            # events replicate: the first in the log keeps it, on every replica alike
            group.brokers.setdefault(event["brokerId"], BrokerEntry(event["address"], event["checkCode"]))
            return
        group_or_none = self.groups.get(name)
        if group_or_none is None:
            return  # a group cleaned meanwhile: nothing to change
        group = group_or_none
        if kind == UPDATE_ADDRESS:
            if event["brokerId"] in group.brokers:
                group.brokers[event["brokerId"]].address = event["address"]
        elif kind == ELECT_MASTER:
            group.master_id = event["masterId"]
            group.master_epoch += 1
            if event["masterId"] is not None:  # a new master starts a SyncStateSet of its own
                group.sync_state_set = {event["masterId"]}
                group.sync_state_set_epoch += 1
        elif kind == ALTER_SYNC_STATE_SET:
            group.sync_state_set = set(event["syncStateSet"])
            group.sync_state_set_epoch += 1
        elif kind == CLEAN_BROKER_DATA:
            ids = event["brokerIds"]
            if ids is None:
                del self.groups[name]
                return
            for broker_id in ids:
                group.brokers.pop(broker_id, None)
                group.sync_state_set.discard(broker_id)
                if group.master_id == broker_id:
                    group.master_id = None
            if not group.brokers:
                del self.groups[name]
        else:
            raise ValueError(f"unknown controller event {kind!r}")

    def snapshot(self) -> dict[str, Any]:
        return {"groups": [g.to_obj() for g in self.groups.values()]}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.groups = {g["name"]: GroupState.from_obj(g) for g in snapshot.get("groups", [])}
