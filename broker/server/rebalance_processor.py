"""GET_REBALANCE_HISTORY (rmqkit's own code, behind ``rmq group rebalances``): extFields
``consumerGroup`` and ``beginTimestamp`` (ms, optional: moves from then on); answers a
:class:`~broker.protocol.rebalances.RebalanceHistoryBody` of the group's queues on this broker, or
SUBSCRIPTION_GROUP_NOT_EXIST for a group it neither knows nor saw pulling."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.rebalances import RebalanceHistoryBody
from broker.protocol.remoting import RemotingCommand, make_response
from broker.server.client_registry import ClientRegistry
from broker.server.rebalance_history import RebalanceHistory
from broker.server.subscription_group import SubscriptionGroupManager

if TYPE_CHECKING:
    from broker.remoting.channel import Handler, RemotingChannel


class RebalanceParts(Protocol):
    """The parts of the broker the rebalance history answer reads."""

    @property
    def rebalances(self) -> RebalanceHistory: ...

    @property
    def clients(self) -> ClientRegistry: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...


class RebalanceProcessor:
    def __init__(self, broker: RebalanceParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.GET_REBALANCE_HISTORY: self.history}

    async def history(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        fields = request.ext_fields or {}
        group = fields.get("consumerGroup") or ""
        try:
            since = int(fields.get("beginTimestamp") or 0)
        except ValueError:
            return make_response(request, ResponseCode.INVALID_PARAMETER, "beginTimestamp is a number")
        broker = self.broker
        body = broker.rebalances.history(group, since, set(broker.clients.consumer_ids(group)))
        if body is None:
            if broker.groups.get(group) is None:
                remark = f"subscription group not exist, {group}"
                return make_response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark)
            limits = broker.rebalances.limits
            body = RebalanceHistoryBody([], [], [], limits.flap_moves, limits.flap_window_ms)
        return make_response(request, body=body.to_json())
