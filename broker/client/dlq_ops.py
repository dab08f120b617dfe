"""Resending dead letters (RocketMQ has no request for this; it is built here from ordinary requests:
GET_MIN/MAX_OFFSET, PULL_MESSAGE as the TOOLS_CONSUMER group without committing anything, and
SEND_MESSAGE_V2).

By default a dead letter goes back to the group that failed it, and to no other: it is sent to the
group's retry topic %RETRY%<group> with RETRY_TOPIC naming the original topic, the path RocketMQ's own
redeliveries take, so the group's consumers (subscribed to their retry topic) hand it to the listener
under its original topic. ``to_topic`` sends it to the original topic instead, where every group
consuming that topic gets it again.

A resent message is a fresh send (new born time, reconsumeTimes 0) with the dead letter's body, flag,
tags, keys and user properties, minus the retry, delay, timer and DLQ bookkeeping. It keeps its
UNIQ_KEY: consumers that de-duplicate by message id then see a resend as the same message, which it
is; a message that was dead-lettered was never consumed successfully, so nothing is lost by that.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace

from broker.client.admin_api import AdminApi, RemoteError
from broker.protocol import properties as message_properties
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import (
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from broker.protocol.message import COMPRESSED_FLAG, COMPRESSION_TYPE_MASK, MessageRecord, decode_records
from broker.protocol.names import dlq_topic, retry_topic

TOOLS_GROUP = "TOOLS_CONSUMER"
RESEND_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
PULL_BATCH = 32
SUB_FLAG = 0x4  # PullSysFlag: the subscription is in the request
# what the retry, delay, timer and dead-letter paths added; the resend starts afresh without them
BOOKKEEPING = frozenset(
    {
        message_properties.DELAY,
        message_properties.RETRY_TOPIC,
        message_properties.ORIGIN_MESSAGE_ID,
        message_properties.DLQ_ORIGIN_TOPIC,
        message_properties.DLQ_ORIGIN_MESSAGE_ID,
        message_properties.REAL_TOPIC,
        message_properties.REAL_QID,
        message_properties.RECONSUME_TIME,
        message_properties.MAX_RECONSUME_TIMES,
        message_properties.CLUSTER,
        message_properties.MIN_OFFSET,
        message_properties.MAX_OFFSET,
        message_properties.TIMER_DELIVER_MS,
        message_properties.TIMER_DELAY_SEC,
        message_properties.TIMER_DELAY_MS,
        message_properties.TIMER_OUT_MS,
        "TIMER_ENQUEUE_MS",
        "TIMER_DEQUEUE_MS",
        message_properties.POP_CK,
        message_properties.TRAN_MSG,
        message_properties.PGROUP,
        message_properties.TRANSACTION_ID,
        message_properties.TRANSACTION_CHECK_TIMES,
        message_properties.TRAN_PREPARED_QUEUE_OFFSET,
        "CONSUME_START_TIME",
    }
)

# answers that mean "stored" (the flush or slave part may have timed out, the message is there)
SENT = (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE)  # fmt: skip
PULLED = (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
          ResponseCode.PULL_OFFSET_MOVED)  # fmt: skip

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class ResentMessage:
    """One dead letter and what happened to it (``error`` None = resent, or would be in a dry run)."""

    dlq_offset: int
    msg_id: str  # offset MessageId of the dead letter (store host + CommitLog offset)
    uniq_key: str | None  # its UNIQ_KEY, kept by the resent copy; None when it has none
    topic: str | None  # the original topic; None when the dead letter does not say
    sent_to: str | None = None  # where the copy goes: %RETRY%<group>, or the original topic
    new_msg_id: str | None = None  # offset MessageId of the resent copy; None in a dry run
    queue_id: int | None = None
    queue_offset: int | None = None
    error: str | None = None


@dataclass(slots=True)
class ResendReport:
    group: str
    dlq_topic: str
    dry_run: bool
    messages: list[ResentMessage] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # requested offsets not (or no longer) in the DLQ
    skipped: list[int] = field(default_factory=list)  # offsets resent before (resend them with again)
    other_groups: list[str] = field(default_factory=list)  # to_topic: the other groups it reaches

    @property
    def resent(self) -> list[ResentMessage]:
        return [m for m in self.messages if m.error is None]

    @property
    def failed(self) -> list[ResentMessage]:
        return [m for m in self.messages if m.error is not None]


def origin_topic(rec: MessageRecord) -> str | None:
    return rec.properties.get(message_properties.DLQ_ORIGIN_TOPIC) or rec.properties.get(
        message_properties.RETRY_TOPIC
    )


def resend_properties(rec: MessageRecord) -> dict[str, str]:
    return {k: v for k, v in rec.properties.items() if k not in BOOKKEEPING}


async def read_dead_letters(
    admin: AdminApi, broker_addr: str, group: str, offsets: Sequence[int] | None
) -> tuple[list[MessageRecord], list[int]]:
    """The dead letters at ``offsets`` of queue 0 of %DLQ%<group> (all when None), and the requested
    offsets that are not there."""
    topic = dlq_topic(group)
    lo = await admin.min_offset(broker_addr, topic, 0)
    hi = await admin.max_offset(broker_addr, topic, 0)
    wanted = set(range(lo, hi)) if offsets is None else set(offsets)
    found: dict[int, MessageRecord] = {}
    inside = sorted(o for o in wanted if lo <= o < hi)
    offset = inside[0] if inside else hi
    end = inside[-1] + 1 if inside else hi
    while offset < end:
        header = PullMessageRequestHeader(
            consumerGroup=TOOLS_GROUP, topic=topic, queueId=0, queueOffset=offset, maxMsgNums=PULL_BATCH,
            sysFlag=SUB_FLAG, commitOffset=0, suspendTimeoutMillis=0, subVersion=0, subscription="*",
        )  # fmt: skip
        response = await admin.call(broker_addr, RequestCode.PULL_MESSAGE, header, ok=PULLED)
        if response.code == ResponseCode.SUCCESS:
            for rec in decode_records(response.body or b""):
                if rec.queue_offset in wanted:
                    found[rec.queue_offset] = rec
        next_offset = int(response.ext_fields.get("nextBeginOffset", offset))
        if next_offset <= offset:
            break
        offset = next_offset
    return [found[o] for o in sorted(found)], sorted(wanted - found.keys())


async def resend_dead_letters(
    admin: AdminApi,
    broker_addr: str,
    group: str,
    *,
    offsets: list[int] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    to_topic: bool = False,
    skip: Container[int] = (),
    rate: float | None = None,
) -> ResendReport:
    """Send the dead letters of ``group`` at ``offsets`` (queue offsets in %DLQ%<group>; None = all)
    through ``broker_addr`` to the group's retry topic (or, ``to_topic``, to their original topic);
    with ``dry_run`` only report what would go. Offsets in ``skip`` (resent before) are left alone
    and listed as skipped; ``rate`` paces the sends (messages per second).

    A message whose send fails is reported with the broker's answer and the others still go.
    """
    records, missing = await read_dead_letters(admin, broker_addr, group, offsets)
    report = ResendReport(group, dlq_topic(group), dry_run, missing=missing)
    todo = [r for r in records if r.queue_offset not in skip]
    report.skipped = [r.queue_offset for r in records if r.queue_offset in skip]
    began = time.monotonic()
    for done, rec in enumerate(todo, 1):
        if rate is not None and not dry_run:
            await asyncio.sleep(max(0.0, began + (done - 1) / rate - time.monotonic()))
        report.messages.append(await _resend_one(admin, broker_addr, group, rec, dry_run, to_topic))
        if progress is not None:
            progress(done, len(todo))
    return report


async def _resend_one(
    admin: AdminApi, broker_addr: str, group: str, rec: MessageRecord, dry_run: bool, to_topic: bool
) -> ResentMessage:
    topic = origin_topic(rec)
    base = ResentMessage(rec.queue_offset, rec.offset_msg_id, rec.uniq_key, topic)
    if topic is None:
        return replace(base, error="the dead letter names no original topic (DLQ_ORIGIN_TOPIC, RETRY_TOPIC)")
    properties = resend_properties(rec)
    if to_topic:
        target = topic
    else:  # the consumer's retry path: only this group reads it, its listener sees the original topic
        target = retry_topic(group)
        properties[message_properties.RETRY_TOPIC] = topic
    base = replace(base, sent_to=target)
    if dry_run:
        return base
    header = SendMessageRequestHeader(
        producerGroup=RESEND_PRODUCER_GROUP,
        topic=target,
        defaultTopic="TBW102",
        defaultTopicQueueNums=4,
        queueId=-1,
        sysFlag=rec.sys_flag & (COMPRESSED_FLAG | COMPRESSION_TYPE_MASK),
        bornTimestamp=int(time.time() * 1000),
        flag=rec.flag,
        properties=message_properties.encode_properties(properties),
        reconsumeTimes=0,
    )
    try:
        response = await admin.call(
            broker_addr, RequestCode.SEND_MESSAGE_V2, SendMessageRequestHeaderV2.from_v1(header),
            body=rec.body, ok=SENT,
        )  # fmt: skip
    except RemoteError as exc:
        return replace(base, error=f"{exc.code}: {exc.remark}")
    sent = SendMessageResponseHeader.from_ext_fields(response.ext_fields)
    return replace(base, new_msg_id=sent.msgId, queue_id=sent.queueId, queue_offset=sent.queueOffset)
