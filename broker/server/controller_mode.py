"""A broker in controller mode (enableControllerMode): RocketMQ's ReplicasManager.

At start the broker gets its id from the controller (GET_NEXT_BROKER_ID, APPLY_BROKER_ID; kept in
``controllerBrokerId`` in the store), registers, and asks for an election when its group has no
master. From then on it sends heartbeats to every controller and asks the leader for its group's
master every syncBrokerMetadataPeriod, and at once when the controller announces an election
(NOTIFY_BROKER_ROLE_CHANGED), switching role when the master or epoch changes:

- master: the CommitLog end starts a new epoch in the epoch file, the NameServer hears brokerId 0
  with stateVersion = epoch, and the SyncStateSet grows with replicas that caught up and shrinks by
  those that lagged haMaxTimeSlaveNotCatchup (ALTER_SYNC_STATE_SET);
- replica: the master's epochs (GET_BROKER_EPOCH_CACHE) say up to where both logs agree; the
  CommitLog is cut there and replication starts from the master's HA address
  (EXCHANGE_BROKER_HA_INFO).

Fencing: a master takes writes only while the controller confirmed its role within half the
heartbeat timeout, so a master that was stopped (or cut off from the controllers while they still
work) refuses writes before any other broker can be elected. When no controller leads at all (a
majority is lost) nothing can be elected, and the master keeps its role and its writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Protocol

from broker.acl.client import secure
from broker.protocol import controller as C
from broker.protocol import headers as H
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import RemotingCommand, make_request, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingError
from broker.server.config import BrokerConfig
from broker.server.ha.ha_client import HAClient
from broker.server.ha.ha_service import HAService
from broker.server.registration import NameServerRegistration
from broker.server.store_access import StoreAccess
from broker.server.topic_config import TopicConfigManager
from broker.store.config import StoreConfig
from broker.store.epoch_file import Epoch, EpochFile, consistent_point
from broker.store.message_store import MessageStore

log = logging.getLogger(__name__)

ID_FILE = "controllerBrokerId"
CALL_TIMEOUT = 2.0
APPLY_ID_ATTEMPTS = 5


class ControllerUnavailable(Exception):
    """No controller leads now, or none answers."""


class ReplicaParts(StoreAccess, Protocol):
    """The parts of the broker controller mode uses, and the role changes it asks for."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def registration(self) -> NameServerRegistration: ...

    @property
    def ha_service(self) -> HAService: ...

    @property
    def ha_client(self) -> HAClient | None: ...

    async def become_master(self) -> int: ...

    async def become_replica(self) -> None: ...


