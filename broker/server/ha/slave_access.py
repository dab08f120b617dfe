"""Who may replicate from a master's HA port.

The classic HA protocol carries no credentials, so a master with access control on (or with
brokerWhiteRemoteAddresses set) serves only hosts on brokerWhiteRemoteAddresses and the hosts its
NameServers list as slaves of its brokerName (a NameServer with access control takes registrations
only signed or from white-listed hosts). Any other connection is closed before a byte is sent. A
stranger's connection makes the master ask its NameServers again, at most once a second, so a slave
that has just registered is let in on its next try. Without either setting the port is open, as
Apache RocketMQ's is.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from broker.acl.addresses import host_of
from broker.acl.client import secure
from broker.protocol.bodies import BodyError, ClusterInfo
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import make_request
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingError

if TYPE_CHECKING:
    from broker.server.config import BrokerConfig

log = logging.getLogger(__name__)

ASK_INTERVAL = 1.0  # seconds between two lookups of the registered slaves
REQUEST_TIMEOUT = 3.0
MASTER_ID = 0


class SlaveAccess:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.restricted = config.access_control or bool(config.broker_white_remote_addresses.strip())
        self._white = config.broker_white_list()
        self._slaves: frozenset[str] = frozenset()  # hosts registered as slaves of this brokerName
        self._asked = float("-inf")
        self._client: RemotingClient | None = None

    async def allows(self, host: str) -> bool:
        """Whether ``host`` may replicate from this master."""
        if not self.restricted or self._white(host) or host in self._slaves:
            return True
        now = asyncio.get_running_loop().time()
        if now - self._asked < ASK_INTERVAL:
            return False
        self._asked = now
        self._slaves = await self._registered_slaves()
        return host in self._slaves

    async def _registered_slaves(self) -> frozenset[str]:
        if self._client is None:
            client = RemotingClient(connect_timeout=REQUEST_TIMEOUT)
            self._client = secure(client, self.config.inner_client_security())
        hosts: set[str] = set()
        for addr in self.config.namesrv_addrs:
            try:
                response = await self._client.invoke(
                    addr, make_request(RequestCode.GET_BROKER_CLUSTER_INFO), REQUEST_TIMEOUT
                )
                if response.code != ResponseCode.SUCCESS:
                    raise RemotingError(f"answered {response.code}: {response.remark}")
                info = ClusterInfo.from_json(response.body or b"{}")
            except (RemotingError, BodyError) as exc:
                log.warning("cannot ask NameServer %s for this broker's slaves: %s", addr, exc)
                continue
            brokers = info.brokerAddrTable.get(self.config.broker_name)
            if brokers is not None and brokers.cluster in (None, self.config.broker_cluster_name):
                hosts.update(host_of(a) for i, a in brokers.brokerAddrs.items() if i != MASTER_ID)
        return frozenset(hosts)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
