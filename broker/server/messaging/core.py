"""The messaging core's entry point, :class:`MessagingCore` (see the package's notes)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from broker.protocol.codes import ResponseCode
from broker.protocol.headers import EndTransactionRequestHeader
from broker.protocol.javahash import tags_code
from broker.protocol.message import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE, MessageRecord
from broker.server.config import BrokerConfig
from broker.server.messaging.send import SendService
from broker.server.pop_service import AckStatus, ConsumeParts, InFlight, InitMode, Popped, PopService
from broker.server.rebalance_history import RebalanceHistory
from broker.server.subscription_group import group_name_problem
from broker.server.topic_config import PERM_READ, topic_name_problem
from broker.store.consume_queue import Boundary
from broker.store.message_store import GetResult

log = logging.getLogger(__name__)

T = TypeVar("T")

SUB_ALL = "*"
TagFilter = Callable[[int], bool]
RecordFilter = Callable[[bytes], bool]


class Answer(Protocol):
    """A result in RocketMQ's terms: a response code and a remark."""

    @property
    def code(self) -> int: ...

    @property
    def remark(self) -> str | None: ...


class Transactions(Protocol):
    async def end(self, header: EndTransactionRequestHeader) -> Answer: ...

    def resume(self, offset: int) -> str | None: ...


class BrokerParts(ConsumeParts, Protocol):
    """The parts of the broker the core uses."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def rebalances(self) -> RebalanceHistory: ...

    @property
    def transactions(self) -> Transactions: ...


class ConsumeRejected(Exception):
    """A consume request refused with RocketMQ's response code."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def tag_filter_of(expression: str | None) -> TagFilter | None:
    """The ConsumeQueue test for a TAG expression ("*" or "A || B"); None matches everything."""
    if expression is None or not expression.strip() or expression.strip() == SUB_ALL:
        return None
    codes = frozenset(tags_code(tag.strip()) for tag in expression.split("||") if tag.strip())
    return codes.__contains__


@dataclass(frozen=True, slots=True)
class PullQuery:
    """Where a pull reads and what it keeps."""

    topic: str
    queue_id: int
    offset: int
    max_nums: int
    max_bytes: int | None = None
    tag_filter: TagFilter | None = None
    record_filter: RecordFilter | None = None


def caught_up(result: GetResult, offset: int) -> bool:
    """Whether a read found nothing past ``offset`` yet (worth waiting for, not an offset to move)."""
    return not result.records and result.next_begin_offset == offset


def rotated(queues: list[int]) -> list[int]:
    """The queues from a random one on, so the consumers of a group start on different queues."""
    shift = random.randrange(len(queues)) if queues else 0
    return queues[shift:] + queues[:shift]


