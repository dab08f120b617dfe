"""The load generator on the client SDK (:mod:`broker.client`), to compare with :class:`RemotingLoad`.

Every send and pull goes through the SDK as an application would use it: a fresh :class:`Message` per
message, :meth:`Producer.send` to an explicit queue (or :meth:`Producer.send_batch`, which picks the
queue itself, round robin over the topic's write queues), and :func:`broker.client.pull.pull`, which
returns every pulled message as a :class:`MessageExt`, whose body is read. Compression is off so that
both clients put the same bytes on the wire. Pulls count message body bytes (the low-level client counts
response bytes).
"""

from __future__ import annotations

from admin.bench.load import CONSUMER_GROUP, PRODUCER_GROUP, Pulled, QueueRef, RequestFailed
from admin.errors import OperationFailed
from broker.client.api import ClientAPI
from broker.client.message import Message, MQClientError, SendResult, SendStatus
from broker.client.producer import MAX_MESSAGE_SIZE, Producer
from broker.client.pull import PullRequest, PullStatus, build_subscription, pull
from broker.client.remoting_client import RemotingClient
from broker.protocol.bodies import MessageQueue


class SdkLoad:
    """:class:`~admin.bench.load.Load` over ``connections`` SDK producers (sends) and pull clients.

    Build it with :meth:`open`, which starts the producers and learns the broker names from the route.
    """

    def __init__(
        self, topic: str, namesrv: list[str], *, connections: int, size: int, batch: int, timeout: float = 5.0
    ) -> None:
        if not namesrv:
            raise OperationFailed("the SDK needs a NameServer address")
        self.topic = topic
        self._batch = batch
        self._timeout = timeout
        self._body = (b"0123456789abcdef" * (size // 16 + 1))[:size]
        self._producers = [
            Producer(PRODUCER_GROUP, ";".join(namesrv), send_timeout=timeout,
                     compress_over=MAX_MESSAGE_SIZE + 1)
            for _ in range(connections)
        ]  # fmt: skip
        self._apis = [ClientAPI(RemotingClient(), timeout) for _ in range(connections)]
        self._namesrv = namesrv
        self._subscription = build_subscription(topic, "*")
        self._broker_names: dict[str, str] = {}
        self._queues: dict[QueueRef, MessageQueue] = {}

    @classmethod
    async def open(
        cls, topic: str, namesrv: list[str], *, connections: int, size: int, batch: int
    ) -> SdkLoad:
        """A started load; the topic must have a route."""
        load = cls(topic, namesrv, connections=connections, size=size, batch=batch)
        try:
            route = await load._apis[0].route(namesrv, topic)
        except MQClientError as exc:
            await load.close()
            raise OperationFailed(str(exc)) from None
        if route is None:
            await load.close()
            raise OperationFailed(f"topic {topic} has no route on {';'.join(namesrv)}")
        load._broker_names = {
            addr: b.brokerName for b in route.brokerDatas if b.brokerName for addr in b.brokerAddrs.values()
        }
        for producer in load._producers:
            await producer.start()
        return load

    @property
    def batch(self) -> int:
        return self._batch

    def _queue(self, ref: QueueRef) -> MessageQueue:
        mq = self._queues.get(ref)
        if mq is None:
            name = self._broker_names.get(ref.addr)
            if name is None:
                raise RequestFailed(f"{ref.addr} is not in the route of {self.topic}")
            mq = self._queues[ref] = MessageQueue(self.topic, name, ref.queue_id)
        return mq

    async def send(self, conn: int, queue: QueueRef) -> None:
        producer = self._producers[conn]
        try:
            if self._batch > 1:
                messages = [Message(self.topic, self._body) for _ in range(self._batch)]
                results = await producer.send_batch(messages)
            else:
                results = [await producer.send(Message(self.topic, self._body), queue=self._queue(queue))]
        except MQClientError as exc:
            raise RequestFailed(f"send failed: {exc}") from None
        _check(results)

    async def pull(self, conn: int, queue: QueueRef, offset: int, max_nums: int) -> Pulled:
        request = PullRequest(
            CONSUMER_GROUP, self._queue(queue), self._subscription, offset, max_nums,
            suspend_ms=0, timeout=self._timeout,
        )  # fmt: skip
        try:
            result = await pull(self._apis[conn], queue.addr, request)
        except MQClientError as exc:
            raise RequestFailed(f"pull failed: {exc}") from None
        if result.status is PullStatus.OFFSET_ILLEGAL:
            raise RequestFailed(f"pull answered OFFSET_ILLEGAL for offset {offset} of {request.mq}")
        if result.status is not PullStatus.FOUND:
            return Pulled(0, 0, offset)
        messages = result.messages
        return Pulled(len(messages), sum([len(m.body) for m in messages]), result.next_begin_offset)

    async def close(self) -> None:
        for producer in self._producers:
            await producer.shutdown()
        for api in self._apis:
            await api.remoting.close()


def _check(results: list[SendResult]) -> None:
    for result in results:
        if result.status is not SendStatus.SEND_OK:
            raise RequestFailed(f"send answered {result.status.value}")
