"""Slave metadata sync (SlaveSynchronize): topics, subscription groups, consumer offsets, delay
offsets and message request modes (PULL/POP per topic@group) pulled from the master every
slaveSyncIntervalMs, on (re)connection and when replicated messages name a topic this slave does not
know yet.

The master checks these requests like any other: with its access control on, the slave signs them
with innerClientAuthenticationCredentials (a user or account of the master)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

from broker.acl.client import secure
from broker.protocol import lenient_json
from broker.protocol.bodies import BodyError, DataVersion, TopicConfigSerializeWrapper
from broker.protocol.codes import RequestCode, ResponseCode, name_of
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.protocol.remoting import make_request
from broker.protocol.request_mode import MessageRequestModeSerializeWrapper
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingError
from broker.server.config import BrokerConfig
from broker.server.consume_mode_processor import ConsumeModeProcessor
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.ha.ha_client import HAClient
from broker.server.registration import NameServerRegistration
from broker.server.schedule_service import ScheduleService
from broker.server.store_access import StoreAccess
from broker.server.subscription_group import SubscriptionGroupManager
from broker.server.topic_config import TopicConfigManager
from broker.store.config_files import decode_delay_file, decode_offset_file

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 3.0


class SyncParts(StoreAccess, Protocol):
    """The parts of the broker a slave's metadata copy writes."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def schedule(self) -> ScheduleService: ...

    @property
    def request_modes(self) -> ConsumeModeProcessor: ...

    @property
    def registration(self) -> NameServerRegistration: ...

    @property
    def ha_client(self) -> HAClient | None: ...


class SlaveSynchronize:
    def __init__(self, broker: SyncParts) -> None:
        self.broker = broker
        # signed with the inner credentials; with tlsEnable the master serves TLS only
        self._client = secure(
            RemotingClient(connect_timeout=REQUEST_TIMEOUT), broker.config.inner_client_security()
        )
        self._trigger = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.last_sync = 0.0  # loop time of the last complete sync (0 = never)
        self._failing = False

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="slave-synchronize")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._client.close()

    def trigger(self) -> None:
        self._trigger.set()

    async def _loop(self) -> None:
        period = self.broker.config.slave_sync_interval_ms / 1000
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._trigger.wait(), period)
            self._trigger.clear()
            addr = self.broker.ha_client.master_addr if self.broker.ha_client else None
            if addr is None:
                continue
            try:
                await self.sync_all(addr)
            except (RemotingError, BodyError, ValueError, OSError) as exc:
                if not self._failing:
                    log.warning("metadata sync from master %s failed: %s", addr, exc)
                self._failing = True
            else:
                self._failing = False

    async def _fetch(self, addr: str, code: int, *, optional: bool = False) -> Any:
        """The body of the master's answer; None when ``optional`` and the master does not serve
        ``code`` (a master older than the table)."""
        response = await self._client.invoke(addr, make_request(code), REQUEST_TIMEOUT)
        if optional and response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            return None
        if response.code == ResponseCode.NO_PERMISSION:
            hint = (
                "check the user of innerClientAuthenticationCredentials"
                if self._client.rpc_hook
                else "set innerClientAuthenticationCredentials on this slave"
            )
            raise ValueError(f"{name_of(code)} refused: {response.remark} ({hint})")
        if response.code != ResponseCode.SUCCESS:
            raise ValueError(f"{name_of(code)} answered {response.code}: {response.remark}")
        return lenient_json.loads(response.body or b"{}")

    async def sync_all(self, addr: str) -> None:
        """One round: each table replaces the slave's copy when the master's differs."""
        broker = self.broker
        topics_doc, groups_doc, offsets_doc, delay_doc, modes_doc = await asyncio.gather(
            self._fetch(addr, RequestCode.GET_ALL_TOPIC_CONFIG),
            self._fetch(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
            self._fetch(addr, RequestCode.GET_ALL_CONSUMER_OFFSET),
            self._fetch(addr, RequestCode.GET_ALL_DELAY_OFFSET),
            self._fetch(addr, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, optional=True),
        )
        wrapper = TopicConfigSerializeWrapper.from_obj(topics_doc)
        topics = broker.topics
        if (
            wrapper.dataVersion != topics.data_version
            or wrapper.topicConfigTable.keys() != topics.table.keys()
        ):
            topics.table = {name: cfg for name, cfg in wrapper.topicConfigTable.items() if name}
            topics.data_version = wrapper.dataVersion
            topics.refresh_policies()
            topics.save()  # the broker's one saver of the file: a second writer would race its .tmp
            broker.registration.trigger()
        groups = broker.groups
        version = DataVersion.from_obj(groups_doc.get("dataVersion") or {})
        if version != groups.data_version:
            table = groups_doc.get("subscriptionGroupTable") or {}
            groups.table = {name: SubscriptionGroupConfig.from_obj(cfg) for name, cfg in table.items()}
            groups.data_version = version
            groups.save()
        for key, queues in decode_offset_file(offsets_doc).items():
            topic, _, group = key.rpartition("@")
            for queue_id, offset in queues.items():
                broker.offsets.commit(group, topic, queue_id, offset)
        await broker.read(broker.offsets.persist)
        delays = decode_delay_file(delay_doc)
        broker.schedule.offsets.update({k: v for k, v in delays.items() if k in broker.schedule.offsets})
        await broker.schedule.persist()
        if modes_doc is not None:
            # the master's table as a whole: modes it no longer has go (syncMessageRequestMode)
            modes = MessageRequestModeSerializeWrapper.from_obj(modes_doc).messageRequestModeMap
            if await broker.request_modes.replace_all(modes):
                log.info("message request modes updated from master %s", addr)
        self.last_sync = asyncio.get_running_loop().time()
