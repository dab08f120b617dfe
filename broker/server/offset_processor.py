"""Consumer offsets and queue positions: QUERY/UPDATE_CONSUMER_OFFSET (14/15), GET_MAX_OFFSET (30),
GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32) and SEARCH_OFFSET_BY_TIMESTAMP (29)."""

from __future__ import annotations

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import (
    BoundaryType,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.header_limits import range_problem
from broker.server.messaging.core import MessagingCore
from broker.store.consume_queue import Boundary


class OffsetProcessor:
    def __init__(self, core: MessagingCore) -> None:
        self.core = core

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_store_time,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
        }

    async def query_consumer_offset(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.parse(request.ext_fields)
        offset = self.core.committed_offset(h.consumerGroup, h.topic, h.queueId)
        if offset >= 0:
            return make_response(request, header=OffsetResponseHeader(offset=offset))
        if h.setZeroIfNotFound is not False:
            # A group that never committed starts at 0 while the queue still holds its first message.
            min_offset = await self.core.min_offset(h.topic, h.queueId)
            if min_offset <= 0:
                return make_response(request, header=OffsetResponseHeader(offset=0))
        return make_response(
            request,
            ResponseCode.QUERY_NOT_FOUND,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
        )

    async def update_consumer_offset(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.parse(request.ext_fields)
        broker = self.core.broker
        problem = range_problem(h, ("queueId",), ("commitOffset",))
        if problem:
            return make_response(request, ResponseCode.INVALID_PARAMETER, problem)
        if broker.groups.get(h.consumerGroup) is None:
            return make_response(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {h.consumerGroup}",
            )
        if broker.topics.get(h.topic) is None:
            return make_response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic not exist, {h.topic}")
        if broker.config.use_server_side_reset_offset and broker.offsets.has_reset(
            h.consumerGroup, h.topic, h.queueId
        ):
            return make_response(request, ResponseCode.SUCCESS, "Offset has been previously reset")
        self.core.commit_offset(h.consumerGroup, h.topic, h.queueId, h.commitOffset)
        return make_response(request)

    async def get_max_offset(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = GetMaxOffsetRequestHeader.parse(request.ext_fields)
        offset = await self.core.max_offset(h.topic, h.queueId)
        return make_response(request, header=OffsetResponseHeader(offset=offset))

    async def get_min_offset(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = GetMinOffsetRequestHeader.parse(request.ext_fields)
        offset = await self.core.min_offset(h.topic, h.queueId)
        return make_response(request, header=OffsetResponseHeader(offset=offset))

    async def get_earliest_store_time(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        h = GetEarliestMsgStoretimeRequestHeader.parse(request.ext_fields)
        ts = await self.core.earliest_store_time(h.topic, h.queueId)
        return make_response(
            request, header=GetEarliestMsgStoretimeResponseHeader(timestamp=-1 if ts is None else ts)
        )

    async def search_offset_by_timestamp(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        h = SearchOffsetRequestHeader.parse(request.ext_fields)
        boundary = Boundary.UPPER if h.boundaryType is BoundaryType.UPPER else Boundary.LOWER
        offset = await self.core.offset_by_time(h.topic, h.queueId, h.timestamp, boundary)
        return make_response(request, header=OffsetResponseHeader(offset=offset))
