"""Clusters and brokers: who is registered, how they are doing, their configuration, readiness."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from admin.errors import BadInput, Timeout
from admin.service.base import ServiceBase, admin_call, admin_error, gather

if TYPE_CHECKING:
    from admin.models.cluster import (
        BrokerInfo,
        BrokerRuntime,
        ClusterList,
        ClusterStatus,
        ConfigChange,
        ConfigValues,
        NamesrvState,
        Readiness,
    )


def first_float(text: str | None) -> float:
    """The first number of a stats text such as putTps ``"12.5 11.0 10.2"``."""
    try:
        return float((text or "").split()[0])
    except (IndexError, ValueError):
        return 0.0


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


UNKNOWN_ROLE = "UNKNOWN"  # broker status of a broker the NameServer does not list


class ClusterOps(ServiceBase):
    async def _runtime_or_error(self, addr: str) -> dict[str, str] | Exception:
        try:
            return await self.api.runtime_info(addr)
        except Exception as exc:  # one broker down must not hide the others
            mapped = admin_error(exc)
            if mapped is None:
                raise
            return mapped

    @admin_call
    async def cluster_list(self, cluster: str | None = None) -> ClusterList:
        """Every broker of every cluster (or of one), with runtime figures fetched concurrently."""
        from admin.models.cluster import ClusterList
        from admin.service.ha import ha_or_none, with_slave_lag

        info = await self._cluster()
        if cluster is not None:
            self._masters(info, cluster)  # NotFound for an unknown cluster
        members = [
            (cname, bname, bid, addr)
            for cname, bnames in info.clusterAddrTable.items()
            if cluster is None or cname == cluster
            for bname in bnames
            if (data := info.brokerAddrTable.get(bname)) is not None
            for bid, addr in data.brokerAddrs.items()
        ]
        members.sort()
        answers, has = await asyncio.gather(
            gather(self._runtime_or_error(m[3]) for m in members),
            gather(ha_or_none(self.api, m[3]) for m in members),
        )
        brokers = [
            dataclasses.replace(self._broker_info(cname, bname, bid, addr, answer), ha=ha)
            for (cname, bname, bid, addr), answer, ha in zip(members, answers, has, strict=True)
        ]
        return ClusterList(with_slave_lag(brokers))

    @staticmethod
    def _broker_info(
        cluster: str, name: str, broker_id: int, addr: str, answer: dict[str, str] | Exception
    ) -> BrokerInfo:
        from admin.models.cluster import BrokerInfo

        runtime = dict(sorted(answer.items())) if isinstance(answer, dict) else {}
        return BrokerInfo(
            cluster=cluster,
            broker_name=name,
            broker_id=broker_id,
            address=addr,
            role="MASTER" if broker_id == 0 else "SLAVE",
            reachable=isinstance(answer, dict),
            error=None if isinstance(answer, dict) else str(answer),
            version=runtime.get("brokerVersionDesc"),
            put_tps=first_float(runtime.get("putTps")),
            get_tps=first_float(runtime.get("getTransferredTps")),
            disk_ratio=_float_or_none(runtime.get("commitLogDiskRatio")),
            commitlog_min_offset=_int_or_none(runtime.get("commitLogMinOffset")),
            commitlog_max_offset=_int_or_none(runtime.get("commitLogMaxOffset")),
            runtime=runtime,
        )

    async def _namesrv_state(self, addr: str) -> NamesrvState:
        from admin.models.cluster import NamesrvState

        try:
            await self.api.cluster_info([addr])
        except Exception as exc:
            mapped = admin_error(exc)
            if mapped is None:
                raise
            return NamesrvState(addr, False, str(mapped))
        return NamesrvState(addr, True, None)

    @admin_call
    async def cluster_status(self, cluster: str | None = None) -> ClusterStatus:
        """Each NameServer's reachability, a summary per cluster, and the brokers."""
        from admin.models.cluster import ClusterStatus, ClusterSummary

        namesrvs, listing = await asyncio.gather(
            gather(self._namesrv_state(a) for a in self.namesrv), self.cluster_list(cluster)
        )
        by_cluster: dict[str, list[BrokerInfo]] = {}
        for b in listing.brokers:
            by_cluster.setdefault(b.cluster, []).append(b)
        summaries = [
            ClusterSummary(
                name=name,
                brokers=len(members),
                masters=sum(b.broker_id == 0 for b in members),
                unreachable=sum(not b.reachable for b in members),
                put_tps=round(sum(b.put_tps for b in members), 2),
                get_tps=round(sum(b.get_tps for b in members), 2),
                max_disk_ratio=max((b.disk_ratio for b in members if b.disk_ratio is not None), default=None),
            )
            for name, members in sorted(by_cluster.items())
        ]
        return ClusterStatus(namesrvs, summaries, listing.brokers)

    @admin_call
    async def broker_status(self, broker: str | None = None) -> BrokerInfo:
        """One broker (or the only one registered) as the cluster list shows it, replication included.

        A broker that answers but is not registered with the NameServer has role ``UNKNOWN``."""
        from admin.service.ha import ha_or_none, with_slave_lag

        addr = await self._one_broker(broker)
        info, runtime, ha = await asyncio.gather(
            self._cluster(), self.api.runtime_info(addr), ha_or_none(self.api, addr)
        )
        member = next(
            (
                (cname, bname, bid, data.brokerAddrs.get(0))
                for cname, bnames in info.clusterAddrTable.items()
                for bname in bnames
                if (data := info.brokerAddrTable.get(bname)) is not None
                for bid, baddr in data.brokerAddrs.items()
                if baddr == addr
            ),
            None,
        )
        if member is None:  # reachable, but not registered
            unknown = self._broker_info("", "", -1, addr, runtime)
            return dataclasses.replace(unknown, role=UNKNOWN_ROLE, ha=ha)
        cname, bname, bid, master = member
        found = dataclasses.replace(self._broker_info(cname, bname, bid, addr, runtime), ha=ha)
        if bid == 0 or master is None or ha is None or ha.master:
            return found
        # a slave's lag is its master's CommitLog end minus its own, as in cluster list
        top = self._broker_info(cname, bname, 0, master, {})
        top = dataclasses.replace(top, ha=await ha_or_none(self.api, master))
        return with_slave_lag([top, found])[1]

    @admin_call
    async def broker_runtime(self, broker: str | None = None) -> BrokerRuntime:
        """Every GET_BROKER_RUNTIME_INFO key of one broker, sorted."""
        from admin.models.cluster import BrokerRuntime

        addr = await self._one_broker(broker)
        return BrokerRuntime(addr, dict(sorted((await self.api.runtime_info(addr)).items())))

    @admin_call
    async def broker_config_get(
        self, broker: str | None = None, keys: list[str] | None = None
    ) -> ConfigValues:
        """A broker's configuration, or only ``keys`` of it."""
        from admin.models.cluster import ConfigValues

        addr = await self._one_broker(broker)
        values = await self.api.broker_config(addr)
        if keys:
            missing = [k for k in keys if k not in values]
            if missing:
                raise BadInput(f"broker {addr} has no setting {', '.join(missing)}")
            values = {k: values[k] for k in keys}
        return ConfigValues(addr, dict(sorted(values.items())))

    @admin_call
    async def broker_config_set(
        self, values: Mapping[str, str], broker: str | None = None, cluster: str | None = None
    ) -> ConfigChange:
        """Change settings on one broker, or on every broker of a cluster (masters and slaves)."""
        from admin.models.cluster import ConfigChange

        if not values:
            raise BadInput("no setting to change")
        if cluster is not None:
            info = await self._cluster()
            self._masters(info, cluster)
            addrs = sorted(
                a
                for bname in info.clusterAddrTable[cluster]
                if (d := info.brokerAddrTable.get(bname)) is not None
                for a in d.brokerAddrs.values()
            )
        else:
            addrs = [await self._one_broker(broker)]
        await gather(self.api.update_broker_config(a, values) for a in addrs)
        return ConfigChange(addrs, dict(values))

    # -- readiness --------------------------------------------------------------------------------
    async def _remoting_ready(self, min_brokers: int) -> tuple[bool, str, list[str]]:
        """Ready when the NameServer and at least ``min_brokers`` brokers (masters and slaves alike)
        answer; also returns the /readyz URLs the brokers' configurations announce (httpPort)."""
        info = await self._cluster()
        members = {
            f"{name}/{broker_id}": addr
            for name, data in sorted(info.brokerAddrTable.items())
            for broker_id, addr in sorted(data.brokerAddrs.items())
        }
        if len(members) < min_brokers:
            return False, f"{len(members)} of {min_brokers} broker(s) registered", []
        answers = await gather(self._runtime_or_error(a) for a in members.values())
        down = [
            name
            for name, answer in zip(members, answers, strict=True)
            if not isinstance(answer, dict) or answer.get("brokerActive", "true") != "true"
        ]
        if down:
            return False, f"broker(s) not answering: {', '.join(down)}", []
        configs = await gather(self.api.broker_config(a) for a in members.values())
        urls = [
            f"http://{addr.rpartition(':')[0]}:{port}/readyz"
            for addr, config in zip(members.values(), configs, strict=True)
            if (port := _int_or_none(config.get("httpPort"))) and port > 0
        ]
        return True, f"NameServer and {len(members)} broker(s) answer", urls

    @staticmethod
    async def _http_ready(url: str, timeout: float) -> bool | None:
        """True on 200, False on another status, None when nothing answers at ``url``."""
        import httpx

        try:
            async with httpx.AsyncClient(timeout=timeout) as client:
                response = await client.get(url)
        except httpx.HTTPError:
            return None
        return response.status_code == 200

    async def _ready_once(self, http: str | None, min_brokers: int) -> tuple[bool, str, str]:
        """(ready, method, detail) of one poll."""
        probe = min(self.timeout, 2.0)
        if http is not None:
            url = (http if "://" in http else f"http://{http}").rstrip("/") + "/readyz"
            answer = await self._http_ready(url, probe)
            return bool(answer), "http", f"{url} {'answers 200' if answer else 'is not ready'}"
        try:
            ok, detail, urls = await self._remoting_ready(min_brokers)
        except Exception as exc:
            mapped = admin_error(exc)
            if mapped is None:
                raise
            return False, "remoting", str(mapped)
        if not ok:
            return False, "remoting", detail
        # an HTTP endpoint that answers has the last word; one that does not (turned off, or its
        # port was overridden on the command line) leaves the remoting answer standing
        answers = await gather(self._http_ready(u, probe) for u in urls)
        busy = [u for u, a in zip(urls, answers, strict=True) if a is False]
        if busy:
            return False, "http", f"{', '.join(busy)} not ready yet"
        return True, "http" if any(answers) else "remoting", detail

    @admin_call
    async def wait_ready(
        self, timeout: float, http: str | None = None, min_brokers: int = 1, interval: float = 0.25
    ) -> Readiness:
        """Poll until ready: ``http`` (an HTTP endpoint's ``host:port``) answers /readyz with 200, or
        without it, the NameServer and ``min_brokers`` brokers answer (and their /readyz, if any)."""
        from admin.models.cluster import Readiness

        if timeout <= 0:
            raise BadInput(f"--timeout must be positive, not {timeout:g}")
        if min_brokers < 1:
            raise BadInput(f"--brokers must be at least 1, not {min_brokers}")

        began = time.monotonic()
        while True:
            ok, method, detail = await self._ready_once(http, min_brokers)
            waited = int((time.monotonic() - began) * 1000)
            if ok:
                return Readiness(True, method, http or ";".join(self.namesrv), detail, waited)
            if waited / 1000 + interval > timeout:
                raise Timeout(f"not ready after {timeout:g} s: {detail}")
            await asyncio.sleep(interval)
