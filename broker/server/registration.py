"""Keeping every NameServer informed: REGISTER_BROKER at start, every registerNameServerPeriod and
right after a topic change; UNREGISTER_BROKER at shutdown.

A NameServer that is down costs one log line per outage (not per attempt) and is simply tried
again next period: the other NameServers keep being served.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from broker.acl.client import secure
from broker.protocol.bodies import (
    RegisterBrokerBody,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
)
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from broker.protocol.message import body_crc
from broker.protocol.remoting import make_request
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingError
from broker.server.config import BrokerConfig

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 3.0
MIN_PERIOD_MS, MAX_PERIOD_MS = 10_000, 60_000


class NameServerRegistration:
    def __init__(self, config: BrokerConfig, topics: Callable[[], TopicConfigSerializeWrapper]) -> None:
        self.config = config
        self._topics = topics
        # signed with the inner credentials (a NameServer with access control wants it); with tlsEnable
        # the NameServers serve TLS only
        self._client = secure(RemotingClient(connect_timeout=REQUEST_TIMEOUT), config.inner_client_security())
        self._trigger = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.registered: set[str] = set()  # NameServers that accepted us at least once
        self._failing: set[str] = set()
        # a slave hears of its master here: (masterAddr, haServerAddr) of each answer
        self.on_master: Callable[[str | None, str | None], None] = lambda _master, _ha: None

    @property
    def period(self) -> float:
        return min(max(self.config.register_name_server_period, MIN_PERIOD_MS), MAX_PERIOD_MS) / 1000

    @property
    def all_registered(self) -> bool:
        return set(self.config.namesrv_addrs) <= self.registered

    async def start(self) -> None:
        """Register once now (so ``ready`` can become true), then keep registering in the background."""
        await self.register_all()
        self._task = asyncio.create_task(self._loop(), name="namesrv-registration")

    def trigger(self) -> None:
        """Register again as soon as possible (a topic changed)."""
        self._trigger.set()

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._trigger.wait(), self.period)
            self._trigger.clear()
            await self.register_all()

    def _body(self) -> bytes:
        wrapper = self._topics()
        full = TopicConfigAndMappingSerializeWrapper(
            topicConfigTable=wrapper.topicConfigTable, dataVersion=wrapper.dataVersion
        )
        return RegisterBrokerBody(topicConfigSerializeWrapper=full).encode()

    async def register_all(self) -> None:
        addrs = self.config.namesrv_addrs
        if not addrs:
            return
        body = self._body()
        c = self.config
        header = RegisterBrokerRequestHeader(
            brokerName=c.broker_name,
            brokerAddr=c.broker_addr,
            clusterName=c.broker_cluster_name,
            haServerAddr=c.ha_server_addr,
            brokerId=c.broker_id,
            heartbeatTimeoutMillis=c.channel_expired_timeout,
            compressed=False,
            bodyCrc32=body_crc(body),
        )
        await asyncio.gather(*(self._register(addr, header, body) for addr in addrs))

    async def _register(self, addr: str, header: RegisterBrokerRequestHeader, body: bytes) -> None:
        try:
            response = await self._client.invoke(
                addr, make_request(RequestCode.REGISTER_BROKER, header, body=body), REQUEST_TIMEOUT
            )
        except RemotingError as exc:
            self._failed(addr, str(exc))
            return
        if response.code != ResponseCode.SUCCESS:
            self._failed(addr, f"answered {response.code}: {response.remark}")
            return
        if addr in self._failing:
            log.info("registered with NameServer %s again", addr)
        self._failing.discard(addr)
        self.registered.add(addr)
        answer = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
        self.on_master(answer.masterAddr, answer.haServerAddr)

    def _failed(self, addr: str, reason: str) -> None:
        if addr not in self._failing:
            log.warning(
                "cannot register with NameServer %s (%s); retrying every %gs", addr, reason, self.period
            )
            self._failing.add(addr)

    async def stop(self) -> None:
        """Stop the loop and tell every NameServer we are gone (best effort, bounded)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        c = self.config
        header = UnRegisterBrokerRequestHeader(
            brokerName=c.broker_name,
            brokerAddr=c.broker_addr,
            clusterName=c.broker_cluster_name,
            brokerId=c.broker_id,
        )
        for addr in c.namesrv_addrs:
            try:
                await self._client.invoke(
                    addr, make_request(RequestCode.UNREGISTER_BROKER, header), REQUEST_TIMEOUT
                )
            except RemotingError as exc:
                log.info("cannot unregister from NameServer %s: %s", addr, exc)
        await self._client.close()