class ReplicasManager:
    def __init__(self, broker: ReplicaParts) -> None:
        self.broker = broker
        cfg = broker.config
        self._client = secure(RemotingClient(connect_timeout=1.0), cfg.inner_client_security())
        root = broker.store_config.store_path
        self._id_path = root / ID_FILE
        self.epochs = EpochFile(root)
        self.broker_id = self._load_id()
        self.leader: str | None = None
        self.master_id: int | None = None
        self.master_addr = ""
        self.master_epoch = 0
        self.sync_state_set: set[int] = set()
        self.sync_state_set_epoch = 0
        self.confirmed_at = 0.0  # when the controller last confirmed this broker as master
        self.controller_lost = False  # no controller leads: keep the role we have
        self.registered = False  # the controller knows this broker's id and address
        self._following: tuple[str, int] | None = None  # (master address, epoch) replicated from
        self._trigger = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._changing = asyncio.Lock()

    # == requests served by the broker =========================================================
    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.EXCHANGE_BROKER_HA_INFO: self._exchange_ha_info,
            RequestCode.GET_BROKER_EPOCH_CACHE: self._epoch_cache,
            RequestCode.NOTIFY_BROKER_ROLE_CHANGED: self._role_changed,
        }

    async def _exchange_ha_info(self, request: RemotingCommand, _channel: RemotingChannel) -> RemotingCommand:
        cfg = self.broker.config
        answer = C.ExchangeHAInfoHeader(
            masterHaAddress=cfg.ha_server_addr,
            masterFlushOffset=self.broker.store.commitlog.max_offset,
            masterAddress=cfg.broker_addr,
        )
        return make_response(request, header=answer)

    async def _epoch_cache(self, request: RemotingCommand, _channel: RemotingChannel) -> RemotingCommand:
        return make_response(request, body=self.epoch_cache().to_json())

    async def _role_changed(self, request: RemotingCommand, _channel: RemotingChannel) -> RemotingCommand:
        """The controller's push after an election: a hint to ask the leader now rather than at the
        next poll. The leader's answer decides, so a stale or forged push switches no role."""
        pushed = C.NotifyBrokerRoleChangedRequestHeader.from_ext_fields(request.ext_fields)
        if (pushed.masterEpoch or 0) >= self.master_epoch:
            self.trigger()
        return make_response(request)

    def epoch_cache(self) -> C.EpochEntryCache:
        cfg = self.broker.config
        entries = self.epochs.entries
        return C.EpochEntryCache(
            clusterName=cfg.broker_cluster_name,
            brokerName=cfg.broker_name,
            brokerId=self.broker_id,
            epochList=[
                C.EpochEntry(e.epoch, e.start, entries[i + 1].start if i + 1 < len(entries) else 2**63 - 1)
                for i, e in enumerate(entries)
            ],
            maxOffset=self.broker.store.commitlog.max_offset,
        )

    # == life cycle ============================================================================
    async def start(self) -> None:
        """Broker id, registration and the first role; the loops keep it current afterwards (and
        finish the registration when no controller led yet)."""
        try:
            await self._register()
        except ControllerUnavailable as exc:
            log.warning("no controller reachable at start (%s); staying a replica until one answers", exc)
            self.controller_lost = True
        self._tasks = [
            asyncio.create_task(self._heartbeat_loop(), name="controller-heartbeat"),
            asyncio.create_task(self._sync_loop(), name="controller-sync"),
        ]

    async def _register(self) -> None:
        """Get a broker id, register it with the controller and take the role it gives (asking for
        an election when the group has no master). Until a controller leader answered this, the
        broker follows no master: a replica without an id would never be counted into the
        SyncStateSet, so it could never be elected either."""
        if not self.broker_id:
            self.broker_id = await self._apply_for_id()
        await self._beat_all()
        answer = await self._call(
            RequestCode.CONTROLLER_REGISTER_BROKER,
            C.RegisterBrokerToControllerRequestHeader(
                clusterName=self.broker.config.broker_cluster_name,
                brokerName=self.broker.config.broker_name,
                brokerId=self.broker_id,
                brokerAddress=self.broker.config.broker_addr,
                invokeTime=int(time.time() * 1000),
            ),
        )
        if answer.code == ResponseCode.SUCCESS and not answer.ext_fields.get("masterBrokerId"):
            answer = await self._call(
                RequestCode.CONTROLLER_ELECT_MASTER,
                C.ElectMasterRequestHeader(
                    clusterName=self.broker.config.broker_cluster_name,
                    brokerName=self.broker.config.broker_name,
                    brokerId=self.broker_id,
                    invokeTime=int(time.time() * 1000),
                ),
            )
        if answer.code in (ResponseCode.SUCCESS, ResponseCode.CONTROLLER_MASTER_STILL_EXIST):
            await self._apply(answer)
        else:
            log.warning("controller answered %d to the registration: %s", answer.code, answer.remark)
        self.registered = True

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self._client.close()

    def trigger(self) -> None:
        """Ask the controller for the group's master now."""
        self._trigger.set()

    # == broker id =============================================================================
    def _load_id(self) -> int:
        try:
            return int(json.loads(self._id_path.read_text())["brokerId"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    async def _apply_for_id(self) -> int:
        cfg = self.broker.config
        check_code = f"{cfg.broker_addr};{int(time.time() * 1000)}"
        for _ in range(APPLY_ID_ATTEMPTS):
            answer = await self._call(
                RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
                C.GetNextBrokerIdRequestHeader(
                    clusterName=cfg.broker_cluster_name, brokerName=cfg.broker_name
                ),
            )
            next_id = C.GetNextBrokerIdResponseHeader.from_ext_fields(answer.ext_fields).nextBrokerId
            if answer.code != ResponseCode.SUCCESS or next_id is None:
                raise ControllerUnavailable(f"GET_NEXT_BROKER_ID answered {answer.code}: {answer.remark}")
            applied = await self._call(
                RequestCode.CONTROLLER_APPLY_BROKER_ID,
                C.ApplyBrokerIdRequestHeader(
                    clusterName=cfg.broker_cluster_name,
                    brokerName=cfg.broker_name,
                    appliedBrokerId=next_id,
                    registerCheckCode=check_code,
                ),
            )
            if applied.code == ResponseCode.SUCCESS:
                tmp = self._id_path.with_suffix(".tmp")
                tmp.write_text(json.dumps({"brokerId": next_id, "registerCheckCode": check_code}))
                tmp.replace(self._id_path)
                log.info("controller gave broker id %d to %s", next_id, cfg.broker_addr)
                return next_id
            if applied.code != ResponseCode.CONTROLLER_BROKER_ID_INVALID:  # another broker took it: again
                raise ControllerUnavailable(f"APPLY_BROKER_ID answered {applied.code}: {applied.remark}")
        raise ControllerUnavailable("no broker id could be applied for")

    # == talking to the controllers ============================================================
    async def _find_leader(self) -> str:
        for addr in self.broker.config.controller_addrs:
            try:
                answer = await self._client.invoke(
                    addr, make_request(RequestCode.CONTROLLER_GET_METADATA_INFO), CALL_TIMEOUT
                )
            except RemotingError:
                continue
            meta = C.GetMetaDataResponseHeader.from_ext_fields(answer.ext_fields)
            if meta.isLeader:
                return addr
            if meta.controllerLeaderAddress:
                return meta.controllerLeaderAddress
        raise ControllerUnavailable("no controller leads now")

    async def _call(self, code: int, header: H.CommandHeader, body: bytes | None = None) -> RemotingCommand:
        """One request to the leader (found again once when it moved or went away)."""
        for attempt in range(2):
            if self.leader is None or attempt:
                self.leader = await self._find_leader()
            try:
                answer = await self._client.invoke(
                    self.leader, make_request(code, header, body=body), CALL_TIMEOUT
                )
            except RemotingError:
                self.leader = None
                continue
            if answer.code != ResponseCode.CONTROLLER_NOT_LEADER:
                return answer
            self.leader = None
        raise ControllerUnavailable("the controller leader did not answer")

    async def _beat_all(self) -> None:
        cfg = self.broker.config
        header = H.BrokerHeartbeatRequestHeader(
            clusterName=cfg.broker_cluster_name,
            brokerAddr=cfg.broker_addr,
            brokerName=cfg.broker_name,
            brokerId=self.broker_id,
            epoch=self.epochs.last_epoch,
            maxOffset=self.broker.store.commitlog.max_offset,
            confirmOffset=self.broker.store.commitlog.max_offset,
            heartbeatTimeoutMills=cfg.controller_heart_beat_timeout_mills,
        )

        async def beat(addr: str) -> None:
            with contextlib.suppress(RemotingError):
                await self._client.invoke(
                    addr,
                    make_request(RequestCode.BROKER_HEARTBEAT, header),
                    cfg.broker_heartbeat_interval / 1000,
                )

        await asyncio.gather(*(beat(a) for a in cfg.controller_addrs))

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.broker.config.broker_heartbeat_interval / 1000)
            if self.broker_id:  # no id yet: nothing the controller could rank or elect
                await self._beat_all()

    async def _sync_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._trigger.wait(), self.broker.config.sync_broker_metadata_period / 1000
                )
            self._trigger.clear()
            try:
                await self.sync()
            except ControllerUnavailable as exc:
                if not self.controller_lost:
                    log.warning(
                        "controller unavailable (%s): keeping role %s", exc, self.broker.config.broker_role
                    )
                self.controller_lost = True
            except Exception:  # the loop must survive one failure and try again
                log.exception("controller sync failed")

    async def sync(self) -> None:
        """Ask for the group's master; follow a change; as master, keep the SyncStateSet current."""
        if not self.registered:
            await self._register()
            self.controller_lost = False
            return
        answer = await self._call(
            RequestCode.CONTROLLER_GET_REPLICA_INFO,
            C.GetReplicaInfoRequestHeader(brokerName=self.broker.config.broker_name),
        )
        self.controller_lost = False
        if answer.code != ResponseCode.SUCCESS:
            log.warning("GET_REPLICA_INFO answered %d: %s", answer.code, answer.remark)
            return
        await self._apply(answer)
        if self.is_master:
            await self._maintain_sync_state_set()

    # == roles =================================================================================
    @property
    def is_master(self) -> bool:
        return self.master_id == self.broker_id and self.broker.config.broker_role != "SLAVE"

    def write_refusal(self) -> str | None:
        """Why this master takes no write now (its role is no longer confirmed), or None."""
        if self.controller_lost:
            return None
        lease = self.broker.config.controller_heart_beat_timeout_mills / 2000
        if time.monotonic() - self.confirmed_at > lease:
            return (
                f"the broker is not confirmed as master of {self.broker.config.broker_name} "
                f"(epoch {self.master_epoch}) by the controller"
            )
        return None

    async def _apply(self, answer: RemotingCommand) -> None:
        head = C.ReplicaMasterHeader.from_ext_fields(answer.ext_fields)
        epoch = head.masterEpoch or 0
        if epoch < self.master_epoch:
            return  # an answer older than what we know
        if answer.body:
            members = C.SyncStateSet.from_json(answer.body)
            self.sync_state_set = set(members.syncStateSet)
            self.sync_state_set_epoch = members.syncStateSetEpoch
        async with self._changing:
            self.master_id, self.master_addr, self.master_epoch = (
                head.masterBrokerId,
                head.masterAddress or "",
                epoch,
            )
            if self.master_id == self.broker_id:
                if self.broker.config.broker_role == "SLAVE" or self.epochs.last_epoch != epoch:
                    await self._to_master(epoch)
                self.confirmed_at = time.monotonic()
                self._set_sync_members()
            elif self.master_id is not None and self.master_addr:
                if self._following != (self.master_addr, epoch):
                    await self._to_replica(self.master_addr, epoch)
            elif self.broker.config.broker_role != "SLAVE":
                log.warning("the controller names no master of %s: this broker stops taking writes",
                            self.broker.config.broker_name)  # fmt: skip
                await self.broker.become_replica()
                self.broker.config.broker_id = self.broker_id
                self.broker.registration.trigger()

    def _set_sync_members(self) -> None:
        others = self.sync_state_set - {self.broker_id}
        self.broker.ha_service.set_sync_members(
            others if self.broker.config.all_ack_in_sync_state_set else None
        )

    async def _to_master(self, epoch: int) -> None:
        end = await self.broker.become_master()
        self.epochs.truncate_from(end)
        self.epochs.append(epoch, end)
        self._following = None
        cfg = self.broker.config
        cfg.broker_id = 0  # the NameServer's id of a master
        self.broker.topics.data_version.stateVersion = epoch  # a stale master's registration loses
        self.broker.registration.trigger()
        log.warning("%s is now the master of %s at epoch %d (CommitLog end %d)",
                    cfg.broker_addr, cfg.broker_name, epoch, end)  # fmt: skip

    async def _to_replica(self, master_addr: str, epoch: int) -> None:
        await self.broker.become_replica()  # no write from here on, whatever follows
        try:
            ha = await self._client.invoke(
                master_addr,
                make_request(RequestCode.EXCHANGE_BROKER_HA_INFO, C.ExchangeHAInfoHeader()),
                CALL_TIMEOUT,
            )
            cache = await self._client.invoke(
                master_addr, make_request(RequestCode.GET_BROKER_EPOCH_CACHE), CALL_TIMEOUT
            )
        except RemotingError as exc:
            log.warning("cannot reach the new master %s yet: %s", master_addr, exc)
            return
        ha_addr = C.ExchangeHAInfoHeader.from_ext_fields(ha.ext_fields).masterHaAddress
        if (
            ha.code != ResponseCode.SUCCESS
            or not ha_addr
            or cache.code != ResponseCode.SUCCESS
            or not cache.body
        ):
            log.warning("the new master %s did not say where to replicate from", master_addr)
            return
        theirs = C.EpochEntryCache.from_json(cache.body)
        if not theirs.epochList or theirs.epochList[-1].epoch < epoch:
            log.info("the new master %s has not begun epoch %d yet", master_addr, epoch)
            return  # its history is incomplete: the next sync tries again
        client = self.broker.ha_client
        assert client is not None
        await client.stop()  # no bytes of the old master while the log is cut to the new one's
        await self._truncate_to_master(theirs)
        cfg = self.broker.config
        cfg.broker_id = self.broker_id
        self.broker.topics.data_version.stateVersion = epoch
        client.set_master(master_addr, ha_addr)
        await client.start()
        self._following = (master_addr, epoch)
        self.broker.registration.trigger()
        log.warning(
            "%s follows the master %s of %s at epoch %d", cfg.broker_addr, master_addr, cfg.broker_name, epoch
        )

    async def _truncate_to_master(self, theirs: C.EpochEntryCache) -> None:
        """Cut what this replica has past the last point its history shares with the master's."""
        master_epochs = [Epoch(e.epoch, e.startOffset) for e in theirs.epochList]
        store = self.broker.store
        mine = store.commitlog.max_offset
        point = (
            consistent_point(self.epochs.entries, master_epochs, theirs.maxOffset)
            if self.epochs.entries
            else mine
        )
        if point < 0:
            point = min(mine, theirs.maxOffset) if not master_epochs else store.commitlog.min_offset
        if point < mine:
            cut = await self.broker.write(store.truncate_replica, point)
            log.warning("epochs differ from the master's: CommitLog cut to %d (%d bytes)", point, cut)
        self.epochs.adopt(master_epochs)

    async def _maintain_sync_state_set(self) -> None:
        """Grow the SyncStateSet by replicas that caught up, shrink it by those that lag too long."""
        now = time.monotonic()
        patience = self.broker.config.ha_max_time_slave_not_catchup / 1000
        top = self.broker.store.commitlog.max_offset
        wanted = {self.broker_id}
        for conn in self.broker.ha_service.connections:
            if not conn.broker_id:
                continue
            caught_up = conn.ack >= top
            if caught_up or (conn.broker_id in self.sync_state_set and now - conn.caught_up_at < patience):
                wanted.add(conn.broker_id)
        if wanted == self.sync_state_set:
            return
        answer = await self._call(
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
            C.AlterSyncStateSetRequestHeader(
                brokerName=self.broker.config.broker_name,
                masterBrokerId=self.broker_id,
                masterEpoch=self.master_epoch,
                invokeTime=int(time.time() * 1000),
            ),
            C.SyncStateSet(sorted(wanted), self.sync_state_set_epoch).to_json(),
        )
        if answer.code != ResponseCode.SUCCESS:
            log.info("SyncStateSet %s not accepted: %d %s", sorted(wanted), answer.code, answer.remark)
            return
        members = C.SyncStateSet.from_json(answer.body or b"{}")
        self.sync_state_set, self.sync_state_set_epoch = set(members.syncStateSet), members.syncStateSetEpoch
        self._set_sync_members()
        log.info("SyncStateSet of %s is now %s (epoch %d)", self.broker.config.broker_name,
                 sorted(self.sync_state_set), self.sync_state_set_epoch)  # fmt: skip
