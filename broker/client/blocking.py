"""Blocking facades for scripts: the asyncio clients run on a private event loop in a background thread.

with BlockingProducer("g", "127.0.0.1:9876") as producer:
    producer.send(Message("T", b"hi", tags="a"))
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, Generic, Protocol, Self, TypeVar

from broker.client.consumer import ConsumeConcurrentlyStatus, ConsumeOrderlyStatus, PushConsumer
from broker.client.lite_consumer import LitePullConsumer
from broker.client.message import Message, MessageExt, SendResult
from broker.client.producer import Producer
from broker.client.simple_consumer import SimpleConsumer
from broker.protocol.bodies import MessageQueue

T = TypeVar("T")


class _AsyncClient(Protocol):
    async def start(self) -> None: ...

    async def shutdown(self) -> None: ...


C = TypeVar("C", bound=_AsyncClient)


class _LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class _Blocking(Generic[C]):
    def __init__(self, build: Callable[[], C], name: str) -> None:
        self._thread = _LoopThread(name)
        self.client = self._in_loop(build)  # built on its loop, where its asyncio objects live

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._thread.run(coro)

    def _in_loop(self, fn: Callable[[], T]) -> T:
        """Call a plain function on the loop thread (asyncio objects are not thread-safe)."""

        async def call() -> T:
            return fn()

        return self._run(call())

    def start(self) -> None:
        self._run(self.client.start())

    def shutdown(self) -> None:
        try:
            self._run(self.client.shutdown())
        finally:
            self._thread.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class BlockingProducer(_Blocking[Producer]):
    """:class:`Producer` with blocking methods; takes the same arguments."""

    def __init__(self, group: str, namesrv_addr: str, **kwargs: Any) -> None:
        super().__init__(lambda: Producer(group, namesrv_addr, **kwargs), f"producer-{group}")

    def send(self, msg: Message, **kwargs: Any) -> SendResult:
        return self._run(self.client.send(msg, **kwargs))

    def send_oneway(self, msg: Message, **kwargs: Any) -> None:
        self._run(self.client.send_oneway(msg, **kwargs))

    def send_batch(self, messages: Sequence[Message], **kwargs: Any) -> list[SendResult]:
        return self._run(self.client.send_batch(messages, **kwargs))


class _Subscriber(_AsyncClient, Protocol):
    def subscribe(self, topic: str, expression: str = "*") -> None: ...

    def unsubscribe(self, topic: str) -> None: ...


CB = TypeVar("CB", bound=_Subscriber)


class _BlockingConsumer(_Blocking[CB]):
    """What both consumers' facades share: subscriptions, changed on the client's loop."""

    def subscribe(self, topic: str, expression: str = "*") -> None:
        self._in_loop(lambda: self.client.subscribe(topic, expression))

    def unsubscribe(self, topic: str) -> None:
        self._in_loop(lambda: self.client.unsubscribe(topic))


class BlockingPushConsumer(_BlockingConsumer[PushConsumer]):
    """:class:`PushConsumer` for plain-function listeners (they run in its worker threads)."""

    def __init__(self, group: str, namesrv_addr: str, **kwargs: Any) -> None:
        super().__init__(lambda: PushConsumer(group, namesrv_addr, **kwargs), f"consumer-{group}")

    def register_message_listener_concurrently(
        self, listener: Callable[[list[MessageExt]], ConsumeConcurrentlyStatus]
    ) -> None:
        self.client.register_message_listener_concurrently(listener)

    def register_message_listener_orderly(
        self, listener: Callable[[list[MessageExt]], ConsumeOrderlyStatus]
    ) -> None:
        self.client.register_message_listener_orderly(listener)


class BlockingLitePullConsumer(_BlockingConsumer[LitePullConsumer]):
    """:class:`LitePullConsumer` with blocking methods."""

    def __init__(self, group: str, namesrv_addr: str, **kwargs: Any) -> None:
        super().__init__(lambda: LitePullConsumer(group, namesrv_addr, **kwargs), f"lite-consumer-{group}")

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        chosen = list(queues)
        self._in_loop(lambda: self.client.assign(chosen))

    def assignment(self) -> list[MessageQueue]:
        return self._in_loop(self.client.assignment)

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return self._run(self.client.fetch_message_queues(topic))

    def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        return self._run(self.client.poll(timeout))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        self._run(self.client.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        self._run(self.client.seek_to_begin(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        self._run(self.client.seek_to_end(mq))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return self._run(self.client.offset_for_timestamp(mq, timestamp_ms))

    def committed(self, mq: MessageQueue) -> int:
        return self._run(self.client.committed(mq))

    def commit(self) -> None:
        self._run(self.client.commit())

    def commit_sync(self, offsets: dict[MessageQueue, int], persist: bool = True) -> None:
        self._run(self.client.commit_sync(offsets, persist))


class BlockingSimpleConsumer(_BlockingConsumer[SimpleConsumer]):
    """:class:`SimpleConsumer` with blocking methods."""

    def __init__(self, group: str, namesrv_addr: str, **kwargs: Any) -> None:
        super().__init__(lambda: SimpleConsumer(group, namesrv_addr, **kwargs), f"simple-consumer-{group}")

    def receive(self, max_messages: int = 16, **kwargs: Any) -> list[MessageExt]:
        return self._run(self.client.receive(max_messages, **kwargs))

    def ack(self, message: MessageExt) -> None:
        self._run(self.client.ack(message))

    def change_invisible_duration(self, message: MessageExt, invisible_duration: float) -> None:
        self._run(self.client.change_invisible_duration(message, invisible_duration))
