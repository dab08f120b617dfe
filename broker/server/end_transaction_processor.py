"""END_TRANSACTION (37): a producer's commit or rollback of a half message.

Java producers send it one-way, so the answer mostly matters to tools and tests; an unknown state
(NOT_TYPE) is only logged and, like upstream, gets no answer at all.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import EndTransactionRequestHeader
from broker.protocol.message import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel

if TYPE_CHECKING:
    from broker.server.broker import Broker

log = logging.getLogger(__name__)


class EndTransactionProcessor:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.END_TRANSACTION: self.end_transaction}

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
        outcome = await self.broker.transactions.end(header)
        if outcome.code != ResponseCode.SUCCESS:
            log.warning(
                "END_TRANSACTION from %s (%s) for offset %d failed: %s",
                channel.remote_addr, source, header.commitLogOffset, outcome.remark,
            )  # fmt: skip
        return make_response(request, outcome.code, outcome.remark)
