"""POP consumption over the gRPC API: ReceiveMessage, AckMessage, ChangeInvisibleDuration and
ForwardMessageToDeadLetterQueue, through the messaging core's POP (as remoting's POP requests).

A consumer of the official clients makes one ReceiveMessage call per batch and one AckMessage call per
message, so these are the busiest RPCs after SendMessage, and this module is compiled by
``make install``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, TypeAlias

from broker.grpc import convert
from broker.grpc.schema import PB, CallContext, Code, GrpcError, status
from broker.grpc.send_rpc import code_of
from broker.protocol.message import RecordError
from broker.protocol.pop import MAX_INVISIBLE_MS, Receipt
from broker.server.message_filter import SQL92_TYPE, FilterRejected, record_filter_of
from broker.server.messaging.core import ConsumeRejected, MessagingCore, rotated, tag_filter_of
from broker.server.pop_service import AckStatus, Popped

MAX_BATCH: Final = 32
DEFAULT_INVISIBLE_MS: Final = 60_000
DEFAULT_LONG_POLLING_MS: Final = 20_000
MAX_LONG_POLLING_MS: Final = 60_000
DEADLINE_MARGIN: Final = 0.5  # answer this long before the client's deadline
_EXPIRED: Final = "the receipt handle has expired"
_OK_CODE: Final = int(Code.OK)  # the codes of the answers encoded here
_INVALID_CODE: Final = int(Code.INVALID_RECEIPT_HANDLE)
# the requests that name a group and a topic, checked by PopRpc._names
_GroupAndTopic: TypeAlias = (
    PB.AckMessageRequest | PB.ChangeInvisibleDurationRequest | PB.ForwardMessageToDeadLetterQueueRequest
)


def rejected(exc: ConsumeRejected) -> GrpcError:
    return GrpcError(code_of(exc.code), exc.remark)


def receipt_of(handle: str) -> Receipt:
    try:
        return Receipt.decode(handle)
    except ValueError as exc:
        raise GrpcError(Code.INVALID_RECEIPT_HANDLE, str(exc)) from None


def within_deadline(seconds: float, context: CallContext) -> float:
    """At most ``seconds`` of waiting, ended early enough for the answer to beat the call's deadline."""
    remaining = context.time_remaining()
    if remaining is None:
        return seconds
    return max(0.0, min(seconds, remaining - DEADLINE_MARGIN))


def record_filter(broker: Any, expression: PB.FilterExpression) -> Callable[[bytes], bool] | None:
    """The SQL92 filter of a FilterExpression (type 2); None for a tag expression."""
    if expression.type != PB.FilterType.SQL:
        return None
    try:
        return record_filter_of(
            SQL92_TYPE, expression.expression, enabled=broker.config.enable_property_filter
        )
    except FilterRejected as exc:
        raise GrpcError(Code.ILLEGAL_FILTER_EXPRESSION, exc.remark) from None


