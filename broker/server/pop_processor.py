"""POP over remoting: POP_MESSAGE (200050), ACK_MESSAGE (200051), CHANGE_MESSAGE_INVISIBLETIME
(200053) and BATCH_ACK_MESSAGE (200151), through the messaging core, as the gRPC API does.

The headers (:mod:`broker.protocol.pop`) carry RocketMQ's names. A popped message's receipt is
RocketMQ's "extra info": the response header's startOffsetInfo/msgOffsetInfo let a Java client
rebuild it, and the broker also appends it to each returned record's properties as POP_CK, so
simpler clients (the SDK's SimpleConsumer) ack with it directly.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Protocol

from broker.protocol import properties as P
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import RecordError, with_added_property
from broker.protocol.pop import (
    MAX_INVISIBLE_MS,
    MAX_POP_NUMS,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    Receipt,
)
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.config import BrokerConfig
from broker.server.messaging.core import ConsumeRejected, MessagingCore, rotated, tag_filter_of
from broker.server.pop_service import AckStatus, InitMode, Popped
from broker.server.stats import BrokerStats


def _record_with_ck(record: bytes, ck: str) -> bytes:
    """The record with its receipt as the POP_CK property (stored records never carry one: sends
    strip it); a record that cannot take it is handed out as it is."""
    try:
        return with_added_property(record, P.POP_CK, ck)
    except RecordError:
        return record


class PopRequestParts(Protocol):
    """The parts of the broker POP requests use."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def messaging(self) -> MessagingCore: ...

    @property
    def stats(self) -> BrokerStats: ...


class PopProcessor:
    def __init__(self, broker: PopRequestParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.POP_MESSAGE: self.pop,
            RequestCode.ACK_MESSAGE: self.ack,
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME: self.change_invisible,
            RequestCode.BATCH_ACK_MESSAGE: self.batch_ack,
        }

    async def pop(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = PopMessageRequestHeader.parse(request.ext_fields)
        broker = self.broker
        try:
            queues = broker.messaging.check_consume(h.consumerGroup, h.topic)
        except ConsumeRejected as exc:
            return make_response(request, exc.code, exc.remark)
        if not 0 < h.maxMsgNums <= MAX_POP_NUMS:
            return make_response(
                request,
                ResponseCode.INVALID_PARAMETER,
                f"maxMsgNums {h.maxMsgNums} is not within 1..{MAX_POP_NUMS}",
            )
        if not 0 < h.invisibleTime <= MAX_INVISIBLE_MS:
            return make_response(
                request, ResponseCode.INVALID_PARAMETER, f"invisibleTime {h.invisibleTime} is out of range"
            )
        if h.queueId >= 0:
            if h.queueId not in queues:
                return make_response(
                    request,
                    ResponseCode.INVALID_PARAMETER,
                    f"queueId[{h.queueId}] is illegal, topic:[{h.topic}]",
                )
            queues = [h.queueId]
        else:
            queues = rotated(queues)
        if (h.expType or "TAG").upper() != "TAG":
            return make_response(
                request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"filter type {h.expType} is not supported"
            )
        tag_filter = tag_filter_of(h.exp)
        mode = InitMode.MIN if h.initMode == 0 else InitMode.MAX
        orderly = bool(h.order) or None
        popped = await broker.messaging.pop(
            h.consumerGroup, h.topic, queues, h.maxMsgNums, h.invisibleTime, max(0, h.pollTime) / 1000,
            tag_filter=tag_filter, orderly=orderly, init_mode=mode,
        )  # fmt: skip
        if not popped:
            code = ResponseCode.POLLING_TIMEOUT if h.pollTime > 0 else ResponseCode.PULL_NOT_FOUND
            header = PopMessageResponseHeader(
                popTime=int(time.time() * 1000), invisibleTime=h.invisibleTime, reviveQid=0, restNum=0
            )
            return make_response(request, code, "no new message", header=header)
        return self._found(request, h, popped)

    def _found(
        self, request: RemotingCommand, h: PopMessageRequestHeader, popped: list[Popped]
    ) -> RemotingCommand:
        name = self.broker.config.broker_name
        starts: dict[int, int] = {}
        offsets: dict[int, list[int]] = {}
        records: list[bytes] = []
        for p in popped:
            starts.setdefault(p.queue_id, p.start_offset)
            offsets.setdefault(p.queue_id, []).append(p.offset)
            records.append(_record_with_ck(p.record, p.receipt(name).encode()))
        header = PopMessageResponseHeader(
            popTime=popped[0].pop_time,
            invisibleTime=h.invisibleTime,
            reviveQid=0,
            restNum=0,
            startOffsetInfo=";".join(f"0 {q} {s}" for q, s in starts.items()),
            msgOffsetInfo=";".join(f"0 {q} {','.join(map(str, o))}" for q, o in offsets.items()),
            orderCountInfo=";".join(f"0 {q} {p.attempts - 1}" for p in popped for q in (p.queue_id,))
            if h.order
            else None,
        )
        self.broker.stats.record_get(h.consumerGroup, h.topic, len(records), sum(map(len, records)))
        return make_response(request, header=header, body=b"".join(records))

    async def ack(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = AckMessageRequestHeader.parse(request.ext_fields)
        try:
            receipt = Receipt.decode(h.extraInfo, h.offset)
        except ValueError as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, str(exc))
        status = self.broker.messaging.ack(h.consumerGroup, h.topic, h.queueId, h.offset, receipt.pop_time)
        if status is AckStatus.EXPIRED:
            return make_response(request, ResponseCode.NO_MESSAGE, "the receipt handle has expired")
        return make_response(request)

    async def change_invisible(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = ChangeInvisibleTimeRequestHeader.parse(request.ext_fields)
        try:
            receipt = Receipt.decode(h.extraInfo, h.offset)
        except ValueError as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, str(exc))
        if not 0 <= h.invisibleTime <= MAX_INVISIBLE_MS:
            return make_response(
                request, ResponseCode.INVALID_PARAMETER, f"invisibleTime {h.invisibleTime} is out of range"
            )
        entry = self.broker.messaging.change_invisible(
            h.consumerGroup, h.topic, h.queueId, h.offset, receipt.pop_time, h.invisibleTime
        )
        if entry is None:
            return make_response(request, ResponseCode.NO_MESSAGE, "the receipt handle has expired")
        header = ChangeInvisibleTimeResponseHeader(
            popTime=entry.pop_time, invisibleTime=h.invisibleTime, reviveQid=0
        )
        return make_response(request, header=header)

    async def batch_ack(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """Body: ``{"acks":[{"c":group,"t":topic,"q":queueId,"so":startOffset,"pt":popTime,"b":bitSet}]}``
        where bit i of the (base64 java.util.BitSet) ``b`` acks offset ``so + i``."""
        try:
            body = json.loads((request.body or b"{}").decode("utf-8"))
            acks = body.get("acks") or []
            for ack in acks:
                bits = base64.b64decode(ack.get("b") or "")
                start = int(ack["so"])
                for i in range(len(bits) * 8):
                    if bits[i // 8] >> (i % 8) & 1:
                        self.broker.messaging.ack(
                            str(ack["c"]), str(ack["t"]), int(ack["q"]), start + i, int(ack["pt"])
                        )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return make_response(
                request, ResponseCode.INVALID_PARAMETER, f"batch ack body is malformed: {exc}"
            )
        return make_response(request)
