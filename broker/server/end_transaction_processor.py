"""END_TRANSACTION (37): a producer's commit or rollback of a half message.

Java producers send it one-way, so the answer mostly matters to tools and tests; an unknown state
(NOT_TYPE) is only logged and, like upstream, gets no answer at all.
"""

from __future__ import annotations

from broker.protocol.codes import RequestCode
from broker.protocol.headers import EndTransactionRequestHeader
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.messaging.core import MessagingCore


class EndTransactionProcessor:
    def __init__(self, core: MessagingCore) -> None:
        self.core = core

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.END_TRANSACTION: self.end_transaction}

    async def end_transaction(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand | None:
        header = EndTransactionRequestHeader.parse(request.ext_fields)
        answer = await self.core.end_transaction(header, channel.remote_addr, request.remark)
        return None if answer is None else make_response(request, answer.code, answer.remark)
