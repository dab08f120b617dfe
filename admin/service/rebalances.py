"""A consumer group's rebalance history: which client holds each queue, the moves of queues from one
client to another and the queues that flap, as every master broker keeps them (one request each)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import NotFound, OperationFailed
from admin.service.base import ServiceBase, admin_call, gather
from broker.client.admin_api import RemoteError
from broker.protocol.codes import ResponseCode

if TYPE_CHECKING:
    from admin.models import GroupRebalances
    from broker.protocol.rebalances import RebalanceHistoryBody

_NO_HISTORY = (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)


class RebalanceOps(ServiceBase):
    @admin_call
    async def group_rebalances(self, group: str, since_ms: int = 0) -> GroupRebalances:
        """Who holds each queue of ``group`` on every master, the moves from ``since_ms`` on (oldest
        first) and the flapping queues; :class:`NotFound` when no broker knows the group."""
        from admin.models import FlappingQueue, GroupRebalances, QueueHolding, QueueMove

        masters = self._masters(await self._cluster())
        refusals: dict[str, int] = {}

        async def ask(name: str, addr: str) -> RebalanceHistoryBody | None:
            try:
                return await self.api.rebalance_history(addr, group, since_ms)
            except RemoteError as exc:
                if exc.code not in _NO_HISTORY:
                    raise
                refusals[name] = exc.code
                return None

        answers = await gather(ask(name, addr) for name, addr in masters.items())
        found = {name: body for name, body in zip(masters, answers, strict=True) if body is not None}
        if not found:
            if any(code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST for code in refusals.values()):
                raise NotFound(f"consumer group {group} not found")
            raise OperationFailed("no broker keeps a rebalance history (it takes an rmqkit broker)")
        first = next(iter(found.values()))
        return GroupRebalances(
            group,
            sorted(
                (QueueHolding(h.topic, name, h.queue_id, h.client_id, h.since_ms, h.online)
                 for name, body in found.items() for h in body.holders),
                key=lambda h: (h.topic, h.broker_name, h.queue_id),
            ),
            sorted(
                (QueueMove(m.at_ms, m.topic, name, m.queue_id, m.before, m.after)
                 for name, body in found.items() for m in body.moves),
                key=lambda m: (m.timestamp, m.topic, m.broker_name, m.queue_id),
            ),
            sorted(
                (FlappingQueue(f.topic, name, f.queue_id, f.moves)
                 for name, body in found.items() for f in body.flapping),
                key=lambda f: (f.topic, f.broker_name, f.queue_id),
            ),
            first.flap_moves,
            first.flap_window_ms,
            sorted(n for n, code in refusals.items() if code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED),
        )  # fmt: skip
