"""The simple consumer: POP consumption over remoting, RocketMQ 5's SimpleConsumer model.

The broker keeps the group's progress, so there is no rebalancing and no offset to commit: each
``receive()`` pops a batch from one broker of a subscribed topic (brokers and topics take turns),
the messages stay invisible to the group for the invisible duration, and each one is acked once
processed. A message not acked in time is delivered again, with ``reconsume_times`` one higher; after
the group's ``retryMaxTimes`` it goes to the group's dead-letter topic. A message's receipt travels
in its POP_CK property; ``change_invisible_duration`` renews it.
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import TYPE_CHECKING, Self, Unpack

from broker.client.api import request
from broker.client.consume_stats import ConsumeStatsRecorder
from broker.client.consumer_base import ConsumeFrom, running_info_answer, running_properties
from broker.client.instance import ClientInstance
from broker.client.message import MessageExt, MQBrokerError, MQClientError
from broker.client.options import ClientKeywords, ClientOptions
from broker.client.pull import build_subscription
from broker.protocol import properties as message_properties
from broker.protocol import running_info as running_info_body
from broker.protocol.bodies import ConsumeType, MessageModel, MessageQueue
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData
from broker.protocol.message import scan_records
from broker.protocol.pop import (
    MAX_INVISIBLE_MS,
    MAX_POP_NUMS,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    Receipt,
    add_receipts,
    tag_strays,
)
from broker.protocol.route import subscribe_queues

if TYPE_CHECKING:
    from broker.protocol.group_bodies import SubscriptionData
    from broker.protocol.remoting import RemotingCommand
    from broker.remoting.channel import RemotingChannel

log = logging.getLogger(__name__)

DEFAULT_AWAIT = 20.0  # long polling of one receive, seconds
DEFAULT_INVISIBLE = 30.0
_INIT_MODE = {ConsumeFrom.FIRST_OFFSET: 0, ConsumeFrom.LAST_OFFSET: 1}
_EMPTY = (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND)


class SimpleConsumer:
    """``subscribe()``, ``start()``, then ``receive()`` and ``ack()`` each message.

    ``consume_from`` is where a group new to a queue starts: its end (LAST_OFFSET, which is its first
    message while the queue has lost none) or its first message still stored (FIRST_OFFSET).
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        await_duration: float = DEFAULT_AWAIT,
        consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET,
        options: ClientOptions | None = None,
        **client: Unpack[ClientKeywords],
    ) -> None:
        self.options = ClientOptions.of(options, client)
        if self.options.trace or self.options.trace_topic is not None:
            raise MQClientError("a simple consumer records no message traces")
        if consume_from not in _INIT_MODE:
            raise MQClientError("a simple consumer starts from the FIRST_OFFSET or the LAST_OFFSET")
        if await_duration < 0:
            raise MQClientError(f"the await duration {await_duration} s is negative")
        self.group = group
        self.namesrv_addr = namesrv_addr
        self.await_duration = await_duration
        self.consume_from = consume_from
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.instance = ClientInstance(namesrv_addr, self._heartbeat_data, self.options)
        self._turn = itertools.count()
        self._running = False
        self._started_ms = 0
        self.stats = ConsumeStatsRecorder()

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Receive ``topic`` messages whose tag matches ``"tagA || tagB"`` (or ``"*"``)."""
        self.subscriptions[topic] = build_subscription(topic, expression)
        if self._running:
            self.instance.spawn(self.instance.send_heartbeat(), "announce subscriptions")

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)

    def _heartbeat_data(self) -> HeartbeatData:
        consumer = ConsumerData(
            groupName=self.group,
            consumeType=ConsumeType.CONSUME_POP,
            messageModel=MessageModel.CLUSTERING,
            consumeFromWhere=self.consume_from.value,
            subscriptionDataSet=list(self.subscriptions.values()),
        )
        return HeartbeatData(clientID=self.client_id, consumerDataSet=[consumer])

    # ---- lifecycle

    async def start(self) -> None:
        self._started_ms = int(time.time() * 1000)
        self.instance.remoting.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_running_info)
        await self.instance.start()
        for topic in sorted(self.subscriptions):
            try:
                await self.instance.routes.refresh(topic)
            except MQClientError as exc:
                log.warning("no route for %s yet: %s", topic, exc)
        await self.instance.send_heartbeat()
        self._running = True

    async def shutdown(self) -> None:
        self._running = False
        await self.instance.close(consumer_group=self.group)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # ---- running info (GET_CONSUMER_RUNNING_INFO, asked by admin tools through a broker)

    def running_info(self) -> running_info_body.ConsumerRunningInfo:
        """This consumer as GET_CONSUMER_RUNNING_INFO reports it: settings, subscriptions and, per
        subscribed topic, receive (pull) and ack (consume) rates. It owns no queues."""
        settings = {
            "consumerGroup": self.group,
            "messageModel": MessageModel.CLUSTERING.name,
            "consumeFromWhere": self.consume_from.value.name,
            "awaitDuration": str(int(self.await_duration * 1000)),
            "namesrvAddr": self.namesrv_addr,
            "clientId": self.client_id,
        }
        return running_info_body.ConsumerRunningInfo(
            properties=running_properties(
                settings, ConsumeType.CONSUME_POP, self._started_ms, self.namesrv_addr
            ),
            subscriptionSet=list(self.subscriptions.values()),
            mqTable={},
            statusTable={topic: self.stats.status(topic) for topic in self.subscriptions},
        )

    async def _on_running_info(self, cmd: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        return running_info_answer(cmd, self.group, self.running_info)

    # ---- consuming

    async def receive(
        self,
        max_messages: int = 16,
        invisible_duration: float = DEFAULT_INVISIBLE,
        await_duration: float | None = None,
    ) -> list[MessageExt]:
        """Up to ``max_messages`` (1..32) messages, invisible to the group for ``invisible_duration``
        seconds; waits up to ``await_duration`` (default: the consumer's) for the first one, and
        returns an empty list when none came."""
        if not 0 < max_messages <= MAX_POP_NUMS:
            raise MQClientError(f"max_messages {max_messages} is not within 1..{MAX_POP_NUMS}")
        invisible_ms = int(invisible_duration * 1000)
        if not 0 < invisible_ms <= MAX_INVISIBLE_MS:
            raise MQClientError(f"the invisible duration {invisible_duration} s is not within 1 ms..12 h")
        wait_s = self.await_duration if await_duration is None else max(0.0, await_duration)
        mq = await self._next_target()
        subscription = self.subscriptions[mq.topic]
        header = PopMessageRequestHeader(
            consumerGroup=self.group,
            topic=mq.topic,
            queueId=-1,
            maxMsgNums=max_messages,
            invisibleTime=invisible_ms,
            pollTime=int(wait_s * 1000),
            bornTime=int(time.time() * 1000),
            initMode=_INIT_MODE[self.consume_from],
            expType=subscription.expressionType,
            exp=subscription.subString,
            bname=mq.brokerName,
        )
        addr = await self.instance.broker_addr(mq)
        api = self.instance.api
        started = time.monotonic()
        response = await api.invoke(
            addr, request(RequestCode.POP_MESSAGE, header), *_EMPTY, timeout=wait_s + api.timeout
        )
        if response.code != ResponseCode.SUCCESS or not response.body:
            self.stats.pulled(mq.topic, (time.monotonic() - started) * 1000, 0)
            return []
        try:
            messages = MessageExt.received(response.body, scan_records(response.body), mq.brokerName)
            answer = PopMessageResponseHeader.parse(response.ext_fields)
        except ValueError as exc:  # RecordError, HeaderFieldError
            raise MQClientError(f"undecodable POP answer from {mq.brokerName}: {exc}") from exc
        add_receipts(messages, answer, mq.brokerName)
        self.stats.pulled(mq.topic, (time.monotonic() - started) * 1000, len(messages))
        kept, strays = tag_strays(messages, set(subscription.tagsSet))
        for msg in strays:
            await self.ack(msg)
        return kept

    async def _next_target(self) -> MessageQueue:
        """The next subscribed topic and broker in turn, as a queue of that broker."""
        if not self.subscriptions:
            raise MQClientError("subscribe to a topic before receiving")
        targets: list[MessageQueue] = []
        for topic in sorted(self.subscriptions):
            route = await self.instance.routes.route(topic)
            brokers = sorted({mq.brokerName for mq in subscribe_queues(topic, route)} if route else set())
            targets += [MessageQueue(topic, name, -1) for name in brokers]
        if not targets:
            raise MQClientError(f"no broker serves the topics {sorted(self.subscriptions)}")
        return targets[next(self._turn) % len(targets)]

    async def ack(self, message: MessageExt) -> None:
        """Done with ``message``: it is not delivered again. An expired receipt (the message was
        redelivered meanwhile) raises :class:`MQBrokerError` with code NO_MESSAGE."""
        receipt, addr = await self._delivery(message)
        header = receipt.ack_header(self.group, message.topic)
        await self.instance.api.invoke(addr, request(RequestCode.ACK_MESSAGE, header))
        # its consume RT: from the broker handing the message out to its ack
        self.stats.consumed(message.topic, max(0, int(time.time() * 1000) - receipt.pop_time), 1, 0)

    async def change_invisible_duration(self, message: MessageExt, invisible_duration: float) -> None:
        """Keep ``message`` invisible for ``invisible_duration`` seconds from now (0: visible again
        at once); its receipt is renewed, so ack the message itself afterwards."""
        receipt, addr = await self._delivery(message)
        invisible_ms = int(invisible_duration * 1000)
        if not 0 <= invisible_ms <= MAX_INVISIBLE_MS:
            raise MQClientError(f"the invisible duration {invisible_duration} s is not within 0..12 h")
        header = ChangeInvisibleTimeRequestHeader(
            consumerGroup=self.group,
            topic=message.topic,
            queueId=receipt.queue_id,
            extraInfo=receipt.encode(),
            offset=receipt.offset,
            invisibleTime=invisible_ms,
            bname=receipt.broker_name,
        )
        response = await self.instance.api.invoke(
            addr, request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header)
        )
        try:
            answer = ChangeInvisibleTimeResponseHeader.parse(response.ext_fields)
        except ValueError as exc:
            raise MQBrokerError(
                response.code, f"malformed answer to a changed invisible time: {exc}"
            ) from exc
        message.properties[message_properties.POP_CK] = receipt.renewed(answer.popTime, invisible_ms).encode()

    async def _delivery(self, message: MessageExt) -> tuple[Receipt, str]:
        """The message's receipt and the address of the broker that handed it out."""
        receipt = self._receipt(message)
        mq = MessageQueue(message.topic, receipt.broker_name, receipt.queue_id)
        return receipt, await self.instance.broker_addr(mq)

    @staticmethod
    def _receipt(message: MessageExt) -> Receipt:
        text = message.properties.get(message_properties.POP_CK)
        if text is None:
            raise MQClientError(
                f"message {message.msg_id} has no receipt: it was not received by a SimpleConsumer"
            )
        try:
            return Receipt.decode(text)
        except ValueError as exc:
            raise MQClientError(f"message {message.msg_id}: {exc}") from None
