"""SendMessage of the gRPC API: v2 messages into the broker's send processor.

Each message becomes a SEND_MESSAGE header built here (not extFields to be decoded again) and goes
through :meth:`broker.server.messaging.send.SendService.put`, so checks, delay and timer
routing, transaction half messages, flow control and statistics are the remoting ones. It is the
busiest RPC, so this module is compiled by ``make install``.
"""

from __future__ import annotations

import random
import time
from typing import Any, Final

from broker.grpc import convert
from broker.grpc.clients import Session
from broker.grpc.schema import PB, CallContext, Code, GrpcError
from broker.protocol import properties as P
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import SendMessageRequestHeader
from broker.protocol.message import TRANSACTION_PREPARED_TYPE
from broker.protocol.names import is_group_topic
from broker.server.message_type import (
    MESSAGE_TYPE_ATTRIBUTE,
    TopicMessageType,
    sent_message_type,
    topic_message_type,
)
from broker.server.messaging.send import SendService
from broker.server.stats import BrokerStats
from broker.server.topic_config import DEFAULT_TOPIC

# read once: each lookup through the generated enum wrapper is a Python-level call, twice a message
_OK: Final = PB.Code.OK
REMOTING_CODES: Final[dict[int, Code]] = {
    ResponseCode.SUCCESS: Code.OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: Code.MASTER_PERSISTENCE_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: Code.SLAVE_PERSISTENCE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: Code.HA_NOT_AVAILABLE,
    ResponseCode.TOPIC_NOT_EXIST: Code.TOPIC_NOT_FOUND,
    ResponseCode.NO_PERMISSION: Code.FORBIDDEN,
    ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS,
    ResponseCode.MESSAGE_ILLEGAL: Code.BAD_REQUEST,
    ResponseCode.INVALID_PARAMETER: Code.BAD_REQUEST,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: Code.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.SUBSCRIPTION_PARSE_FAILED: Code.ILLEGAL_FILTER_EXPRESSION,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: Code.NOT_IMPLEMENTED,
}


def code_of(remoting_code: int) -> Code:
    return REMOTING_CODES.get(remoting_code, Code.INTERNAL_SERVER_ERROR)


def encode_transaction_id(commit_log_offset: int, queue_offset: int, transaction_id: str) -> str:
    return f"{commit_log_offset}:{queue_offset}:{transaction_id}"


class SendRpc:
    """``service`` is the :class:`broker.grpc.service.MessagingService` (sessions, topics, broker)."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.broker: Any = service.broker
        self.sends: SendService = service.broker.messaging.sends  # typed: called natively
        self.stats: BrokerStats = service.broker.stats

    async def send_message(
        self, request: PB.SendMessageRequest, context: CallContext
    ) -> PB.SendMessageResponse:
        session = self.service._session(context)
        messages = request.messages
        if not messages:
            raise GrpcError(Code.BAD_REQUEST, "the request holds no message")
        if len(messages) > 1 and len({m.topic.name for m in messages}) != 1:
            raise GrpcError(Code.BAD_REQUEST, "all messages of one request must go to one topic")
        response = PB.SendMessageResponse()
        entries = response.entries
        first: PB.Code.ValueType | None = None  # the first entry's code, and whether another one differs
        mixed = False
        for msg in messages:  # each entry is filled where it lies: no message built to be copied
            entry = entries.add()
            code = _OK
            try:
                await self._send_one(msg, session, entry)
            except GrpcError as exc:
                entry.Clear()
                entry.status.code = code = PB.Code.ValueType(exc.code)
                entry.status.message = exc.message
            if first is None:
                first = code
            mixed = mixed or code != first
        if not mixed:
            response.status.CopyFrom(entries[0].status)
        else:
            response.status.code = PB.Code.MULTIPLE_RESULTS
            response.status.message = "the messages have different results"
        return response

    def _check_type(self, config: Any, props: dict[str, str]) -> None:
        """A message must be of its topic's ``message.type`` (MIXED takes any), as RocketMQ's proxy checks
        before a send; retry and dead-letter topics and transferred messages are not checked. A topic
        without the attribute (or UNSPECIFIED) takes any type."""
        if not self.broker.config.enable_topic_message_type_check or P.TRANSFER_FLAG in props:
            return
        if MESSAGE_TYPE_ATTRIBUTE not in (config.attributes or {}):
            return
        if is_group_topic(config.topicName):
            return
        expected = topic_message_type(config)
        if expected in (TopicMessageType.UNSPECIFIED, TopicMessageType.MIXED):
            return
        actual = sent_message_type(props)
        if actual is not expected:
            raise GrpcError(
                Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                f"TopicMessageType validate failed, the expected type is {expected.value}, "
                f"but actual type is {actual.value}",
            )

    async def _send_one(self, msg: PB.Message, session: Session, entry: PB.SendResultEntry) -> None:
        """Sends one message and fills in its SendResultEntry; GrpcError when it is refused."""
        broker = self.broker
        config = self.service._topic(msg.topic.name)
        body = msg.body
        props = convert.properties_of(msg, body, broker.store_config.max_message_size)
        self._check_type(config, props)
        transactional = props.get(P.TRAN_MSG) == "true"
        if transactional:
            if RequestCode.END_TRANSACTION not in broker.handlers:
                raise GrpcError(
                    Code.UNSUPPORTED, "transactional messages need the broker's transaction service"
                )
            props.setdefault(P.PGROUP, config.topicName)
        sp = msg.system_properties
        queues = max(1, int(config.writeQueueNums))
        queue_id = int(sp.queue_id)
        if not 0 <= queue_id < queues:
            queue_id = random.randrange(queues)
        born = convert.timestamp_ms(sp.born_timestamp) if sp.HasField("born_timestamp") else 0
        if not 0 < born < 1 << 62:
            born = int(time.time() * 1000)
        header = SendMessageRequestHeader(
            producerGroup=props.get(P.PGROUP, config.topicName),
            topic=config.topicName,
            defaultTopic=DEFAULT_TOPIC,
            defaultTopicQueueNums=broker.config.default_topic_queue_nums,
            queueId=queue_id,
            sysFlag=TRANSACTION_PREPARED_TYPE if transactional else 0,
            bornTimestamp=born,
            flag=0,
            properties=P.encode_properties(props),
            reconsumeTimes=0,
            unitMode=False,
            batch=False,
        )
        started = time.monotonic()
        sent = await self.sends.put(header, body, False, session.channel, started, props)
        self.stats.record_latency(RequestCode.SEND_MESSAGE, time.monotonic() - started)
        code = code_of(sent.code)
        if code is not Code.OK or sent.result is None:
            raise GrpcError(code, sent.remark or f"send failed with code {sent.code}")
        offset = sent.result.queue_offsets[0]
        status = entry.status
        status.code = _OK
        status.message = "OK"
        entry.message_id = props[P.UNIQ_KEY]
        entry.offset = offset
        recall = self.sends.recall_handle(sent.msgs)
        if recall:  # parked in the timer queue
            entry.recall_handle = recall
        if transactional:  # where the half message is, for EndTransaction to find it
            entry.transaction_id = encode_transaction_id(sent.result.offsets[0], offset, props[P.UNIQ_KEY])
