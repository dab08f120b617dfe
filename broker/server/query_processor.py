"""Message lookups: VIEW_MESSAGE_BY_ID (33, by CommitLog offset) and QUERY_MESSAGE (12, by key or
UNIQ_KEY through the IndexFile). Both answer with stored records, byte for byte."""

from __future__ import annotations

from typing import Protocol

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.store_access import StoreAccess
from broker.store.message_store import MessageStore

UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
DEFAULT_QUERY_MAX_NUM = 32
MAX_MSGS_NUM_BATCH = 64


class QueryParts(StoreAccess, Protocol):
    @property
    def store(self) -> MessageStore: ...


class QueryProcessor:
    def __init__(self, broker: QueryParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.VIEW_MESSAGE_BY_ID: self.view_by_id, RequestCode.QUERY_MESSAGE: self.query}

    async def view_by_id(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = ViewMessageRequestHeader.parse(request.ext_fields)
        record = await self.broker.read(self.broker.store.record_at, h.offset)
        if record is None:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {h.offset}"
            )
        return make_response(request, body=record)

    async def query(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = QueryMessageRequestHeader.parse(request.ext_fields)
        unique = request.ext_fields.get(UNIQUE_KEY_QUERY, "").lower() == "true"
        max_num = min(DEFAULT_QUERY_MAX_NUM if unique else h.maxNum, MAX_MSGS_NUM_BATCH)
        records, last_ts, last_phy = await self.broker.read(self._lookup, h, max_num, unique)
        header = QueryMessageResponseHeader(
            indexLastUpdateTimestamp=last_ts, indexLastUpdatePhyoffset=last_phy
        )
        if not records:
            response = make_response(
                request, ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct"
            )
            response.ext_fields.update(header.to_ext_fields())
            return response
        return make_response(request, header=header, body=b"".join(records))

    def _lookup(
        self, h: QueryMessageRequestHeader, max_num: int, unique: bool
    ) -> tuple[list[bytes], int, int]:
        store = self.broker.store
        # like the index's ``result.size() < maxNum`` loop upstream, a maxNum of 0 or less finds nothing
        found = (
            store.query_by_key(h.topic, h.key, max_num, h.beginTimestamp, h.endTimestamp, unique=unique)
            if max_num > 0
            else []
        )
        records = [raw for rec in found if (raw := store.record_at(rec.physical_offset)) is not None]
        files = store.index.files() if store.index is not None else []
        last = files[-1] if files else None
        return records, last.end_timestamp if last else 0, last.end_phy_offset if last else 0
