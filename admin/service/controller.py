"""Controller mode: the controllers' metadata and settings, each group's SyncStateSet and master
epoch, the brokers' epoch files, elections and cleaning a group's metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from admin.service.base import ServiceBase, admin_call
from broker.client.admin_api import RemoteError
from broker.client.remoting_client import RemotingError

if TYPE_CHECKING:
    from admin.models.controller import (
        BrokerEpochs,
        ControllerMeta,
        ControllerStatus,
        Election,
        GroupReplicas,
    )


def _addresses(controllers: Sequence[str]) -> list[str]:
    addrs = [a.strip() for item in controllers for a in item.replace(",", ";").split(";") if a.strip()]
    if not addrs:
        raise BadInput("no controller address given")
    return addrs


class ControllerOps(ServiceBase):
    @admin_call
    async def controller_metadata(self, controllers: Sequence[str]) -> ControllerMeta:
        """CONTROLLER_GET_METADATA_INFO of the first controller that answers."""
        from admin.models.controller import ControllerMeta
        from broker.client import controller_api

        addr, meta = await controller_api.metadata(self.api, _addresses(controllers))
        return ControllerMeta(
            addr,
            meta.group or "",
            meta.controllerLeaderId,
            meta.controllerLeaderAddress,
            meta.isLeader,
            [p for p in (meta.peers or "").split(";") if p],
        )

    @admin_call
    async def controller_addresses(self) -> list[str]:
        """The controllers brokers in controller mode name (their controllerAddr); [] when no broker
        runs in controller mode. One answering broker per cluster tells: a cluster's brokers share it."""
        info = await self._cluster()
        for cluster in sorted(info.clusterAddrTable):
            for name in sorted(info.clusterAddrTable[cluster]):
                data = info.brokerAddrTable.get(name)
                addr = next(iter(sorted(data.brokerAddrs.items())), (0, ""))[1] if data else ""
                if not addr:
                    continue
                try:
                    values = await self.api.broker_config(addr)
                except (RemotingError, RemoteError):
                    continue  # a broker down: ask the cluster's next one
                if values.get("enableControllerMode") == "true" and values.get("controllerAddr"):
                    return _addresses([values["controllerAddr"]])
                break
        return []

    async def _group_names(self, cluster: str | None) -> list[str]:
        info = await self._cluster()
        if cluster is None:
            return sorted(info.brokerAddrTable)
        if cluster not in info.clusterAddrTable:
            raise NotFound(f"cluster {cluster} not found")
        return sorted(info.clusterAddrTable[cluster])

    @admin_call
    async def sync_state_sets(
        self, controllers: Sequence[str], broker_names: Sequence[str] = (), cluster: str | None = None
    ) -> list[GroupReplicas]:
        """Each group's master, epochs and replicas (in the SyncStateSet or not): of ``broker_names``,
        else of every group of ``cluster`` (or of every cluster) the NameServer lists."""
        from admin.models.controller import GroupReplicas, Replica
        from broker.client import controller_api

        names = list(broker_names) or await self._group_names(cluster)
        table = (
            await controller_api.sync_state_data(self.api, _addresses(controllers), names)
        ).replicasInfoTable
        groups = []
        for name in sorted(table):
            info = table[name]
            members = [Replica(r.brokerId, r.brokerAddress, r.alive, True) for r in info.inSyncReplicas]
            members += [Replica(r.brokerId, r.brokerAddress, r.alive, False) for r in info.notInSyncReplicas]
            groups.append(
                GroupReplicas(
                    name,
                    info.masterBrokerId if info.masterBrokerId > 0 else None,
                    info.masterAddress or None,
                    info.masterEpoch,
                    info.syncStateSetEpoch,
                    sorted(members, key=lambda r: r.broker_id),
                )
            )
        return groups

    @admin_call
    async def controller_status(
        self, controllers: Sequence[str], broker_names: Sequence[str] = (), cluster: str | None = None
    ) -> ControllerStatus:
        """Who leads the controllers, and each group's master, epochs and SyncStateSet."""
        from admin.models.controller import ControllerStatus

        meta = await self.controller_metadata(controllers)
        return ControllerStatus(meta, await self.sync_state_sets(controllers, broker_names, cluster))

    @admin_call
    async def broker_epochs(
        self, broker_name: str | None = None, cluster: str | None = None
    ) -> list[BrokerEpochs]:
        """The epoch file of every broker of ``broker_name`` (or of ``cluster``, or of all)."""
        from admin.models.controller import BrokerEpochs, Epoch
        from broker.client import controller_api

        info = await self._cluster()
        names = [broker_name] if broker_name else await self._group_names(cluster)
        addrs = [
            a
            for n in names
            if n in info.brokerAddrTable
            for a in info.brokerAddrTable[n].brokerAddrs.values()
        ]
        if broker_name and not addrs:
            raise NotFound(f"broker {broker_name} not found")
        result = []
        for addr in sorted(addrs):
            cache = await controller_api.broker_epochs(self.api, addr)
            entries = cache.epochList
            epochs = [
                Epoch(e.epoch, e.startOffset, cache.maxOffset if i == len(entries) - 1 else e.endOffset)
                for i, e in enumerate(entries)
            ]
            result.append(
                BrokerEpochs(
                    cache.clusterName, cache.brokerName, addr, cache.brokerId, cache.maxOffset, epochs
                )
            )
        return result

    @admin_call
    async def elect_master(
        self, controllers: Sequence[str], cluster: str, broker_name: str, broker_id: int | None
    ) -> Election:
        """Make ``broker_id`` the master (None: let the controller choose among the in-sync replicas)."""
        from admin.models.controller import Election
        from broker.client import controller_api

        head, body = await controller_api.elect_master(
            self.api, _addresses(controllers), cluster, broker_name, broker_id
        )
        return Election(
            cluster,
            broker_name,
            head.masterBrokerId,
            head.masterAddress,
            head.masterEpoch or 0,
            head.syncStateSetEpoch or 0,
            dict(sorted(body.brokerMemberGroup.brokerAddrs.items())),
            sorted(body.syncStateSet),
        )

    @admin_call
    async def clean_broker_metadata(
        self,
        controllers: Sequence[str],
        broker_name: str,
        cluster: str | None = None,
        broker_ids: Sequence[int] = (),
        clean_living: bool = False,
    ) -> None:
        """Forget brokers of a group on the controller (all of them without ``broker_ids``)."""
        from broker.client import controller_api

        await controller_api.clean_broker_data(
            self.api, _addresses(controllers), cluster, broker_name, list(broker_ids) or None, clean_living
        )

    @admin_call
    async def controller_configs(self, controllers: Sequence[str]) -> dict[str, dict[str, str]]:
        """Each controller's settings."""
        from broker.client import controller_api

        result = {}
        for addr in _addresses(controllers):
            text = await controller_api.config(self.api, addr)
            result[addr] = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        return result

    @admin_call
    async def update_controller_config(self, controllers: Sequence[str], key: str, value: str) -> None:
        from broker.client import controller_api

        for addr in _addresses(controllers):
            await controller_api.update_config(self.api, addr, {key: value})