class PopRpc:
    """``service`` is the :class:`broker.grpc.service.MessagingService` (sessions, names, broker)."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.broker: Any = service.broker

    def _names(self, request: _GroupAndTopic, context: CallContext) -> tuple[str, str]:
        """The checked group and topic of a request that names both, after its client's session."""
        service = self.service
        service._session(context)
        group: str = service._group(request.group.name)
        topic: str = service._topic(request.topic.name).topicName
        return group, topic

    async def receive_message(self, request: PB.ReceiveMessageRequest, context: CallContext) -> None:
        """Writes a status, then, when messages were found, the delivery time and one encoded message
        each."""
        service = self.service
        broker = self.broker
        service._session(context)
        group: str = service._group(request.group.name)
        topic: str = service._topic(request.message_queue.topic.name).topicName
        try:
            queues: list[int] = broker.messaging.check_consume(group, topic)
        except ConsumeRejected as exc:
            raise rejected(exc) from None
        size = request.batch_size
        if size <= 0:
            raise GrpcError(Code.BAD_REQUEST, f"batch size {size} is not positive")
        batch = min(size, MAX_BATCH)
        invisible = self._invisible_ms(request)
        expression = request.filter_expression
        sql_filter = record_filter(broker, expression)
        text = expression.expression or "*"
        tags = frozenset(t.strip() for t in text.split("||") if t.strip())
        match_all = sql_filter is not None or not tags or "*" in tags
        tag_filter = None if match_all else tag_filter_of(text)
        wanted = None if match_all else tags
        budget = self._polling_s(request, context)
        core: MessagingCore = broker.messaging
        orderly = core.is_orderly(group, topic)
        queue_id = request.message_queue.id
        queues = [queue_id] if orderly and 0 <= queue_id < len(queues) else rotated(queues)
        broker_name: str = broker.config.broker_name
        found: list[bytes] = []  # one encoded message response each

        def keep(p: Popped) -> bool:
            """Encoded for this consumer; False for an unreadable record or a tag hash collision."""
            receipt: Receipt = p.receipt(broker_name)
            try:
                message = convert.encode_message(
                    p.record, receipt_handle=receipt.encode(), invisible_ms=invisible,
                    delivery_attempt=p.attempts, tags=wanted,
                )  # fmt: skip
            except RecordError:
                message = None
            if message is None:
                return False
            found.append(convert.message_response(message))
            return True

        popped = await core.pop(
            group, topic, queues, batch, invisible, budget,
            tag_filter=tag_filter, record_filter=sql_filter, orderly=orderly, keep=keep,
        )  # fmt: skip
        stored = sum(len(p.record) for p in popped)
        if not found:
            await context.write(
                PB.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no new message"))
            )
            return
        broker.stats.record_get(group, topic, len(found), stored)
        await context.write(PB.ReceiveMessageResponse(status=status()))
        # when the broker handed the batch over (the clients' delivery-latency metric needs it)
        await context.write(
            PB.ReceiveMessageResponse(delivery_timestamp=convert.timestamp(int(time.time() * 1000)))
        )
        for response in found:
            await context.write(response)

    @staticmethod
    def _invisible_ms(request: PB.ReceiveMessageRequest) -> int:
        """The invisible duration a ReceiveMessage asks for (the default when it asks for renewals)."""
        if request.HasField("invisible_duration"):
            invisible = convert.duration_ms(request.invisible_duration)
            if not 0 < invisible <= MAX_INVISIBLE_MS:
                raise GrpcError(
                    Code.ILLEGAL_INVISIBLE_TIME, f"invisible duration {invisible} ms is out of range"
                )
            return invisible
        if request.auto_renew:
            return DEFAULT_INVISIBLE_MS
        raise GrpcError(Code.ILLEGAL_INVISIBLE_TIME, "the invisible duration is missing")

    @staticmethod
    def _polling_s(request: PB.ReceiveMessageRequest, context: CallContext) -> float:
        """How long a ReceiveMessage may wait for messages: its long-polling timeout, ending early
        enough for the answer to beat the call's deadline."""
        polling = DEFAULT_LONG_POLLING_MS
        if request.HasField("long_polling_timeout"):
            polling = convert.duration_ms(request.long_polling_timeout)
            if not 0 <= polling <= MAX_LONG_POLLING_MS:
                raise GrpcError(
                    Code.ILLEGAL_POLLING_TIME, f"long polling timeout {polling} ms is out of range"
                )
        return within_deadline(polling / 1000, context)

    def ack_message(self, request: PB.AckMessageRequest, context: CallContext) -> bytes:
        group, topic = self._names(request, context)
        core: MessagingCore = self.broker.messaging
        outcomes: list[convert.AckOutcome] = []
        for entry in request.entries:
            handle = entry.receipt_handle
            try:
                receipt = Receipt.decode(handle)
            except ValueError as exc:
                outcomes.append((entry.message_id, handle, _INVALID_CODE, str(exc)))
                continue
            if core.ack(group, topic, receipt.queue_id, receipt.offset, receipt.pop_time) is AckStatus.OK:
                outcomes.append((entry.message_id, handle, _OK_CODE, "OK"))
            else:
                outcomes.append((entry.message_id, handle, _INVALID_CODE, _EXPIRED))
        if not outcomes:
            return convert.ack_response(int(Code.BAD_REQUEST), "the request holds no entry", outcomes)
        code, message = outcomes[0][2], outcomes[0][3]
        if any(outcome[2] != code for outcome in outcomes):
            code, message = int(Code.MULTIPLE_RESULTS), "the entries have different results"
        return convert.ack_response(code, message, outcomes)

    def change_invisible(
        self, request: PB.ChangeInvisibleDurationRequest, context: CallContext
    ) -> PB.ChangeInvisibleDurationResponse:
        group, topic = self._names(request, context)
        receipt = receipt_of(request.receipt_handle)
        invisible = convert.duration_ms(request.invisible_duration)
        if not 0 <= invisible <= MAX_INVISIBLE_MS:
            raise GrpcError(Code.ILLEGAL_INVISIBLE_TIME, f"invisible duration {invisible} ms is out of range")
        entry = self.broker.messaging.change_invisible(
            group, topic, receipt.queue_id, receipt.offset, receipt.pop_time, invisible
        )
        if entry is None:
            raise GrpcError(Code.INVALID_RECEIPT_HANDLE, _EXPIRED)
        renewed = receipt.renewed(entry.pop_time, invisible)
        return PB.ChangeInvisibleDurationResponse(status=status(), receipt_handle=renewed.encode())

    async def forward_to_dlq(
        self, request: PB.ForwardMessageToDeadLetterQueueRequest, context: CallContext
    ) -> PB.ForwardMessageToDeadLetterQueueResponse:
        group, topic = self._names(request, context)
        receipt = receipt_of(request.receipt_handle)
        done = await self.broker.messaging.forward_to_dlq(
            group, topic, receipt.queue_id, receipt.offset, receipt.pop_time
        )
        if not done:
            raise GrpcError(Code.INVALID_RECEIPT_HANDLE, _EXPIRED)
        return PB.ForwardMessageToDeadLetterQueueResponse(status=status())
