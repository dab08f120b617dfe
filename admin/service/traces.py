"""Message traces: the records traced clients wrote about one message, read back from a trace topic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import AdminError, BadInput, NotFound
from admin.service.base import admin_call
from admin.service.messages import MAX_TIMESTAMP, MessageOps
from broker.protocol.trace import TRACE_TOPIC

if TYPE_CHECKING:
    from admin.models.traces import MessageTrace, TraceEntry
    from broker.protocol.message import MessageRecord
    from broker.protocol.trace import TraceRecord


class TraceOps(MessageOps):
    @admin_call
    async def message_trace(
        self,
        msg_id: str,
        trace_topic: str | None = None,
        begin: int = 0,
        end: int = MAX_TIMESTAMP,
        max_num: int = 64,
    ) -> MessageTrace:
        """As mqadmin queryMsgTraceById: the trace messages keyed by ``msg_id`` (the message's UNIQ_KEY;
        an offset MessageId is looked up for it) in ``trace_topic`` (default RMQ_SYS_TRACE_TOPIC),
        stored within [begin, end], and their records of that message, oldest first."""
        from admin.models.traces import MessageTrace
        from broker.client.message import MessageExt
        from broker.protocol.trace import TraceFormatError, TraceType, decode

        if max_num <= 0:
            raise BadInput("the maximum number of trace messages must be positive")
        topic = trace_topic or TRACE_TOPIC
        wanted = msg_id.strip()
        try:
            found = await self._query(topic, wanted, unique=False, begin=begin, end=end, max_num=max_num)
        except NotFound:
            raise NotFound(f"trace topic {topic} not found: no traced client has written to it") from None
        entries: list[TraceEntry] = []
        undecodable = 0
        for record in found:
            text = MessageExt(record).body.decode("utf-8", "replace")  # inflated if compressed
            try:
                traces = decode(text)
            except TraceFormatError:
                undecodable += 1
                continue
            entries += [_entry(t, record) for t in traces if t.msg_id == wanted]
        if not entries and not undecodable:
            uniq_key = await self._uniq_key_of(wanted)
            if uniq_key is not None and uniq_key != wanted:  # the broker's id of a traced message
                return await self.message_trace(uniq_key, trace_topic, begin, end, max_num)
            raise NotFound(f"no trace of message {wanted} in {topic}")
        entries.sort(key=lambda e: e.timestamp)
        topic_of = next((e.topic for e in entries if e.type == TraceType.Pub.value), None)
        return MessageTrace(wanted, topic, topic_of, entries, undecodable)

    async def _uniq_key_of(self, msg_id: str) -> str | None:
        """The UNIQ_KEY of the message an offset MessageId names (traces are keyed by it); None for
        an id that is not one, or names no message."""
        from broker.protocol import properties as message_properties

        try:
            found = await self.message_get(msg_id)
        except AdminError:
            return None
        return found.messages[0].properties.get(message_properties.UNIQ_KEY) if found.messages else None


def _entry(t: TraceRecord, carrier: MessageRecord) -> TraceEntry:
    """A record as the view shows it; the client host is the trace message's born host unless the
    record names one (Java's TraceView does the same)."""
    from admin.models.traces import TraceEntry
    from broker.protocol.trace import TraceType

    kind = t.type
    pub, sub_after, end_tx = (
        kind is TraceType.Pub,
        kind is TraceType.SubAfter,
        kind is TraceType.EndTransaction,
    )
    has_message = pub or end_tx or kind is TraceType.Recall
    return TraceEntry(
        type=kind.value,
        timestamp=t.timestamp,
        group=t.group,
        client_host=t.client_host or carrier.born_host.rpartition(":")[0],
        store_host=t.store_host if pub or end_tx else None,
        cost_ms=t.cost_ms if pub or sub_after else None,
        success=t.success if pub or sub_after or kind is TraceType.Recall else None,
        topic=t.topic if has_message else None,
        tags=t.tags,
        keys=t.keys,
        msg_type=t.msg_type.name if pub or end_tx else None,
        offset_msg_id=(t.offset_msg_id or None) if pub else None,
        retry_times=t.retry_times if kind is TraceType.SubBefore else None,
        request_id=t.request_id or None,
        consume_result=_consume_result(t.context_code) if sub_after else None,
        transaction_state=t.transaction_state if end_tx else None,
        transaction_id=t.transaction_id if end_tx else None,
        from_transaction_check=t.from_transaction_check if end_tx else None,
        region_id=t.region_id or None,
    )


def _consume_result(code: int) -> str:
    from broker.protocol.trace import ConsumeReturnType

    try:
        return ConsumeReturnType(code).name
    except ValueError:
        return str(code)
