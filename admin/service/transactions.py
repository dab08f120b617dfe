"""Transactional (half) messages per topic: waiting for their producer's answer, or given up after
transactionCheckMax checks; and resuming the checks of the given-up ones (RESUME_CHECK_HALF_MESSAGE).

Built from ordinary reads, as RocketMQ keeps them: the half queue (RMQ_SYS_TRANS_HALF_TOPIC) from the
checker's progress on, the op queue (RMQ_SYS_TRANS_OP_HALF_TOPIC: which halves were committed or
rolled back), and TRANS_CHECK_MAX_TIME_TOPIC (the given-up ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from admin.service.base import admin_call, admin_error, gather
from admin.service.messages import MessageOps, _QueuePlan
from broker.protocol import properties as message_properties

if TYPE_CHECKING:
    from admin.models.transactions import HalfMessage, HalfMessages, ResumedHalves
    from broker.protocol.message import MessageRecord

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
GIVEN_UP_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
CHECKER_GROUP = "CID_RMQ_SYS_TRANS"  # whose offsets mark how far the broker's checker got
OP_REMOVE_TAG = "d"
SCAN_LIMIT = 100_000  # messages read per queue at most


def _key(rec: MessageRecord) -> str:
    """What names a transaction across the copies of its half message."""
    return rec.properties.get(message_properties.TRANSACTION_ID) or rec.uniq_key or rec.offset_msg_id


def _checks(rec: MessageRecord) -> int:
    text = rec.properties.get(message_properties.TRANSACTION_CHECK_TIMES, "0")
    return int(text) if text.isdigit() else 0


class TransactionOps(MessageOps):
    async def _queue(self, broker: str, addr: str, topic: str, from_checker: bool) -> list[MessageRecord]:
        """Queue 0 of a system topic on one broker (from the checker's progress on, or all of it); a
        topic the broker does not have yet is empty."""
        try:
            stats = (await self.api.topic_stats(addr, topic)).offsetTable
        except Exception as exc:
            if isinstance(admin_error(exc), NotFound):
                return []
            raise
        bounds = next((o for mq, o in stats.items() if mq.queueId == 0), None)
        if bounds is None:
            return []
        start = bounds.minOffset
        if from_checker:
            progress = (await self.api.consume_stats(addr, CHECKER_GROUP, topic)).offsetTable
            start = max(start, next((o.consumerOffset for mq, o in progress.items() if mq.queueId == 0), 0))
        plan = _QueuePlan(broker, addr, 0, start, bounds.maxOffset)
        records, _ = await self._read(topic, [plan], SCAN_LIMIT, "*", None, "TOOLS_CONSUMER", None)
        return records

    async def _broker_halves(self, broker: str, addr: str) -> tuple[list[MessageRecord], list[MessageRecord]]:
        """(waiting, given up) half messages of one broker, one record per transaction."""
        halves, ops, given_up = await gather(
            [
                self._queue(broker, addr, HALF_TOPIC, True),
                self._queue(broker, addr, OP_TOPIC, True),
                self._queue(broker, addr, GIVEN_UP_TOPIC, False),
            ]
        )
        removed: set[int] = set()
        resolved: set[str] = set()
        for op in ops:
            if op.tags == OP_REMOVE_TAG:
                removed.update(
                    int(p) for p in op.body.decode("utf-8", "replace").split(",") if p.strip().isdigit()
                )
                resolved.update(op.keys)
        waiting: dict[str, MessageRecord] = {}
        for half in halves:  # later copies (checked once more) replace earlier ones
            if half.queue_offset not in removed and _key(half) not in resolved:
                waiting[_key(half)] = half
        stopped = {_key(m): m for m in given_up if _key(m) not in resolved and _key(m) not in waiting}
        return list(waiting.values()), list(stopped.values())

    @admin_call
    async def transaction_list(self) -> HalfMessages:
        """Every topic's transactions still waiting for a commit or rollback, and the ones given up."""
        from admin.models.transactions import HalfMessage, HalfMessages, HalfTopic

        masters = self._masters(await self._cluster())
        answers = await gather(self._broker_halves(name, addr) for name, addr in masters.items())
        topics: list[HalfTopic] = []
        stopped: list[HalfMessage] = []
        for broker, (waiting, given_up) in zip(masters, answers, strict=True):
            names = sorted(
                {m.properties.get(message_properties.REAL_TOPIC, "?") for m in [*waiting, *given_up]}
            )
            for topic in names:
                w = [m for m in waiting if m.properties.get(message_properties.REAL_TOPIC, "?") == topic]
                g = [m for m in given_up if m.properties.get(message_properties.REAL_TOPIC, "?") == topic]
                topics.append(
                    HalfTopic(
                        topic, broker, len(w), min((m.born_timestamp for m in w), default=0),
                        max((_checks(m) for m in w), default=0),
                        len(g), min((m.born_timestamp for m in g), default=0),
                    )
                )  # fmt: skip
            stopped += [
                HalfMessage(
                    m.offset_msg_id,
                    m.properties.get(message_properties.REAL_TOPIC, "?"),
                    broker,
                    _key(m),
                    m.born_timestamp,
                    _checks(m),
                )
                for m in given_up
            ]
        stopped.sort(key=lambda m: (m.born_ms, m.msg_id))
        return HalfMessages(sorted(topics, key=lambda t: (t.topic, t.broker_name)), stopped)

    @admin_call
    async def transaction_resume(
        self, topic: str | None = None, msg_ids: list[str] | None = None
    ) -> ResumedHalves:
        """Have the brokers check again, from zero, the given-up half messages of ``topic`` (or those
        named by ``msg_ids``, or all of them when neither is given)."""
        from admin.models.transactions import ResumedHalves

        if topic is not None and msg_ids:
            raise BadInput("name a topic or message ids, not both")
        listed = (await self.transaction_list()).given_up
        chosen = [
            m for m in listed if (topic is None or m.topic == topic) and (not msg_ids or m.msg_id in msg_ids)
        ]
        unknown = sorted(set(msg_ids or ()) - {m.msg_id for m in chosen})
        if unknown:
            raise NotFound(f"no given-up half message {', '.join(unknown)} (see 'rmq transaction list')")
        masters = self._masters(await self._cluster())

        async def resume(m: HalfMessage) -> str | None:
            try:
                await self.api.resume_check_half_message(masters[m.broker_name], m.msg_id)
            except Exception as exc:
                mapped = admin_error(exc)
                if mapped is None:
                    raise
                return str(mapped)
            return None

        errors = await gather(resume(m) for m in chosen)
        failed = {m.msg_id: e for m, e in zip(chosen, errors, strict=True) if e is not None}
        return ResumedHalves([m for m in chosen if m.msg_id not in failed], failed)
