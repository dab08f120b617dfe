"""Keeping every NameServer informed: REGISTER_BROKER at start and every registerNameServerPeriod
(the whole topic table), right after topics change (only those topics, as RocketMQ's
registerIncrementBrokerData does), UNREGISTER_BROKER at shutdown.

The cost of a change is the size of the change, not of the table: a new topic sends one topic.
Bodies are encoded on a worker thread, and one registration is in flight at a time; changes made
meanwhile are sent together by the next one (a full registration covers the changes before it). A
whole table of many topics goes in RocketMQ's compressed form, which costs both sides a fraction
of the JSON.

A NameServer that is down costs one log line per outage (not per attempt) and is simply tried
again next period: the other NameServers keep being served.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from broker.acl.client import secure
from broker.protocol.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
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
from broker.server.coalesce import Coalesced
from broker.server.config import BrokerConfig

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 3.0
MIN_PERIOD_MS, MAX_PERIOD_MS = 10_000, 60_000
# A table this large goes compressed (unless a topic carries a topicSysFlag, which the compressed
# form does not hold); compressedRegister compresses every full registration.
COMPRESS_FROM_TOPICS = 1000


@dataclass(frozen=True, slots=True)
class Encoded:
    body: bytes
    compressed: bool


def encode_registration(
    table: dict[str, TopicConfig], version: DataVersion, *, compress: bool = False
) -> Encoded:
    """A RegisterBrokerBody for ``table``; compressed when asked or when the table is large and
    nothing would be lost."""
    wrapper = TopicConfigAndMappingSerializeWrapper(topicConfigTable=table, dataVersion=version)
    body = RegisterBrokerBody(topicConfigSerializeWrapper=wrapper)
    if not compress and len(table) >= COMPRESS_FROM_TOPICS:
        compress = not any(c.topicSysFlag for c in table.values())
    return Encoded(body.encode(compress), compress)


class TopicTable(Protocol):
    """What the registration reads of the broker's topics (TopicConfigManager)."""

    table: dict[str, TopicConfig]
    data_version: DataVersion


class NameServerRegistration:
    def __init__(self, config: BrokerConfig, topics: TopicTable) -> None:
        self.config = config
        self._topics = topics
        # signed with the inner credentials (a NameServer with access control wants it); with tlsEnable
        # the NameServers serve TLS only
        self._client = secure(RemotingClient(connect_timeout=REQUEST_TIMEOUT), config.inner_client_security())
        self._trigger = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._full = False  # the next registration sends the whole table
        self._changed: dict[str, TopicConfig] = {}  # topics changed since the last registration
        self._sender = Coalesced(self._send, "namesrv-registration")
        self.registered: set[str] = set()  # NameServers that accepted us at least once
        self._failing: set[str] = set()
        self.sent_full = 0  # registrations sent, whole table and changes only (status and tests)
        self.sent_increments = 0
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
        self._task = asyncio.create_task(self._loop(), name="namesrv-registration-period")

    def trigger(self) -> None:
        """Register the whole table again as soon as possible (brokerPermission or the master changed)."""
        self._trigger.set()

    def topics_changed(self, configs: Iterable[TopicConfig]) -> None:
        """Send these topics soon (coalesced with other changes); :meth:`sync` waits for it."""
        for config in configs:
            self._changed[config.topicName or ""] = config
        if self.config.namesrv_addrs and self._task is not None:
            self._sender.request()

    async def sync(self) -> None:
        """Wait until every change made so far has reached the NameServers (or failed to)."""
        if self.config.namesrv_addrs:
            await self._sender.run()

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._trigger.wait(), self.period)
            self._trigger.clear()
            await self.register_all()

    async def register_all(self) -> None:
        """Send the whole table now (after any registration in flight)."""
        if self.config.namesrv_addrs:
            self._full = True
            await self._sender.run()

    async def _send(self) -> None:
        """One registration: the whole table when asked for, else the topics changed since the last."""
        # read now, on the event loop: this is the state that goes out
        current, version = self._topics.table, self._topics.data_version
        if self._full:
            table, compress = dict(current), self.config.compressed_register
            self._full = False
            self.sent_full += 1
        else:
            table = {n: current[n] for n in self._changed if n in current}  # deleted ones: not sent
            compress = False
            if not table:
                self._changed = {}
                return
            self.sent_increments += 1
        self._changed = {}
        permission = self.config.broker_permission
        if permission & 6 != 6:  # a read-only or write-only broker announces its topics so
            table = {n: replace(c, perm=c.perm & permission) for n, c in table.items()}
        encoded = await asyncio.to_thread(encode_registration, table, version, compress=compress)
        c = self.config
        header = RegisterBrokerRequestHeader(
            brokerName=c.broker_name,
            brokerAddr=c.broker_addr,
            clusterName=c.broker_cluster_name,
            haServerAddr=c.ha_server_addr,
            brokerId=c.broker_id,
            heartbeatTimeoutMillis=c.channel_expired_timeout,
            compressed=encoded.compressed,
            bodyCrc32=body_crc(encoded.body),
        )
        await asyncio.gather(*(self._register(addr, header, encoded.body) for addr in c.namesrv_addrs))

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
        # the registration in flight ends first (each NameServer is given REQUEST_TIMEOUT at most)
        with contextlib.suppress(Exception):  # a failure was logged where it happened
            await asyncio.wait_for(self._sender.settle(), 2 * REQUEST_TIMEOUT)
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
