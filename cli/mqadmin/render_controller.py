"""mqadmin's text for the controller commands, line for line as RocketMQ's tools print it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.models.controller import BrokerEpochs, ControllerMeta, Election, GroupReplicas, Replica


def _java(value: object) -> str:
    """String.valueOf: null for a missing value."""
    return "null" if value is None else str(value)


def controller_metadata(meta: ControllerMeta) -> str:
    text = f"\n#ControllerGroup\t{meta.group}"
    text += f"\n#ControllerLeaderId\t{_java(meta.leader_id)}"
    text += f"\n#ControllerLeaderAddress\t{_java(meta.leader_address)}"
    text += "".join(f"\n#Peer:\t{peer}" for peer in meta.peers)
    return text + "\n"


def _identity(name: str, r: Replica) -> str:
    alive = "true" if r.alive else "false"
    fields = f"brokerName='{name}', brokerId={r.broker_id}, brokerAddress='{r.address}', alive={alive}"
    return f"ReplicaIdentity{{{fields}}}"


def sync_state_sets(groups: list[GroupReplicas]) -> str:
    text = ""
    for g in groups:
        in_sync = [r for r in g.replicas if r.in_sync]
        text += (
            f"\n#brokerName\t{g.broker_name}\n#MasterBrokerId\t{_java(g.master_id)}\n"
            f"#MasterAddr\t{_java(g.master_address)}\n#MasterEpoch\t{g.master_epoch}\n"
            f"#SyncStateSetEpoch\t{g.sync_state_set_epoch}\n#SyncStateSetNums\t{len(in_sync)}\n"
        )
        text += "".join(f"\nInSyncReplica:\t{_identity(g.broker_name, r)}\n" for r in in_sync)
        text += "".join(
            f"\nNotInSyncReplica:\t{_identity(g.broker_name, r)}\n" for r in g.replicas if not r.in_sync
        )
    return text


def broker_epochs(brokers: list[BrokerEpochs]) -> str:
    text = ""
    for b in brokers:
        text += f"\n#clusterName\t{b.cluster}\n#brokerName\t{b.broker_name}\n#brokerAddr\t{b.broker_address}"
        text += f"\n#brokerId\t{b.broker_id}"
        text += "".join(
            f"\n#Epoch: EpochEntry{{epoch={e.epoch}, startOffset={e.start_offset}, endOffset={e.end_offset}}}"
            for e in b.epochs
        )
        text += "\n"
    return text


def election(e: Election) -> str:
    text = f"\n#ClusterName\t{e.cluster}\n#BrokerName\t{e.broker_name}"
    text += f"\n#BrokerMasterAddr\t{_java(e.master_address)}"
    text += f"\n#MasterEpoch\t{e.master_epoch}\n#SyncStateSetEpoch\t{e.sync_state_set_epoch}\n"
    return text + "".join(f"\t#Broker\t{i}\t{addr}\n" for i, addr in e.members.items())


def controller_configs(configs: dict[str, dict[str, str]]) -> str:
    text = ""
    for addr, settings in configs.items():
        text += f"============{addr}============\n"
        text += "".join(f"{key:<50}=  {value}\n" for key, value in settings.items())
    return text
