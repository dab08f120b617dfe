"""The service's connection, its error mapping, and the lookups every area shares.

Every public method of :class:`~admin.service.AdminService` is wrapped by :func:`admin_call`, the one
place where transport and server failures become :mod:`admin.errors`: an unreachable address becomes
``ConnectFailed(address)``, a missing answer ``Timeout``, a server's error code ``NotFound`` or
``OperationFailed`` carrying the server's remark.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, ParamSpec, Self, TypeVar

from admin.errors import AdminError, BadInput, ConnectFailed, NotFound, OperationFailed, Timeout
from broker.client.admin_api import AdminApi, RemoteError
from broker.client.remoting_client import (
    RemotingClient,
    RemotingClosedError,
    RemotingConnectError,
    RemotingTimeoutError,
)
from broker.protocol.bodies import BodyError, BrokerData, ClusterInfo, TopicRouteData
from broker.protocol.codes import ResponseCode
from broker.protocol.msgid import MessageIdError

if TYPE_CHECKING:
    from broker.acl.client import ClientSecurity
    from broker.client.producer import Producer

P = ParamSpec("P")
T = TypeVar("T")
Progress = Callable[[str, int, int], None]
"""Called as ``progress(label, done, total)`` while long work runs."""

_NOT_FOUND = frozenset(
    {ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, ResponseCode.QUERY_NOT_FOUND}
)


def admin_error(exc: Exception) -> AdminError | None:
    """The admin error for a transport, server or protocol failure; None for anything else."""
    match exc:
        case AdminError():
            return exc
        case RemotingConnectError():
            return ConnectFailed(exc.addr, str(exc).partition(" failed: ")[2] or "connection refused")
        case RemotingClosedError():
            return ConnectFailed(exc.addr, "the connection was closed")
        case RemotingTimeoutError():
            return Timeout(str(exc))
        case RemoteError() if exc.code in _NOT_FOUND:
            return NotFound(f"{exc.remark or 'not found'} (from {exc.addr})")
        case RemoteError():
            return OperationFailed(f"{exc.addr} refused: {exc.remark or f'error code {exc.code}'}")
        case BodyError():
            return OperationFailed(f"a server sent an answer that cannot be read: {exc}")
        case MessageIdError():
            return BadInput(str(exc))
    return None


def admin_call(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Turn the failures of one service method into :mod:`admin.errors`."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except Exception as exc:
            mapped = admin_error(exc)
            if mapped is None or mapped is exc:
                raise
            raise mapped from exc

    return wrapper


def master_address(broker: BrokerData) -> str | None:
    """The master's address (id 0), else the lowest id's, as mqadmin's selectBrokerAddr does."""
    if not broker.brokerAddrs:
        return None
    return broker.brokerAddrs.get(0) or broker.brokerAddrs[min(broker.brokerAddrs)]


async def gather(coros: Iterable[Awaitable[T]]) -> list[T]:
    """Run concurrently; the first failure is raised (and mapped by the caller's ``admin_call``)."""
    return list(await asyncio.gather(*coros))


