"""Transactional messages: half messages, commit and rollback, and the check service.

A half message is parked in RMQ_SYS_TRANS_HALF_TOPIC queue 0. Committing writes the real message
and an op record; rolling back writes only the op record. Op records (RMQ_SYS_TRANS_OP_HALF_TOPIC,
tag ``d``) carry the half's queue offset in the body, as upstream, and the transaction id in KEYS, so
the IndexFile tells, even after a restart, whether any copy of a transaction was already resolved: a
repeated END_TRANSACTION is answered without writing twice, and the checker skips resolved copies.

The check service walks the half queue from its progress offset (consumer group CID_RMQ_SYS_TRANS,
like the op queue's), asks an online producer of the group about each half older than the timeout
(CHECK_TRANSACTION_STATE, one-way) after re-appending it with TRANSACTION_CHECK_TIMES+1, and moves
halves checked transactionCheckMax times to TRANS_CHECK_MAX_TIME_TOPIC.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass
from typing import Protocol

from broker.protocol import properties as P
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from broker.protocol.message import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_MASK,
    MessageRecord,
    decode_records,
    encode_record,
    pack_host,
)
from broker.protocol.remoting import make_request
from broker.remoting.channel import RemotingChannel
from broker.server.client_registry import ClientRegistry
from broker.server.config import BrokerConfig
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.long_polling import PullHoldService
from broker.server.stats import BrokerStats
from broker.server.store_access import StoreAccess
from broker.server.topic_config import (
    PERM_READ,
    PERM_WRITE,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TopicConfigManager,
)
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage, PutResult, PutStatus

log = logging.getLogger(__name__)

SYS_TRANS_GROUP = "CID_RMQ_SYS_TRANS"
OP_REMOVE_TAG = "d"
HALF_QUEUE_ID = 0
MAX_PASS_SECONDS = 60.0  # upstream MAX_QUEUE_PROCESS_TIME
_RECENT_LIMIT = 100_000
_OP_READ_BATCH = 256
_FOREVER = 2**63 - 1


def is_half_message(msg: PutMessage) -> bool:
    """A producer's prepared message (TRAN_MSG=true), unless it is a delayed retry of one."""
    if msg.properties.get(P.TRAN_MSG) != "true":
        return False
    return not (msg.reconsume_times > 0 and msg.properties.get(P.DELAY, "0") not in ("", "0"))


def to_half_message(msg: PutMessage) -> None:
    """Park ``msg`` in the half topic, remembering where it really goes (parseHalfMessageInner)."""
    props = msg.properties
    uniq = props.get(P.UNIQ_KEY)
    if uniq:
        props[P.TRANSACTION_ID] = uniq
    props[P.REAL_TOPIC] = msg.topic
    props[P.REAL_QID] = str(msg.queue_id)
    msg.sys_flag &= ~TRANSACTION_MASK
    msg.topic = TRANS_HALF_TOPIC
    msg.queue_id = HALF_QUEUE_ID


@dataclass(slots=True)
class EndOutcome:
    """The answer to END_TRANSACTION; ``committed`` is the real message's append, if one happened."""

    code: int
    remark: str | None = None
    committed: PutResult | None = None
    topic: str = ""
    queue_id: int = 0


