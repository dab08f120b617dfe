"""Broker-side load balancing: SET_MESSAGE_REQUEST_MODE (401) stores how a group reads a topic in
``config/messageRequestMode.json``, GET_ALL_MESSAGE_REQUEST_MODE (402) answers every stored mode, and
QUERY_ASSIGNMENT (400) hands a consumer that lets the broker balance (RocketMQ 5 clients) its queues and
their mode, as RocketMQ's QueryAssignmentProcessor does.

A topic@group nobody set reads in ``defaultMessageRequestMode`` (PULL; POP with
``defaultPopShareQueueNum``); with ``serverLoadBalancerEnable=false`` every consumer gets every queue.
A slave copies its master's modes (broker/server/ha/sync_metadata.py), so consumers balanced by a slave
see the same modes.

A topic's queues come from its route on the NameServers (every broker's readable queues), cached for
half a minute as RocketMQ's TopicRouteInfoManager does; without a NameServer answer this broker's own
queues of the topic stand in.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Protocol

from broker.protocol import lenient_json
from broker.protocol.allocate import AllocateAveragely, AllocateAveragelyByCircle, AllocateStrategy
from broker.protocol.bodies import BodyError, MessageModel, MessageQueue, TopicRouteData
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import GetRouteInfoRequestHeader
from broker.protocol.names import RETRY_PREFIX
from broker.protocol.remoting import RemotingCommand, make_request, make_response
from broker.protocol.request_mode import (
    MessageQueueAssignment,
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from broker.protocol.route import subscribe_queues
from broker.remoting.channel import Handler, RemotingChannel
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingError
from broker.server.client_registry import ClientRegistry
from broker.server.config import BrokerConfig
from broker.server.maintenance_processor import LMQ_PREFIX
from broker.server.store_access import StoreAccess
from broker.server.subscription_group import SubscriptionGroupManager
from broker.server.topic_config import PERM_READ, TopicConfigManager
from broker.store.config import StoreConfig
from broker.store.config_files import ConfigFile

log = logging.getLogger(__name__)

MODE_FILE = "messageRequestMode.json"
ROUTE_TTL_SECONDS = 30.0  # RocketMQ's loadBalancePollNameServerInterval
ROUTE_TIMEOUT_SECONDS = 3.0
STRATEGIES: dict[str, AllocateStrategy] = {
    s.name: s for s in (AllocateAveragely(), AllocateAveragelyByCircle())
}


class RequestModeTable:
    """topic -> group -> mode, kept in ``messageRequestMode.json`` (fastjson's layout)."""

    def __init__(self, config_dir: Path) -> None:
        self.file = ConfigFile(config_dir / MODE_FILE)
        self.modes: dict[str, dict[str, SetMessageRequestModeRequestBody]] = {}

    def load(self) -> None:
        data = self.file.load()
        if data is None:
            return
        try:
            self.modes = MessageRequestModeSerializeWrapper.from_obj(data).messageRequestModeMap
        except BodyError as exc:
            log.warning("%s: %s; starting without saved consume modes", self.file.path, exc)

    def get(self, topic: str, group: str) -> SetMessageRequestModeRequestBody | None:
        return self.modes.get(topic, {}).get(group)

    def put(self, body: SetMessageRequestModeRequestBody) -> None:
        assert body.topic is not None and body.consumerGroup is not None
        self.modes.setdefault(body.topic, {})[body.consumerGroup] = body

    def document(self) -> bytes:
        return MessageRequestModeSerializeWrapper(self.modes).to_json()

    def persist(self) -> None:
        self.file.save(lenient_json.dumps_fastjson(json.loads(self.document()), pretty=True))


class ConsumeModeParts(StoreAccess, Protocol):
    """The parts of the broker request modes use."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def clients(self) -> ClientRegistry: ...


class ConsumeModeProcessor:
    def __init__(self, broker: ConsumeModeParts) -> None:
        self.broker = broker
        self.table = RequestModeTable(broker.store_config.store_path / "config")
        self.table.load()
        self._persisting = asyncio.Lock()  # one writer of the file at a time
        self._routes: dict[str, tuple[float, list[MessageQueue]]] = {}

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.QUERY_ASSIGNMENT: self.query_assignment,
            RequestCode.SET_MESSAGE_REQUEST_MODE: self.set_mode,
            RequestCode.GET_ALL_MESSAGE_REQUEST_MODE: self.all_modes,
        }

    # == modes ================================================================================
    async def set_mode(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        body = SetMessageRequestModeRequestBody.from_json(request.body or b"")
        topic, group = body.topic, body.consumerGroup
        if not topic or not group:
            return make_response(
                request, ResponseCode.INVALID_PARAMETER, "the body needs both topic and consumerGroup"
            )
        if topic.startswith(RETRY_PREFIX):
            return make_response(
                request, ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode"
            )
        if self.broker.topics.get(topic) is None:
            return make_response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        if self.broker.groups.get(group) is None:
            return make_response(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist",
            )
        self.table.put(body)
        async with self._persisting:
            await self.broker.read(self.table.persist)
        log.info("consume mode of %s@%s set to %s (popShareQueueNum %d)",
                 topic, group, body.mode.name, body.popShareQueueNum)  # fmt: skip
        return make_response(request)

    async def all_modes(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        return make_response(request, body=self.table.document())

    def mode_of(self, topic: str, group: str) -> SetMessageRequestModeRequestBody:
        """The stored mode, else the broker's defaultMessageRequestMode (with defaultPopShareQueueNum
        when that is POP); retry topics default to PULL whatever the setting."""
        stored = self.table.get(topic, group)
        if stored is not None:
            return stored
        config = self.broker.config
        if topic.startswith(RETRY_PREFIX) or config.default_message_request_mode != "POP":
            return SetMessageRequestModeRequestBody(topic, group)
        return SetMessageRequestModeRequestBody(
            topic, group, MessageRequestMode.POP, config.default_pop_share_queue_num
        )

    async def replace_all(self, modes: dict[str, dict[str, SetMessageRequestModeRequestBody]]) -> bool:
        """Make the table ``modes`` (a slave copying its master's); True when that changed it."""
        if modes == self.table.modes:
            return False
        self.table.modes = modes
        async with self._persisting:
            await self.broker.read(self.table.persist)
        return True

    # == assignments ==========================================================================
    async def query_assignment(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        body = QueryAssignmentRequestBody.from_json(request.body or b"")
        topic, group = body.topic, body.consumerGroup
        if not topic or not group or not body.clientId or body.messageModel is None:
            return make_response(
                request,
                ResponseCode.INVALID_PARAMETER,
                "the body needs topic, consumerGroup, clientId and messageModel",
            )
        mode = self.mode_of(topic, group)
        queues = await self._queues(topic)
        if queues is None:
            if topic.startswith(RETRY_PREFIX):  # no retry topic yet: nothing to balance, not an error
                return make_response(request, body=QueryAssignmentResponseBody().to_json())
            return make_response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        # broadcasting, or balancing off (serverLoadBalancerEnable=false): every consumer gets every queue
        if body.messageModel is MessageModel.CLUSTERING and self.broker.config.server_load_balancer_enable:
            strategy = STRATEGIES.get(body.strategyName or "")
            if strategy is None:
                return make_response(
                    request,
                    ResponseCode.INVALID_PARAMETER,
                    f"unsupported allocate strategy [{body.strategyName}], "
                    f"use one of {', '.join(STRATEGIES)}",
                )
            online = self.broker.clients.consumer_group(group)
            clients = sorted(online.client_ids()) if online is not None else []
            if not clients:
                return make_response(
                    request, ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online"
                )
            if mode.mode is MessageRequestMode.POP:
                queues = allocate_for_pop(
                    strategy, group, body.clientId, queues, clients, mode.popShareQueueNum
                )
            else:
                queues = strategy.allocate(group, body.clientId, queues, clients)
        assigned = [MessageQueueAssignment(q, mode.mode) for q in dict.fromkeys(queues)]  # a set in Java
        return make_response(request, body=QueryAssignmentResponseBody(assigned).to_json())

    async def _queues(self, topic: str) -> list[MessageQueue] | None:
        """The topic's readable queues in sorted order, None when it has none anywhere."""
        if topic.startswith(LMQ_PREFIX):
            return [MessageQueue(topic, self.broker.config.broker_name, 0)]
        cached = self._routes.get(topic)
        if cached is not None and time.monotonic() - cached[0] < ROUTE_TTL_SECONDS:
            return cached[1]
        queues = await self._route_queues(topic) or self._local_queues(topic)
        if not queues:
            self._routes.pop(topic, None)
            return None
        self._routes[topic] = (time.monotonic(), queues)
        return queues

    async def _route_queues(self, topic: str) -> list[MessageQueue] | None:
        addrs = self.broker.config.namesrv_addrs
        if not addrs:
            return None
        # a short-lived connection: queries come every ~20 s per topic and are answered from the cache
        client = RemotingClient(
            connect_timeout=ROUTE_TIMEOUT_SECONDS, ssl_context=self.broker.config.outbound_tls()
        )
        try:
            route = await _route(client, addrs, topic)
        finally:
            await client.close()
        return subscribe_queues(topic, route) if route is not None else None

    def _local_queues(self, topic: str) -> list[MessageQueue]:
        config = self.broker.topics.get(topic)
        if config is None or not config.perm & PERM_READ:
            return []
        name = self.broker.config.broker_name
        return [MessageQueue(topic, name, i) for i in range(config.readQueueNums)]


def allocate_for_pop(
    strategy: AllocateStrategy,
    group: str,
    client_id: str,
    queues: list[MessageQueue],
    clients: list[str],
    share: int,
) -> list[MessageQueue]:
    """POP assignments: with no sharing limit every client pops every queue (queue id -1 stands for
    "all queues of this broker"); else each takes its own share plus those of the ``share`` clients
    after it; with more clients than queues each still gets one queue, round robin."""
    if share <= 0 or share >= len(clients) - 1:
        return list(dict.fromkeys(MessageQueue(q.topic, q.brokerName, -1) for q in queues))
    if len(clients) > len(queues):
        return [queues[clients.index(client_id) % len(queues)]] if client_id in clients else []
    result = strategy.allocate(group, client_id, queues, clients)
    if client_id in clients:
        index = clients.index(client_id)
        for step in range(1, share + 1):
            result += strategy.allocate(group, clients[(index + step) % len(clients)], queues, clients)
    return result


async def _route(client: RemotingClient, namesrv_addrs: list[str], topic: str) -> TopicRouteData | None:
    """The topic's route from the first NameServer that answers; None when it has none or none answers."""
    header = GetRouteInfoRequestHeader(topic=topic, acceptStandardJsonOnly=True)
    for addr in namesrv_addrs:
        request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
        try:
            response = await client.invoke(addr, request, ROUTE_TIMEOUT_SECONDS)
        except RemotingError as exc:
            log.warning("no route of %s from %s for an assignment: %s", topic, addr, exc)
            continue
        if response.code == ResponseCode.SUCCESS:
            return TopicRouteData.from_json(response.body) if response.body else None
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        log.warning("no route of %s from %s: %s %s", topic, addr, response.code, response.remark)
    return None
