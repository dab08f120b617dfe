"""LIST_TIMER_MESSAGES and CANCEL_TIMER_MESSAGE (rmqkit's own codes, behind ``rmq timer list|cancel``).

LIST: extFields ``topic`` (optional), ``beginTimestamp`` and ``endTimestamp`` (due times, ms),
``maxNum``; answers a :class:`~broker.protocol.timers.TimerListBody`. CANCEL: extFields ``topic`` and
either ``msgId`` (UNIQ_KEY) or ``key`` (KEYS); answers a :class:`~broker.protocol.timers.TimerCancelBody`
of the timers cancelled. Cancelling needs no recall handle and works whether recall is switched on or not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import RemotingCommand, make_response
from broker.protocol.timers import TimerCancelBody, TimerListBody
from broker.server.timer_service import RecallProblem, RecallRefused, TimerService
from broker.store.dispatch import TIMER_TOPIC
from broker.store.message_store import MessageStore

if TYPE_CHECKING:
    from broker.remoting.channel import Handler, RemotingChannel

_CODES = {
    RecallProblem.NO_TOPIC: ResponseCode.TOPIC_NOT_EXIST,
    RecallProblem.UNKNOWN: ResponseCode.QUERY_NOT_FOUND,
    RecallProblem.UNSUPPORTED: ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
}
DEFAULT_LIST = 100


class TimerAdminProcessor:
    def __init__(self, timer: TimerService, store: MessageStore) -> None:
        self.timer = timer
        self.store = store

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.LIST_TIMER_MESSAGES: self.list_timers,
            RequestCode.CANCEL_TIMER_MESSAGE: self.cancel_timer,
        }

    async def list_timers(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        fields = request.ext_fields or {}
        try:
            begin = int(fields.get("beginTimestamp") or 0)
            end = int(fields.get("endTimestamp") or 2**62)
            limit = int(fields.get("maxNum") or DEFAULT_LIST)
        except ValueError:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, "beginTimestamp, endTimestamp and maxNum are numbers"
            )
        if limit <= 0 or begin < 0 or end < begin:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, "maxNum must be positive and the time range ordered"
            )
        timer = self.timer
        try:
            timers, more = await timer.pending(fields.get("topic") or None, begin, end, limit)
        except RecallRefused as exc:
            return make_response(request, _CODES.get(exc.problem, ResponseCode.SYSTEM_ERROR), exc.remark)
        behind = self.store.max_offset(TIMER_TOPIC, 0) - timer.progress.queue_offset
        return make_response(request, body=TimerListBody(timers, more, behind).to_json())

    async def cancel_timer(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        fields = request.ext_fields or {}
        topic, msg_id, key = fields.get("topic", ""), fields.get("msgId") or None, fields.get("key") or None
        if not topic or (msg_id is None) == (key is None):
            return make_response(request, ResponseCode.SYSTEM_ERROR, "give a topic and either msgId or key")
        try:
            cancelled = await self.timer.cancel(topic, msg_id, key)
        except RecallRefused as exc:
            return make_response(request, _CODES.get(exc.problem, ResponseCode.ILLEGAL_OPERATION), exc.remark)
        return make_response(request, body=TimerCancelBody(cancelled).to_json())