class MessagingCore:
    def __init__(self, broker: BrokerParts, sends: SendService, pops: PopService) -> None:
        self.broker = broker
        self.sends = sends  # the send path: ``sends.put`` for a decoded send, both protocols
        self.pops = pops  # POP consumption's state: in-flight messages, their offsets, revives

    # == consuming ==============================================================================
    def check_consume(self, group: str, topic: str) -> list[int]:
        """The readable queue ids of ``topic`` for ``group``, or :class:`ConsumeRejected`."""
        problem = topic_name_problem(topic) or group_name_problem(group)
        if problem:
            raise ConsumeRejected(ResponseCode.INVALID_PARAMETER, problem)
        cfg = self.broker.config
        if not cfg.broker_permission & PERM_READ:
            raise ConsumeRejected(
                ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] peeking message is forbidden"
            )
        config = self.broker.topics.get(topic)
        if config is None:
            raise ConsumeRejected(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
            )
        if not config.perm & PERM_READ:
            raise ConsumeRejected(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden"
            )
        group_config = self.broker.groups.find(group)
        if group_config is None:
            raise ConsumeRejected(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist"
            )
        if not group_config.consumeEnable:
            raise ConsumeRejected(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        return list(range(config.readQueueNums))

    # == pull ==================================================================================
    async def read(self, query: PullQuery) -> GetResult:
        store = self.broker.store

        def get() -> GetResult:
            return store.get_messages(
                query.topic,
                query.queue_id,
                query.offset,
                query.max_nums,
                max_bytes=query.max_bytes,
                tag_filter=query.tag_filter,
                record_filter=query.record_filter,
            )

        return await self.broker.read_queue(query.topic, query.queue_id, query.offset, get)

    async def pull(
        self, query: PullQuery, hold_seconds: float, worth_waiting: Callable[[GetResult], bool]
    ) -> GetResult:
        """Read; when ``worth_waiting`` says the answer has nothing new yet, wait up to
        ``hold_seconds`` for a message to arrive (RocketMQ's PullRequestHoldService) and read again."""
        result = await self.read(query)
        if hold_seconds <= 0 or not worth_waiting(result):
            return result
        await self.wait_for_messages(
            query.topic, query.queue_id, query.offset, hold_seconds, query.tag_filter
        )
        return await self.read(query)

    def wait_for_messages(
        self, topic: str, queue_id: int, offset: int, seconds: float, tag_filter: TagFilter | None
    ) -> Awaitable[None]:
        """Until a message past ``offset`` (matching ``tag_filter``) is stored, or ``seconds`` pass."""
        store = self.broker.store

        async def newest() -> int:
            # on the loop: an in-memory number, and no thread hop in which a send could slip by
            return store.max_offset(topic, queue_id)

        return self.broker.holds.hold(topic, queue_id, offset, seconds, tag_filter, newest)

    # == POP =================================================================================
    def is_orderly(self, group: str, topic: str) -> bool:
        """Whether POP hands the group the topic's messages in order (an orderly group, a FIFO topic)."""
        return self.pops.is_orderly(group, topic)

    async def pop(
        self,
        group: str,
        topic: str,
        queues: list[int],
        max_nums: int,
        invisible_ms: int,
        wait_seconds: float,
        *,
        tag_filter: TagFilter | None = None,
        record_filter: RecordFilter | None = None,
        orderly: bool | None = None,
        init_mode: InitMode = InitMode.MAX,
        keep: Callable[[Popped], bool] | None = None,
    ) -> list[Popped]:
        """Hand out up to ``max_nums`` messages of ``queues`` (in that order), invisible to others for
        ``invisible_ms``; while none is found, wait up to ``wait_seconds`` for one and pop again
        (RocketMQ's PopLongPollingService). ``keep`` says which popped messages the consumer takes:
        the others are acked at once (a tag-hash collision, a record the protocol cannot encode)."""
        pops = self.pops
        deadline = time.monotonic() + wait_seconds
        while True:
            popped = await pops.pop(
                group, topic, queues, max_nums, invisible_ms,
                tag_filter=tag_filter, record_filter=record_filter, orderly=orderly, init_mode=init_mode,
            )  # fmt: skip
            if keep is not None:
                taken: list[Popped] = []
                for p in popped:
                    if keep(p):
                        taken.append(p)
                    else:
                        pops.ack(group, topic, p.queue_id, p.offset, p.pop_time)
                popped = taken
            left = deadline - time.monotonic()
            if popped or left <= 0 or pops.stopping:
                return popped
            await pops.wait(group, topic, queues, left)

    def ack(self, group: str, topic: str, queue_id: int, offset: int, pop_time: int) -> AckStatus:
        """The consumer is done with a popped message (``pop_time`` names which delivery)."""
        return self.pops.ack(group, topic, queue_id, offset, pop_time)

    def change_invisible(
        self, group: str, topic: str, queue_id: int, offset: int, pop_time: int, invisible_ms: int
    ) -> InFlight | None:
        """Hide a popped message ``invisible_ms`` from now on; None when the handle is stale."""
        return self.pops.change_invisible(group, topic, queue_id, offset, pop_time, invisible_ms)

    async def forward_to_dlq(self, group: str, topic: str, queue_id: int, offset: int, pop_time: int) -> bool:
        """The consumer gave up on a popped message: to the group's DLQ; False when the handle is stale."""
        return await self.pops.forward_to_dlq(group, topic, queue_id, offset, pop_time)

    # == offsets ===============================================================================
    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.broker.offsets.commit(group, topic, queue_id, offset)

    def committed_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The group's committed offset of the queue, -1 when it has none."""
        return self.broker.offsets.query(group, topic, queue_id)

    def record_pull(self, group: str, topic: str, queue_id: int, next_offset: int) -> None:
        self.broker.offsets.record_pull(group, topic, queue_id, next_offset)

    def record_holder(self, group: str, topic: str, queue_id: int, client_id: str) -> None:
        """A client of a clustering group is pulling the queue (as it arrives: a held pull that
        returns after a rebalance is no claim): the group's rebalance history follows who holds it."""
        self.broker.rebalances.pulled(group, topic, queue_id, client_id)

    async def min_offset(self, topic: str, queue_id: int) -> int:
        return await self.broker.read(self.broker.store.min_offset, topic, queue_id)

    async def max_offset(self, topic: str, queue_id: int) -> int:
        return await self.broker.read(self.broker.store.max_offset, topic, queue_id)

    async def offset_by_time(
        self, topic: str, queue_id: int, when_ms: int, boundary: Boundary = Boundary.LOWER
    ) -> int:
        return await self.broker.read(self.broker.store.offset_by_time, topic, queue_id, when_ms, boundary)

    async def earliest_store_time(self, topic: str, queue_id: int) -> int | None:
        return await self.broker.read(self.broker.store.earliest_store_time, topic, queue_id)

    # == transactions ==========================================================================
    async def resume_transaction_check(self, commitlog_offset: int) -> str | None:
        """Put a half message that hit the check limit back to be checked; why not, or None."""
        return await self.broker.write(self.broker.transactions.resume, commitlog_offset)

    async def message_at(self, commitlog_offset: int) -> MessageRecord | None:
        """The stored message at a CommitLog offset, if a whole one starts there."""
        return await self.broker.read(self.broker.store.message_at, commitlog_offset)

    async def end_transaction(
        self,
        header: EndTransactionRequestHeader,
        remote_addr: str,
        remark: str | None = None,
        refusal: Callable[[], Awaitable[str | None]] | None = None,
    ) -> Answer | None:
        """Commit or roll back a half message; None for a producer that reports the state unknown
        (logged only, and unanswered, as upstream). ``refusal``, the protocol's access check, runs
        once the request is known to end a transaction; its message is answered NO_PERMISSION."""
        if self.broker.config.broker_role == "SLAVE":
            return _Answer(
                ResponseCode.SLAVE_NOT_AVAILABLE,
                "Message store is slave mode, so end transaction is forbidden. ",
            )
        source = "check answer" if header.fromTransactionCheck else "end of local transaction"
        if header.commitOrRollback not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            log.info(
                "producer %s reports transaction %s still unknown (%s, remark %r)",
                remote_addr, header.transactionId or header.msgId, source, remark,
            )  # fmt: skip
            return None
        refused = None if refusal is None else await refusal()
        if refused is not None:
            return _Answer(ResponseCode.NO_PERMISSION, refused)
        outcome = await self.broker.transactions.end(header)
        if outcome.code != ResponseCode.SUCCESS:
            log.warning(
                "END_TRANSACTION from %s (%s) for offset %d failed: %s",
                remote_addr, source, header.commitLogOffset, outcome.remark,
            )  # fmt: skip
        return outcome


@dataclass(frozen=True, slots=True)
class _Answer:
    code: int
    remark: str | None