class TransactionParts(StoreAccess, Protocol):
    """The parts of the broker transactions use."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def clients(self) -> ClientRegistry: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def holds(self) -> PullHoldService: ...


class TransactionService:
    def __init__(self, broker: TransactionParts) -> None:
        self.broker = broker
        self._recent: set[str] = set()  # transaction ids resolved lately (the index has them all)
        self._round_robin = itertools.count()

    # == END_TRANSACTION =======================================================================
    async def end(self, header: EndTransactionRequestHeader) -> EndOutcome:
        """Commit or roll back the half at ``commitLogOffset``: one store-writer step, so two answers
        for the same transaction can never both write."""
        outcome = await self.broker.write(self._end, header)
        if outcome.committed is not None:
            result = outcome.committed
            self.broker.stats.record_put(outcome.topic, 1, result.sizes[0])
            self.broker.holds.notify(outcome.topic, outcome.queue_id, result.queue_offsets[0] + 1)
        return outcome

    def _end(self, h: EndTransactionRequestHeader) -> EndOutcome:
        """Runs on the writer thread."""
        half = self.broker.store.message_at(h.commitLogOffset)
        if half is None or half.topic != TRANS_HALF_TOPIC:
            return EndOutcome(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(P.PGROUP) != h.producerGroup:
            return EndOutcome(ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if h.topic and h.topic != half.properties.get(P.REAL_TOPIC):  # its sender's rights were checked
            return EndOutcome(ResponseCode.SYSTEM_ERROR, "The topic wrong: not the prepared message's")
        if half.queue_offset != h.tranStateTableOffset:
            return EndOutcome(ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.physical_offset != h.commitLogOffset:
            return EndOutcome(ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
        key = _transaction_key(half)
        if self._resolved(key):
            log.info("transaction %s already resolved; END_TRANSACTION ignored", key)
            return EndOutcome(ResponseCode.SUCCESS)
        msgs = [self._op_message(half, key)]
        commit = h.commitOrRollback == TRANSACTION_COMMIT_TYPE
        if commit:
            try:
                msgs.insert(0, _committed_message(half))
            except ValueError:
                return EndOutcome(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        result = self.broker.store.append(msgs)
        if not result.ok:
            return EndOutcome(*_put_failure(result))
        self._remember(key)
        if not commit:
            return EndOutcome(ResponseCode.SUCCESS)
        return EndOutcome(ResponseCode.SUCCESS, None, result, msgs[0].topic, msgs[0].queue_id)

    def _op_message(self, half: MessageRecord, key: str | None) -> PutMessage:
        props = {P.TAGS: OP_REMOVE_TAG, P.WAIT: "false"}
        if key:
            props[P.KEYS] = key
        return PutMessage(
            topic=TRANS_OP_HALF_TOPIC,
            queue_id=half.queue_id,
            body=f"{half.queue_offset},".encode(),
            properties=props,
            born_timestamp=int(time.time() * 1000),
            born_host=self.broker.store.store_host_raw,
        )

    def _resolved(self, key: str | None) -> bool:
        """Whether an op record exists for any copy of the transaction (store thread)."""
        if not key:
            return False
        if key in self._recent:
            return True
        if self.broker.store.query_by_key(TRANS_OP_HALF_TOPIC, key, 1, 0, _FOREVER):
            self._remember(key)
            return True
        return False

    def _remember(self, key: str | None) -> None:
        if key:
            if len(self._recent) >= _RECENT_LIMIT:
                self._recent.clear()
            self._recent.add(key)

    # == the check service =====================================================================
    async def check(self) -> None:
        """One pass over the half queue (TransactionalMessageServiceImpl.check)."""
        broker = self.broker
        cfg = broker.config
        store = broker.store
        started = time.time()
        start_ms = int(started * 1000)
        half_offset = broker.offsets.query(SYS_TRANS_GROUP, TRANS_HALF_TOPIC, HALF_QUEUE_ID)
        if half_offset < 0:
            half_offset = store.min_offset(TRANS_HALF_TOPIC, HALF_QUEUE_ID)
        op_offset = broker.offsets.query(SYS_TRANS_GROUP, TRANS_OP_HALF_TOPIC, HALF_QUEUE_ID)
        if op_offset < 0:
            op_offset = store.min_offset(TRANS_OP_HALF_TOPIC, HALF_QUEUE_ID)
        ops = await broker.read(self._read_ops, op_offset)
        removed = {half for _, halves in ops for half in halves if half >= half_offset}
        end = store.max_offset(TRANS_HALF_TOPIC, HALF_QUEUE_ID)
        reserved_ms = broker.store_config.file_reserved_time_hours * 3_600_000
        offset = half_offset
        while offset < end and time.time() - started < MAX_PASS_SECONDS:
            if offset in removed:
                offset += 1
                continue
            half, resolved = await broker.read(self._half_at, offset)
            if half is None or resolved:
                offset += 1
                continue
            now = int(time.time() * 1000)
            age = now - half.born_timestamp
            times = _int(half.properties.get(P.TRANSACTION_CHECK_TIMES), 0)
            if times >= cfg.transaction_check_max or age > reserved_ms:
                if not await self._discard(half, times):
                    break
                offset += 1
                continue
            if half.store_timestamp >= start_ms:
                break  # stored during this pass: next time
            immunity_text = half.properties.get(P.CHECK_IMMUNITY_TIME_IN_SECONDS)
            immunity = _immunity_ms(immunity_text, cfg.transaction_time_out)
            if immunity_text is None and 0 <= age < immunity:
                break  # the rest of the queue is younger still
            if immunity_text is not None and age < immunity:
                # immune for longer than the timeout: park a copy at the end instead of blocking
                if await broker.write(self._put_back, half, times) is None:
                    break
                offset += 1
                continue
            copy = await broker.write(self._put_back, half, times + 1)
            if copy is None:
                break
            self._send_check(copy)
            offset += 1
        if offset != half_offset:
            broker.offsets.commit(SYS_TRANS_GROUP, TRANS_HALF_TOPIC, HALF_QUEUE_ID, offset)
        new_op_offset = op_offset
        for op_queue_offset, halves in ops:  # ops whose halves are all behind us are done
            if any(half >= offset for half in halves):
                break
            new_op_offset = op_queue_offset + 1
        if new_op_offset != op_offset:
            broker.offsets.commit(SYS_TRANS_GROUP, TRANS_OP_HALF_TOPIC, HALF_QUEUE_ID, new_op_offset)

    def _read_ops(self, offset: int) -> list[tuple[int, list[int]]]:
        """(op queue offset, half queue offsets it removes) from ``offset`` to the end (store thread)."""
        store = self.broker.store
        ops: list[tuple[int, list[int]]] = []
        while offset < store.max_offset(TRANS_OP_HALF_TOPIC, HALF_QUEUE_ID):
            got = store.get_messages(TRANS_OP_HALF_TOPIC, HALF_QUEUE_ID, offset, _OP_READ_BATCH)
            for queue_offset, record in zip(got.queue_offsets, decode_records(got.body), strict=True):
                halves: list[int] = []
                if record.tags == OP_REMOVE_TAG:
                    text = record.body.decode("utf-8", "replace")
                    halves = [int(part) for part in text.split(",") if part.strip().isdigit()]
                ops.append((queue_offset, halves))
            if got.next_begin_offset <= offset:
                break
            offset = got.next_begin_offset
        return ops

    def _half_at(self, offset: int) -> tuple[MessageRecord | None, bool]:
        """The half at queue ``offset`` and whether its transaction is resolved (store thread)."""
        store = self.broker.store
        cq = store.consume_queue(TRANS_HALF_TOPIC, HALF_QUEUE_ID)
        unit = cq.unit_at(offset) if cq is not None else None
        half = store.message_at(unit.commitlog_offset) if unit is not None else None
        return half, half is not None and self._resolved(_transaction_key(half))

    def _put_back(self, half: MessageRecord, check_times: int) -> MessageRecord | None:
        """Append a copy of the half with ``check_times``; the copy as stored (writer thread)."""
        props = dict(half.properties)
        props[P.TRANSACTION_CHECK_TIMES] = str(check_times)
        result = self.broker.store.append([_copy(half, TRANS_HALF_TOPIC, half.queue_id, props)])
        if not result.ok:
            log.warning("putting back half message %s failed: %s", half.offset_msg_id, result.remark)
            return None
        return self.broker.store.message_at(result.offsets[0])

    async def _discard(self, half: MessageRecord, times: int) -> bool:
        """Checked too often or too old: move it to TRANS_CHECK_MAX_TIME_TOPIC (resolveDiscardMsg)."""
        self.broker.topics.ensure(TRANS_CHECK_MAX_TIME_TOPIC, 1, PERM_READ | PERM_WRITE)
        msg = _copy(half, TRANS_CHECK_MAX_TIME_TOPIC, 0, dict(half.properties))
        result = await self.broker.write(self.broker.store.append, [msg])
        log.warning("half message %s discarded after %d checks", half.uniq_key, times)
        return result.ok

    def resume(self, commitlog_offset: int) -> str | None:
        """Put a half message that hit the check limit (in TRANS_CHECK_MAX_TIME_TOPIC) back in the half
        queue with its check count at 0, as RESUME_CHECK_HALF_MESSAGE does upstream; None when done,
        else why not (writer thread)."""
        store = self.broker.store
        msg = store.message_at(commitlog_offset)
        if msg is None or msg.topic != TRANS_CHECK_MAX_TIME_TOPIC:
            return f"no half message that hit the check limit at offset {commitlog_offset}"
        props = dict(msg.properties)
        props[P.TRANSACTION_CHECK_TIMES] = "0"
        result = store.append([_copy(msg, TRANS_HALF_TOPIC, HALF_QUEUE_ID, props)])
        return None if result.ok else f"put back to {TRANS_HALF_TOPIC} failed: {result.remark}"

    def _send_check(self, half: MessageRecord) -> None:
        """CHECK_TRANSACTION_STATE to one online producer of the group (round robin)."""
        group = half.properties.get(P.PGROUP, "")
        channels = [ch for ch in self.broker.clients.producers.get(group, {}) if not ch.is_closed]
        if not channels:
            log.warning("no producer of group %s online to check transaction %s", group, half.uniq_key)
            return
        channel: RemotingChannel = channels[next(self._round_robin) % len(channels)]
        header = CheckTransactionStateRequestHeader(
            topic=half.properties.get(P.REAL_TOPIC),
            tranStateTableOffset=half.queue_offset,
            commitLogOffset=half.physical_offset,
            msgId=half.uniq_key,
            transactionId=half.uniq_key,
            offsetMsgId=half.offset_msg_id,
        )
        body = _check_body(half)
        request = make_request(RequestCode.CHECK_TRANSACTION_STATE, header, body=body, oneway=True)
        self.broker.clients.push(channel, request)


# == helpers ===================================================================================
def _transaction_key(half: MessageRecord) -> str | None:
    return half.properties.get(P.TRANSACTION_ID) or half.uniq_key


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def _immunity_ms(text: str | None, timeout_ms: int) -> int:
    """CHECK_IMMUNITY_TIME_IN_SECONDS in ms; absent, -1 or not a number means the timeout."""
    seconds = _int(text, -1)
    return timeout_ms if seconds == -1 else seconds * 1000


def _copy(half: MessageRecord, topic: str, queue_id: int, props: dict[str, str]) -> PutMessage:
    return PutMessage(
        topic=topic,
        queue_id=queue_id,
        body=half.body,
        properties=props,
        flag=half.flag,
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=pack_host(half.born_host),
        reconsume_times=half.reconsume_times,
    )


def _committed_message(half: MessageRecord) -> PutMessage:
    """The real message of a committed half (endMessageTransaction); ValueError if it has no home."""
    props = dict(half.properties)
    topic = props.pop(P.REAL_TOPIC, None)
    queue_id = int(props.pop(P.REAL_QID, ""))
    props.pop(P.TRAN_MSG, None)
    if not topic:
        raise ValueError("the half message names no real topic")
    msg = _copy(half, topic, queue_id, props)
    msg.sys_flag = (half.sys_flag & ~TRANSACTION_MASK) | TRANSACTION_COMMIT_TYPE
    msg.prepared_transaction_offset = half.physical_offset
    msg.store_timestamp = half.store_timestamp
    return msg


def _check_body(half: MessageRecord) -> bytes:
    """The half as a record with its real topic and queue (MessageDecoder.encode)."""
    return encode_record(
        topic=half.properties.get(P.REAL_TOPIC, half.topic).encode(),
        queue_id=_int(half.properties.get(P.REAL_QID), half.queue_id),
        flag=half.flag,
        queue_offset=half.queue_offset,
        physical_offset=half.physical_offset,
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=pack_host(half.born_host),
        store_timestamp=half.store_timestamp,
        store_host=half.store_host_raw,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.prepared_transaction_offset,
        body=half.body,
        properties=P.encode_properties(half.properties).encode(),
    )


def _put_failure(result: PutResult) -> tuple[int, str]:
    """sendFinalMessage's codes and remarks for a failed append."""
    if result.status in (PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED):
        return (
            ResponseCode.MESSAGE_ILLEGAL,
            "The message is illegal, maybe msg body or properties length not matched. "
            "msg body length limit 128k, msg properties length limit 32k.",
        )
    if result.status is PutStatus.SERVICE_NOT_AVAILABLE:
        return ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now."
    if result.status is PutStatus.OS_PAGE_CACHE_BUSY:
        return ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine"
    return ResponseCode.SYSTEM_ERROR, result.remark or "UNKNOWN_ERROR"
