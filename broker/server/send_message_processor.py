"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): the remoting face of the
send path (:mod:`broker.server.messaging.send`), which the gRPC API shares. Here: the header decoded
and its numbers held to Java's ranges, the batch flag, and the answer's header.
"""

from __future__ import annotations

import time

from broker.protocol import properties as P
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler
from broker.server.config import BrokerConfig
from broker.server.header_limits import range_problem
from broker.server.messaging.send import Sender, SendService, Sent

_INT_FIELDS = ("defaultTopicQueueNums", "queueId", "sysFlag", "flag", "reconsumeTimes", "maxReconsumeTimes")
_LONG_FIELDS = ("bornTimestamp",)


def _batch_flag(request: RemotingCommand) -> bool:
    """The C++ client (rocketmq-client-cpp) sends a batch as SEND_MESSAGE with ``batch`` "1", which
    Java's Boolean.parseBoolean would read as false: accept "1" as well as "true"."""
    raw = (request.ext_fields or {}).get("batch" if request.code == RequestCode.SEND_MESSAGE else "m")
    return raw is not None and str(raw).strip().lower() in ("1", "true")


class SendProcessor:
    def __init__(self, sends: SendService, config: BrokerConfig) -> None:
        self.sends = sends
        self.config = config

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.SEND_MESSAGE: self.send,
            RequestCode.SEND_MESSAGE_V2: self.send,
            RequestCode.SEND_BATCH_MESSAGE: self.send,
        }

    async def send(self, request: RemotingCommand, channel: Sender) -> RemotingCommand:
        arrived = time.monotonic()
        if request.code == RequestCode.SEND_MESSAGE:
            header = SendMessageRequestHeader.parse(request.ext_fields)
        else:  # V2 names its fields a..n: check them in that form so an error names what was sent
            header = SendMessageRequestHeaderV2.parse_v1(request.ext_fields)
        problem = range_problem(header, _INT_FIELDS, _LONG_FIELDS)
        if problem:
            return make_response(request, ResponseCode.INVALID_PARAMETER, problem)
        batch = request.code == RequestCode.SEND_BATCH_MESSAGE or bool(header.batch) or _batch_flag(request)
        sent = await self.sends.put(header, request.body or b"", batch, channel, arrived)
        if sent.result is None:
            return make_response(request, sent.code, sent.remark)
        return self._response(request, sent)

    def _response(self, request: RemotingCommand, sent: Sent) -> RemotingCommand:
        """The answer names the queue the producer addressed, even when a delay parked the message."""
        result, msgs = sent.result, sent.msgs
        assert result is not None
        header = SendMessageResponseHeader(
            msgId=",".join(result.msg_ids),
            queueId=sent.queue_id,
            queueOffset=result.queue_offsets[0],
            transactionId=msgs[0].properties.get(P.UNIQ_KEY) if len(msgs) == 1 else None,
            recallHandle=self.sends.recall_handle(msgs),
        )
        response = make_response(request, sent.code, result.remark or None, header=header)
        cfg = self.config
        response.ext_fields[P.MSG_REGION] = cfg.region_id
        response.ext_fields[P.TRACE_ON] = "true" if cfg.trace_on else "false"
        return response
