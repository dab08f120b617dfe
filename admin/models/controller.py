"""What the controller commands show: the controllers, each broker group's replicas and epochs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ControllerMeta:
    address: str  # the controller that answered
    group: str
    leader_id: str | None
    leader_address: str | None
    is_leader: bool
    peers: list[str] = field(default_factory=list)  # "id-host:port"


@dataclass(frozen=True, slots=True)
class Replica:
    broker_id: int
    address: str
    alive: bool
    in_sync: bool


@dataclass(frozen=True, slots=True)
class GroupReplicas:
    """One broker group as the controller leader sees it."""

    broker_name: str
    master_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    replicas: list[Replica]


@dataclass(frozen=True, slots=True)
class Epoch:
    epoch: int
    start_offset: int
    end_offset: int  # the last epoch ends at the broker's CommitLog end


@dataclass(frozen=True, slots=True)
class BrokerEpochs:
    cluster: str
    broker_name: str
    broker_address: str
    broker_id: int
    max_offset: int
    epochs: list[Epoch]


@dataclass(frozen=True, slots=True)
class Election:
    cluster: str
    broker_name: str
    master_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    members: dict[int, str]  # broker id -> address
    sync_state_set: list[int]


@dataclass(frozen=True, slots=True)
class ControllerStatus:
    controller: ControllerMeta
    groups: list[GroupReplicas]
