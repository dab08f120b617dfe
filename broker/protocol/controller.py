"""Controller mode on the wire: the headers and bodies of CONTROLLER_* (1001-1013) and
BROKER_HEARTBEAT (904, its header lives in headers.py), with RocketMQ's Java field names so its
brokers and mqadmin talk to ours.

Pure data: no sockets. Broker ids are the controller-assigned ones (1, 2, ...), never the
NameServer's 0-for-master.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.protocol.bodies import JsonBody
from broker.protocol.headers import CommandHeader

# -- headers ----------------------------------------------------------------------------------


@dataclass(kw_only=True, slots=True)
class GetNextBrokerIdRequestHeader(CommandHeader):
    clusterName: str
    brokerName: str


@dataclass(kw_only=True, slots=True)
class GetNextBrokerIdResponseHeader(CommandHeader):
    clusterName: str | None = None
    brokerName: str | None = None
    nextBrokerId: int | None = None


@dataclass(kw_only=True, slots=True)
class ApplyBrokerIdRequestHeader(CommandHeader):
    clusterName: str
    brokerName: str
    appliedBrokerId: int
    registerCheckCode: str


@dataclass(kw_only=True, slots=True)
class ApplyBrokerIdResponseHeader(CommandHeader):
    clusterName: str | None = None
    brokerName: str | None = None


@dataclass(kw_only=True, slots=True)
class RegisterBrokerToControllerRequestHeader(CommandHeader):
    clusterName: str
    brokerName: str
    brokerId: int
    brokerAddress: str
    invokeTime: int = 0


@dataclass(kw_only=True, slots=True)
class ReplicaMasterHeader(CommandHeader):
    """What REGISTER (1003), GET_REPLICA_INFO (1004) and ELECT_MASTER (1002) answer: the group's master."""

    clusterName: str | None = None
    brokerName: str | None = None
    masterBrokerId: int | None = None
    masterAddress: str | None = None
    masterEpoch: int | None = None
    syncStateSetEpoch: int | None = None


@dataclass(kw_only=True, slots=True)
class NotifyBrokerRoleChangedRequestHeader(CommandHeader):
    """NOTIFY_BROKER_ROLE_CHANGED (1008), controller to broker after an election; the SyncStateSet is
    the body."""

    masterAddress: str | None = None
    masterEpoch: int | None = None
    syncStateSetEpoch: int | None = None
    masterBrokerId: int | None = None


@dataclass(kw_only=True, slots=True)
class GetReplicaInfoRequestHeader(CommandHeader):
    brokerName: str


@dataclass(kw_only=True, slots=True)
class ElectMasterRequestHeader(CommandHeader):
    """``brokerId`` -1 (or absent): let the policy choose; ``designateElect``: exactly that broker."""

    clusterName: str = ""
    brokerName: str = ""
    brokerId: int = -1
    designateElect: bool = False
    invokeTime: int = 0


@dataclass(kw_only=True, slots=True)
class AlterSyncStateSetRequestHeader(CommandHeader):
    brokerName: str
    masterBrokerId: int
    masterEpoch: int
    invokeTime: int = 0


@dataclass(kw_only=True, slots=True)
class AlterSyncStateSetResponseHeader(CommandHeader):
    newSyncStateSetEpoch: int | None = None


@dataclass(kw_only=True, slots=True)
class GetMetaDataResponseHeader(CommandHeader):
    group: str | None = None
    controllerLeaderId: str | None = None
    controllerLeaderAddress: str | None = None
    isLeader: bool = False
    peers: str | None = None


@dataclass(kw_only=True, slots=True)
class CleanControllerBrokerDataRequestHeader(CommandHeader):
    """``brokerControllerIdsToClean``: ids separated by ';' (empty: every broker of the group)."""

    clusterName: str | None = None
    brokerName: str
    brokerControllerIdsToClean: str | None = None
    isCleanLivingBroker: bool = False
    invokeTime: int = 0


# -- bodies -----------------------------------------------------------------------------------


@dataclass(slots=True)
class SyncStateSet(JsonBody):
    """ALTER_SYNC_STATE_SET's request and answer body."""

    syncStateSet: list[int] = field(default_factory=list)
    syncStateSetEpoch: int = 0


@dataclass(slots=True)
class ReplicaIdentity(JsonBody):
    brokerName: str = ""
    brokerId: int = 0
    brokerAddress: str = ""
    alive: bool = False


@dataclass(slots=True)
class ReplicasInfo(JsonBody):
    masterBrokerId: int = 0
    masterAddress: str = ""
    masterEpoch: int = 0
    syncStateSetEpoch: int = 0
    inSyncReplicas: list[ReplicaIdentity] = field(default_factory=list)
    notInSyncReplicas: list[ReplicaIdentity] = field(default_factory=list)


@dataclass(slots=True)
class BrokerReplicasInfo(JsonBody):
    """CONTROLLER_GET_SYNC_STATE_DATA (1006) answer: per broker name asked for."""

    replicasInfoTable: dict[str, ReplicasInfo] = field(default_factory=dict)


@dataclass(slots=True)
class BrokerMemberGroup(JsonBody):
    cluster: str = ""
    brokerName: str = ""
    brokerAddrs: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class ElectMasterResponseBody(JsonBody):
    brokerMemberGroup: BrokerMemberGroup = field(default_factory=BrokerMemberGroup)
    syncStateSet: list[int] = field(default_factory=list)


@dataclass(slots=True)
class EpochEntry(JsonBody):
    epoch: int = 0
    startOffset: int = 0
    endOffset: int = 2**63 - 1  # Long.MAX_VALUE: the open last epoch


@dataclass(slots=True)
class EpochEntryCache(JsonBody):
    clusterName: str = ""
    brokerName: str = ""
    brokerId: int = 0
    epochList: list[EpochEntry] = field(default_factory=list)
    maxOffset: int = 0


@dataclass(kw_only=True, slots=True)
class ExchangeHAInfoHeader(CommandHeader):
    """EXCHANGE_BROKER_HA_INFO (906), both ways: a replica asks its new master where to replicate from."""

    masterHaAddress: str | None = None
    masterFlushOffset: int | None = None
    masterAddress: str | None = None
