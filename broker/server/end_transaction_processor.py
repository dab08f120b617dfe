"""END_TRANSACTION (37): a producer's commit or rollback of a half message; RESUME_CHECK_HALF_MESSAGE
(323): an operator puts a half message that hit the check limit back to be checked.

Java producers send it one-way, so the answer mostly matters to tools and tests; an unknown state
(NOT_TYPE) is only logged and, like upstream, gets no answer at all. The half is picked by its CommitLog
offset, so under access control its sender needs PUB on the half's real topic: the topic the request
names must be it, and a request naming none (4.x producers) is checked against it here.
"""

from __future__ import annotations

from typing import Protocol

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import EndTransactionRequestHeader, ResumeCheckHalfMessageRequestHeader
from broker.protocol.msgid import MessageIdError, decode_offset_msg_id
from broker.protocol.names import real_topic
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.messaging.core import MessagingCore


class TopicGuard(Protocol):
    def topic_refusal(
        self, request: RemotingCommand, remote_addr: str, topic: str, *, publish: bool = False
    ) -> str | None: ...


class EndTransactionProcessor:
    def __init__(self, core: MessagingCore, guard: TopicGuard) -> None:
        self.core = core
        self.guard = guard

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.END_TRANSACTION: self.end_transaction,
            RequestCode.RESUME_CHECK_HALF_MESSAGE: self.resume_check,
        }

    async def resume_check(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = ResumeCheckHalfMessageRequestHeader.parse(request.ext_fields)
        try:
            offset = decode_offset_msg_id(header.msgId).offset
        except MessageIdError as exc:
            return make_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
        problem = await self.core.resume_transaction_check(offset)
        if problem is not None:
            return make_response(request, ResponseCode.SYSTEM_ERROR, problem)
        return make_response(request)

    async def end_transaction(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand | None:
        header = EndTransactionRequestHeader.parse(request.ext_fields)

        async def refusal() -> str | None:
            if header.topic:
                return None
            # 4.x producers name no topic: the half's own is the one written to
            half = await self.core.message_at(header.commitLogOffset)
            topic = real_topic(half.topic, half.properties) if half is not None else ""
            return (
                self.guard.topic_refusal(request, channel.remote_addr, topic, publish=True) if topic else None
            )

        answer = await self.core.end_transaction(header, channel.remote_addr, request.remark, refusal)
        return None if answer is None else make_response(request, answer.code, answer.remark)
