"""One handler per controller request code (1001-1013) and BROKER_HEARTBEAT (904).

Only the leader answers what reads or changes the replicated state; the others answer
CONTROLLER_NOT_LEADER, and every controller takes heartbeats and says who leads. A malformed header or
body gets CONTROLLER_INVALID_REQUEST naming what is wrong.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from broker.controller import replicas as R
from broker.controller.config import ControllerConfig
from broker.controller.heartbeats import DEFAULT_TIMEOUT_MS, BrokerLiveInfo, HeartbeatTable
from broker.controller.journal import Journal, NotLeader
from broker.controller.state import GroupState
from broker.protocol import controller as C
from broker.protocol import headers as H
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import ProtocolError, RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.remoting.server import RemotingServer
from broker.settings import SettingsError

log = logging.getLogger(__name__)

AsyncHandler = Callable[[RemotingCommand], Awaitable[RemotingCommand]]
NOT_LEADER_REMARK = "The controller is not in leader state"
MAX_NAMES = 10_000  # broker names one GET_SYNC_STATE_DATA may ask for


def master_header(group: GroupState) -> C.ReplicaMasterHeader:
    return C.ReplicaMasterHeader(
        clusterName=group.cluster,
        brokerName=group.name,
        masterBrokerId=group.master_id,
        masterAddress=group.master_address or None,
        masterEpoch=group.master_epoch,
        syncStateSetEpoch=group.sync_state_set_epoch,
    )


def sync_state_body(group: GroupState) -> bytes:
    return C.SyncStateSet(sorted(group.sync_state_set), group.sync_state_set_epoch).to_json()


class ControllerParts(Protocol):
    """The parts of the controller its requests use."""

    @property
    def config(self) -> ControllerConfig: ...

    @property
    def journal(self) -> Journal: ...

    @property
    def live(self) -> HeartbeatTable: ...

    @property
    def address(self) -> str: ...

    def elected(self, group: GroupState) -> None:
        """After an election (tells the group's brokers when configured to)."""
        ...


class ControllerProcessor:
    def __init__(self, controller: ControllerParts, on_heartbeat: Handler | None = None) -> None:
        self.controller = controller
        self._on_heartbeat = on_heartbeat  # a NameServer's own heartbeat handler, when sharing its port

    def install(self, server: RemotingServer) -> None:
        leader_only: dict[int, AsyncHandler] = {
            RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: self.next_broker_id,
            RequestCode.CONTROLLER_APPLY_BROKER_ID: self.apply_broker_id,
            RequestCode.CONTROLLER_REGISTER_BROKER: self.register_broker,
            RequestCode.CONTROLLER_GET_REPLICA_INFO: self.replica_info,
            RequestCode.CONTROLLER_ELECT_MASTER: self.elect_master,
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: self.alter_sync_state_set,
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA: self.sync_state_data,
            RequestCode.CLEAN_BROKER_DATA: self.clean_broker_data,
        }
        anyone: dict[int, AsyncHandler] = {
            RequestCode.CONTROLLER_GET_METADATA_INFO: self.metadata,
            RequestCode.GET_CONTROLLER_CONFIG: self.get_config,
            RequestCode.UPDATE_CONTROLLER_CONFIG: self.update_config,
        }
        for code, handler in leader_only.items():
            server.register(code, self._guarded(handler, leader=True))
        for code, handler in anyone.items():
            server.register(code, self._guarded(handler, leader=False))
        beat = self._guarded(self.heartbeat, leader=False)
        shared = self._on_heartbeat

        async def both(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand | None:
            """On a NameServer's port a heartbeat feeds both; the NameServer answers."""
            await beat(request, channel)
            assert shared is not None
            return await shared(request, channel)

        server.register(RequestCode.BROKER_HEARTBEAT, beat if shared is None else both)

    def _guarded(self, handler: AsyncHandler, *, leader: bool) -> Handler:
        async def run(request: RemotingCommand, _channel: RemotingChannel) -> RemotingCommand:
            if leader and not self.controller.journal.is_leader:
                return make_response(request, ResponseCode.CONTROLLER_NOT_LEADER, NOT_LEADER_REMARK)
            try:
                return await handler(request)
            except R.Refused as exc:
                return make_response(request, exc.code, exc.remark)
            except NotLeader as exc:
                return make_response(request, ResponseCode.CONTROLLER_NOT_LEADER, str(exc))
            except (H.HeaderFieldError, ProtocolError, ValueError) as exc:
                return make_response(request, ResponseCode.CONTROLLER_INVALID_REQUEST, str(exc))

        return run

    # -- broker ids and registration ------------------------------------------------------------

    async def next_broker_id(self, request: RemotingCommand) -> RemotingCommand:
        header = C.GetNextBrokerIdRequestHeader.parse(request.ext_fields)
        next_id = R.next_broker_id(self.controller.journal.state, header.brokerName)
        answer = C.GetNextBrokerIdResponseHeader(
            clusterName=header.clusterName, brokerName=header.brokerName, nextBrokerId=next_id
        )
        return make_response(request, header=answer)

    async def apply_broker_id(self, request: RemotingCommand) -> RemotingCommand:
        header = C.ApplyBrokerIdRequestHeader.parse(request.ext_fields)
        decision = R.apply_broker_id(
            self.controller.journal.state,
            header.clusterName,
            header.brokerName,
            header.appliedBrokerId,
            header.registerCheckCode,
        )
        await self.controller.journal.commit(decision.events)
        R.check_granted(
            self.controller.journal.state, header.brokerName, header.appliedBrokerId, header.registerCheckCode
        )
        answer = C.ApplyBrokerIdResponseHeader(clusterName=header.clusterName, brokerName=header.brokerName)
        return make_response(request, header=answer)

    async def register_broker(self, request: RemotingCommand) -> RemotingCommand:
        header = C.RegisterBrokerToControllerRequestHeader.parse(request.ext_fields)
        decision = R.register_broker(
            self.controller.journal.state, header.brokerName, header.brokerId, header.brokerAddress
        )
        await self.controller.journal.commit(decision.events)
        group = self.controller.journal.state.groups[header.brokerName]
        return make_response(request, header=master_header(group), body=sync_state_body(group))

    async def replica_info(self, request: RemotingCommand) -> RemotingCommand:
        header = C.GetReplicaInfoRequestHeader.parse(request.ext_fields)
        group = self.controller.journal.state.groups.get(header.brokerName)
        if group is None:
            return make_response(
                request,
                ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST,
                f"no broker group {header.brokerName}",
            )
        return make_response(request, header=master_header(group), body=sync_state_body(group))

    # -- elections and the SyncStateSet ---------------------------------------------------------

    async def elect_master(self, request: RemotingCommand) -> RemotingCommand:
        header = C.ElectMasterRequestHeader.parse(request.ext_fields)
        journal = self.controller.journal
        try:
            decision = R.elect_master(
                journal.state,
                self.controller.live,
                header.brokerName,
                header.brokerId if header.brokerId >= 0 else None,
                designated=header.designateElect,
                unclean=self.controller.config.enable_elect_unclean_master,
            )
        except R.Refused as exc:
            group = journal.state.groups.get(header.brokerName)
            head = master_header(group) if group is not None else None
            return make_response(request, exc.code, exc.remark, header=head)
        await journal.commit(decision.events)
        group = journal.state.groups[header.brokerName]
        if group.master_id is None:
            return make_response(
                request,
                ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE,
                f"no live broker of {header.brokerName} can become master",
                header=master_header(group),
            )
        log.info("%s: broker %s elected master at epoch %d", group.name, group.master_id, group.master_epoch)
        self.controller.elected(group)
        body = C.ElectMasterResponseBody(
            brokerMemberGroup=C.BrokerMemberGroup(
                group.cluster, group.name, {i: b.address for i, b in group.brokers.items()}
            ),
            syncStateSet=sorted(group.sync_state_set),
        )
        return make_response(request, header=master_header(group), body=body.to_json())

    async def alter_sync_state_set(self, request: RemotingCommand) -> RemotingCommand:
        header = C.AlterSyncStateSetRequestHeader.parse(request.ext_fields)
        if request.body is None:
            raise ProtocolError("ALTER_SYNC_STATE_SET needs a SyncStateSet body")
        wanted = C.SyncStateSet.from_json(request.body)
        journal = self.controller.journal
        decision = R.alter_sync_state_set(
            journal.state,
            self.controller.live,
            header.brokerName,
            header.masterBrokerId,
            header.masterEpoch,
            wanted.syncStateSet,
            wanted.syncStateSetEpoch,
        )
        await journal.commit(decision.events)
        group = journal.state.groups[header.brokerName]
        if decision.events:
            log.info("%s: SyncStateSet %s at epoch %d", group.name, sorted(group.sync_state_set),
                     group.sync_state_set_epoch)  # fmt: skip
        answer = C.AlterSyncStateSetResponseHeader(newSyncStateSetEpoch=group.sync_state_set_epoch)
        return make_response(request, header=answer, body=sync_state_body(group))

    async def sync_state_data(self, request: RemotingCommand) -> RemotingCommand:
        names = json.loads(request.body) if request.body else []
        if (
            not isinstance(names, list)
            or len(names) > MAX_NAMES
            or not all(isinstance(n, str) for n in names)
        ):
            raise ProtocolError(f"the body must be a JSON list of at most {MAX_NAMES} broker names")
        state = self.controller.journal.state
        live = self.controller.live
        table: dict[str, C.ReplicasInfo] = {}
        for name in names:
            group = state.groups.get(name)
            if group is None:
                continue
            members = [
                C.ReplicaIdentity(name, i, b.address, live.alive(name, i))
                for i, b in sorted(group.brokers.items())
            ]
            table[name] = C.ReplicasInfo(
                masterBrokerId=group.master_id if group.master_id is not None else -1,
                masterAddress=group.master_address,
                masterEpoch=group.master_epoch,
                syncStateSetEpoch=group.sync_state_set_epoch,
                inSyncReplicas=[m for m in members if m.brokerId in group.sync_state_set],
                notInSyncReplicas=[m for m in members if m.brokerId not in group.sync_state_set],
            )
        return make_response(request, body=C.BrokerReplicasInfo(table).to_json())

    async def clean_broker_data(self, request: RemotingCommand) -> RemotingCommand:
        header = C.CleanControllerBrokerDataRequestHeader.parse(request.ext_fields)
        text = (header.brokerControllerIdsToClean or "").strip()
        ids = [int(i) for i in text.split(";") if i.strip()] if text else None
        decision = R.clean_broker_data(
            self.controller.journal.state,
            self.controller.live,
            header.brokerName,
            ids,
            clean_living=header.isCleanLivingBroker,
        )
        await self.controller.journal.commit(decision.events)
        for broker_id in ids if ids is not None else [None]:
            self.controller.live.forget(header.brokerName, broker_id)
        return make_response(request)

    # -- every controller -----------------------------------------------------------------------

    async def heartbeat(self, request: RemotingCommand) -> RemotingCommand:
        header = H.BrokerHeartbeatRequestHeader.parse(request.ext_fields)
        if header.brokerId is None:
            raise ProtocolError("BROKER_HEARTBEAT to a controller needs brokerId")
        info = BrokerLiveInfo(
            cluster=header.clusterName,
            broker_name=header.brokerName,
            broker_id=header.brokerId,
            address=header.brokerAddr,
            last_seen=0.0,
            timeout_ms=header.heartbeatTimeoutMills or DEFAULT_TIMEOUT_MS,
            epoch=header.epoch or 0,
            max_offset=header.maxOffset or 0,
            confirm_offset=header.confirmOffset or 0,
            election_priority=header.electionPriority if header.electionPriority is not None else 2**31 - 1,
        )
        if not self.controller.live.beat(info):
            return make_response(request, ResponseCode.SYSTEM_BUSY, "too many brokers send heartbeats")
        return make_response(request)

    async def metadata(self, request: RemotingCommand) -> RemotingCommand:
        controller = self.controller
        journal = controller.journal
        leader = journal.leader_id
        peers = controller.config.peers or {journal.self_id: controller.address}
        answer = C.GetMetaDataResponseHeader(
            group=controller.config.controller_group,
            controllerLeaderId=leader,
            controllerLeaderAddress=peers.get(leader) if leader is not None else None,
            isLeader=journal.is_leader,
            peers=";".join(f"{p}-{a}" for p, a in peers.items()),
        )
        return make_response(request, header=answer)

    async def get_config(self, request: RemotingCommand) -> RemotingCommand:
        return make_response(request, body=self.controller.config.to_properties().encode())

    async def update_config(self, request: RemotingCommand) -> RemotingCommand:
        try:
            keys = self.controller.config.apply_properties(
                (request.body or b"").decode(), "UPDATE_CONTROLLER_CONFIG"
            )
        except SettingsError as exc:
            return make_response(request, ResponseCode.CONTROLLER_INVALID_REQUEST, str(exc))
        log.info("controller settings updated: %s", ", ".join(keys))
        return make_response(request)
