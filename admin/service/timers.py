"""Pending timer messages: list them by topic and due time, cancel one by message id or key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from admin.service.base import ServiceBase, admin_call, gather
from broker.client.admin_api import RemoteError
from broker.protocol.codes import ResponseCode

if TYPE_CHECKING:
    from admin.models import TimerCancelReport, TimerEntry, TimerList
    from broker.protocol.timers import PendingTimer


def _entry(broker: str, t: PendingTimer) -> TimerEntry:
    from admin.models import TimerEntry

    return TimerEntry(
        broker, t.topic, t.queue_id, t.msg_id, t.keys, t.tags, t.deliver_ms, t.store_ms, t.body_size
    )


class TimerOps(ServiceBase):
    async def _timer_brokers(self, topic: str | None, broker: str | None) -> dict[str, str]:
        """Broker name -> address: ``broker`` (an address), the topic's masters, or every master."""
        if broker is None and topic is not None:
            return self._route_masters(await self._route(topic))
        return await self._broker_targets(None, broker)

    @admin_call
    async def timer_list(self, topic: str | None = None, broker: str | None = None, begin_ms: int = 0,
                         end_ms: int = 2**62, limit: int = 100) -> TimerList:  # fmt: skip
        """Pending timer messages (of ``topic``) due from ``begin_ms`` to ``end_ms``, soonest first."""
        from admin.models import TimerList

        if limit <= 0:
            raise BadInput(f"the limit must be positive, not {limit}")
        if end_ms < begin_ms:
            raise BadInput("the end of the time range is before its beginning")
        targets = await self._timer_brokers(topic, broker)
        answers = await gather(
            self.api.list_timers(a, topic, begin_ms, end_ms, limit) for a in targets.values()
        )
        entries = [_entry(name, t) for name, body in zip(targets, answers, strict=True) for t in body.timers]
        entries.sort(key=lambda e: (e.deliver_timestamp, e.broker))
        more = len(entries) > limit or any(body.more for body in answers)
        return TimerList(entries[:limit], more, sum(body.offset_behind for body in answers))

    @admin_call
    async def timer_cancel(self, topic: str, msg_id: str | None = None, key: str | None = None,
                           broker: str | None = None) -> TimerCancelReport:  # fmt: skip
        """Cancel the pending timer messages of ``topic`` with this message id (UNIQ_KEY) or key, on
        every broker of the topic (or on ``broker``); :class:`NotFound` when none was waiting."""
        from admin.models import TimerCancelReport

        if (msg_id is None) == (key is None):
            raise BadInput("give a message id or a key, not both")
        targets = await self._timer_brokers(topic, broker)
        cancelled: list[TimerEntry] = []
        refusals: list[str] = []

        async def one(name: str, addr: str) -> None:
            try:
                body = await self.api.cancel_timer(addr, topic, msg_id, key)
            except RemoteError as exc:
                if exc.code != ResponseCode.QUERY_NOT_FOUND and exc.code != ResponseCode.ILLEGAL_OPERATION:
                    raise
                refusals.append(exc.remark or "not found")
                return
            cancelled.extend(_entry(name, t) for t in body.cancelled)

        await gather(one(name, addr) for name, addr in targets.items())
        if not cancelled:
            raise NotFound(
                "; ".join(sorted(set(refusals))) or f"no timer message of topic {topic} is waiting"
            )
        return TimerCancelReport(topic, sorted(cancelled, key=lambda e: (e.deliver_timestamp, e.broker)))
