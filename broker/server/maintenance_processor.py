"""Store maintenance and inspection codes: QUERY_CONSUME_QUEUE (321), CLEAN_EXPIRED_CONSUMEQUEUE (306),
DELETE_EXPIRED_COMMITLOG (329), CLEAN_UNUSED_TOPIC (316) and SET_COMMITLOG_READ_MODE (2004).

They answer as RocketMQ's AdminBrokerProcessor does (SUCCESS without a body for the three clean-ups).
The store is blocking, so reads run on the broker's reader threads and clean-ups on its writer thread,
in order with the appends.
"""

from __future__ import annotations

import logging
from typing import Protocol

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import ConsumeQueueData, QueryConsumeQueueResponseBody
from broker.protocol.headers import QueryConsumeQueueRequestHeader, SetCommitLogReadModeRequestHeader
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.client_registry import ClientRegistry
from broker.server.store_access import StoreAccess
from broker.server.topic_config import TopicConfigManager
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore

log = logging.getLogger(__name__)
LMQ_PREFIX = "%LMQ%"  # light message queues have no topic configuration and are never "unused"
_MAX_EXT_ADDR = -(2**31) - 1  # ConsumeQueueExt.MAX_ADDR: tagsCodes at or below it address the extension
READ_AHEAD_MODES = {0: True, 1: False}  # SET_COMMITLOG_READ_MODE: MADV_NORMAL reads ahead, MADV_RANDOM not


class MaintenanceParts(StoreAccess, Protocol):
    """The parts of the broker the store clean-ups and queue queries use."""

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def clients(self) -> ClientRegistry: ...


class MaintenanceProcessor:
    def __init__(self, broker: MaintenanceParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.QUERY_CONSUME_QUEUE: self.query_consume_queue,
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commitlog,
            RequestCode.CLEAN_UNUSED_TOPIC: self.clean_unused_topic,
            RequestCode.SET_COMMITLOG_READ_MODE: self.set_read_ahead_mode,
        }

    # == QUERY_CONSUME_QUEUE ===================================================================
    async def query_consume_queue(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        h = QueryConsumeQueueRequestHeader.parse(request.ext_fields)
        body = QueryConsumeQueueResponseBody()
        if h.consumerGroup is not None:
            body.subscriptionData = self.broker.clients.subscription(h.consumerGroup, h.topic)
            # fastjson's text of the group's ConsumerFilterData: none is kept for TAG subscriptions
            body.filterData = (
                f"{h.consumerGroup}@{h.topic} is not online!" if body.subscriptionData is None else "null"
            )
        problem = await self.broker.read(self._read_units, h, body)
        if problem is not None:
            code, remark = problem
            return make_response(request, code, remark)
        return make_response(request, body=body.to_json())

    def _read_units(
        self, h: QueryConsumeQueueRequestHeader, body: QueryConsumeQueueResponseBody
    ) -> tuple[int, str] | None:
        """Fill ``body`` with up to ``count`` units from ``index``; (code, remark) when impossible."""
        cq = self.broker.store.consume_queue(h.topic, h.queueId)
        if cq is None:
            return ResponseCode.SYSTEM_ERROR, f"{h.queueId}@{h.topic} is not exist!"
        body.maxQueueIndex, body.minQueueIndex = cq.max_offset, cq.min_offset
        if not cq.min_offset <= h.index < cq.max_offset:
            # RocketMQ answers SUCCESS with this remark and no body
            return ResponseCode.SUCCESS, f"Index {h.index} of {h.queueId}@{h.topic} is not exist!"
        # RocketMQ reads one ConsumeQueue file at most; so does this
        limit = min(h.count, self.broker.store_config.mapped_file_size_consume_queue_units)
        body.queueData = [
            ConsumeQueueData(
                physicOffset=phys,
                physicSize=size,
                tagsCode=tags,
                msg=f"Cq extend not exist!addr: {tags}" if tags <= _MAX_EXT_ADDR else None,
            )
            for _offset, phys, size, tags in cq.iter_units(h.index, max(limit, 0))
        ]
        return None

    # == clean-ups =============================================================================
    async def clean_expired_consume_queue(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        broker = self.broker
        removed = await broker.write(broker.store.drop_expired_queues, broker.topics.is_system_topic)
        log.info("cleanExpiredConsumeQueue removed %d queues", removed)
        return make_response(request)

    async def delete_expired_commitlog(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        """Retention now, whatever ``deleteWhen`` says: files older than ``fileReservedTime`` go."""
        report = await self.broker.write(lambda: self.broker.store.clean_expired(manual=True))
        log.info("deleteExpiredCommitLog deleted %s", report.deleted_files or "nothing")
        return make_response(request)

    async def clean_unused_topic(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """Drop the ConsumeQueues of topics the broker has no configuration for (left by a topic deleted
        while the broker was down, or by a store copied from elsewhere)."""
        broker = self.broker
        unused = [
            t
            for t in broker.store.queues.topics()
            if broker.topics.get(t) is None and not broker.topics.is_system_topic(t)
            and not t.startswith(LMQ_PREFIX)
        ]  # fmt: skip
        for topic in unused:
            await broker.write(broker.store.delete_topic, topic)
        log.info("cleanUnusedTopic removed %s", unused or "nothing")
        return make_response(request)

    # == read-ahead ============================================================================
    async def set_read_ahead_mode(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        """Read-ahead on (0, MADV_NORMAL) or off (1, MADV_RANDOM) for every CommitLog file; the remark
        is what mqadmin prints."""
        mode = SetCommitLogReadModeRequestHeader.parse(request.ext_fields).READ_AHEAD_MODE
        enabled = READ_AHEAD_MODES.get(mode)
        if enabled is None:
            return make_response(
                request,
                ResponseCode.INVALID_PARAMETER,
                f"set commitlog readahead mode param value error: {mode} (0 is default, 1 random read)",
            )
        await self.broker.write(self.broker.store.set_read_ahead, enabled)
        return make_response(request, remark=f"set commitlog readahead mode success, mode: {mode}")
