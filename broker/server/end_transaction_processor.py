"""END_TRANSACTION (37): a producer's commit or rollback of a half message; RESUME_CHECK_HALF_MESSAGE
(323): an operator puts a half message that hit the check limit back to be checked.

Java producers send it one-way, so the answer mostly matters to tools and tests; an unknown state
(NOT_TYPE) is only logged and, like upstream, gets no answer at all. The half is picked by its CommitLog
offset, so under access control its sender needs PUB on the half's real topic: the topic the request
names must be it, and a request naming none (4.x producers) is checked against it here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.client.remoting_client import Handler, RemotingChannel
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import EndTransactionRequestHeader, ResumeCheckHalfMessageRequestHeader
from broker.protocol.message import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE
from broker.protocol.msgid import MessageIdError, decode_offset_msg_id
from broker.protocol.names import real_topic
from broker.protocol.remoting import RemotingCommand, make_response

if TYPE_CHECKING:
    from broker.server.broker import Broker

log = logging.getLogger(__name__)


class EndTransactionProcessor:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

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
        problem = await self.broker.write(self.broker.transactions.resume, offset)
        if problem is not None:
            return make_response(request, ResponseCode.SYSTEM_ERROR, problem)
        return make_response(request)

    async def end_transaction(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand | None:
        header = EndTransactionRequestHeader.parse(request.ext_fields)
        if self.broker.config.broker_role == "SLAVE":
            return make_response(
                request,
                ResponseCode.SLAVE_NOT_AVAILABLE,
                "Message store is slave mode, so end transaction is forbidden. ",
            )
        source = "check answer" if header.fromTransactionCheck else "end of local transaction"
        if header.commitOrRollback not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            log.info(
                "producer %s reports transaction %s still unknown (%s, remark %r)",
                channel.remote_addr, header.transactionId or header.msgId, source, request.remark,
            )  # fmt: skip
            return None
        if not header.topic:  # 4.x producers name no topic: the half's own is the one written to
            half = await self.broker.read(self.broker.store.message_at, header.commitLogOffset)
            topic = real_topic(half.topic, half.properties) if half is not None else ""
            refused = (
                self.broker.topic_refusal(request, channel.remote_addr, topic, publish=True)
                if topic
                else None
            )
            if refused is not None:
                return make_response(request, ResponseCode.NO_PERMISSION, refused)
        outcome = await self.broker.transactions.end(header)
        if outcome.code != ResponseCode.SUCCESS:
            log.warning(
                "END_TRANSACTION from %s (%s) for offset %d failed: %s",
                channel.remote_addr, source, header.commitLogOffset, outcome.remark,
            )  # fmt: skip
        return make_response(request, outcome.code, outcome.remark)