class ServiceBase:
    """One connection pool to the NameServers and brokers; use as ``async with``."""

    def __init__(
        self, namesrv: Sequence[str], timeout: float = 5.0, security: ClientSecurity | None = None
    ) -> None:
        if not namesrv:
            raise BadInput("no NameServer address given (use -n, NAMESRV_ADDR or a profile)")
        if timeout <= 0:
            raise BadInput(f"the timeout must be positive, not {timeout:g}")
        self.namesrv = list(namesrv)
        self.timeout = timeout
        self.security = security  # for clients the service opens besides its own (send probes)
        self._client = RemotingClient(
            connect_timeout=min(timeout, 3.0),
            rpc_hook=security.rpc_hook() if security is not None else None,  # ACL signing
            ssl_context=security.ssl_context if security is not None else None,
        )
        self.api = AdminApi(self._client, timeout)

    async def close(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _producer(self, group: str, *, instance_name: str | None = None, trace: bool = False) -> Producer:
        """An SDK producer on the service's NameServers; it opens its own connections, so it signs and
        encrypts them as the service does."""
        from broker.client.producer import Producer

        security = self.security
        return Producer(
            group,
            ";".join(self.namesrv),
            instance_name=instance_name,
            credentials=security.credentials if security is not None else None,
            ssl_context=security.ssl_context if security is not None else None,
            trace=trace,
        )

    # -- shared lookups ---------------------------------------------------------------------------
    async def _cluster(self) -> ClusterInfo:
        return await self.api.cluster_info(self.namesrv)

    async def _route(self, topic: str) -> TopicRouteData:
        try:
            return await self.api.topic_route(self.namesrv, topic)
        except RemoteError as exc:
            if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                raise NotFound(f"topic {topic} not found") from None
            raise

    async def _route_or_none(self, topic: str) -> TopicRouteData | None:
        try:
            return await self._route(topic)
        except NotFound:
            return None

    @staticmethod
    def _masters(cluster: ClusterInfo, name: str | None = None) -> dict[str, str]:
        """Broker name -> master address, of one cluster or of all."""
        if name is not None and name not in cluster.clusterAddrTable:
            raise NotFound(f"cluster {name} not found")
        names = cluster.clusterAddrTable[name] if name is not None else list(cluster.brokerAddrTable)
        out: dict[str, str] = {}
        for broker_name in sorted(names):
            data = cluster.brokerAddrTable.get(broker_name)
            addr = master_address(data) if data is not None else None
            if addr is not None:
                out[broker_name] = addr
        return out

    async def _write_members(self, cluster: str | None, broker: str | None) -> list[tuple[str, str]]:
        """(broker name, address) of one broker (``-b``), or of every broker, masters and slaves, of
        the cluster (``-c``, or the only one): where the Java tools write ACL and user changes."""
        masters = await self._broker_targets(cluster, broker)
        if broker is not None:
            return list(masters.items())
        table = (await self._cluster()).brokerAddrTable
        return [
            (name, addr) for name in sorted(masters) for _, addr in sorted(table[name].brokerAddrs.items())
        ]

    async def _broker_targets(self, cluster: str | None, broker: str | None) -> dict[str, str]:
        """Broker name -> address to write to: one broker (``-b``), a cluster's masters (``-c``), or
        every master when the NameServer knows a single cluster."""
        info = await self._cluster()
        if broker is not None:
            names = [n for n, d in info.brokerAddrTable.items() if broker in d.brokerAddrs.values()]
            return {names[0] if names else broker: broker}
        if cluster is None:
            if len(info.clusterAddrTable) > 1:
                known = ", ".join(sorted(info.clusterAddrTable))
                raise BadInput(f"the NameServer knows several clusters ({known}): name one, or a broker")
            cluster = next(iter(info.clusterAddrTable), None)
            if cluster is None:
                raise NotFound("no broker is registered with the NameServer")
        masters = self._masters(info, cluster)
        if not masters:
            raise NotFound(f"cluster {cluster} has no master broker")
        return masters

    async def _one_broker(self, broker: str | None) -> str:
        """``broker``, or the only broker the NameServer knows."""
        if broker is not None:
            return broker
        addrs = sorted(
            a for d in (await self._cluster()).brokerAddrTable.values() for a in d.brokerAddrs.values()
        )
        if len(addrs) != 1:
            raise BadInput(
                "no broker is registered" if not addrs else f"{len(addrs)} brokers are registered: name one"
            )
        return addrs[0]

    @staticmethod
    def _route_masters(route: TopicRouteData) -> dict[str, str]:
        """Broker name -> master address of the brokers in a route."""
        out = {d.brokerName or "": master_address(d) for d in route.brokerDatas}
        return {name: addr for name, addr in sorted(out.items()) if addr is not None}
