"""The load generator's interface, and its implementation on the low-level remoting client.

The runner only needs two operations: send one message or one batch to a queue, and pull one batch
from a queue at an offset. :class:`RemotingLoad` does them with hand-built SEND_MESSAGE_V2 /
SEND_BATCH_MESSAGE / PULL_MESSAGE requests over :class:`RemotingClient`
(:class:`~admin.bench.sdk_load.SdkLoad` does them with the SDK). Request headers are rendered once per
queue, so the load generator spends its time on the wire, not on building headers. Each message
carries its own UNIQ_KEY, as every RocketMQ producer sends it (the broker makes one only for a
message that lacks it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from broker.client.remoting_client import RemotingClient
from broker.protocol import properties as message_properties
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2
from broker.protocol.message import BatchItem, encode_batch
from broker.protocol.msgid import UniqKeyGenerator
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import RemotingCommand, next_opaque

PRODUCER_GROUP = "rmq_bench_producer"
CONSUMER_GROUP = "rmq_bench_consumer"
_PULL_SUBSCRIPTION = 0x4  # sysFlag: the subscription travels in the request; no heartbeat needed


@dataclass(frozen=True, slots=True)
class QueueRef:
    """One queue of the topic on one broker."""

    addr: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class Pulled:
    """What one pull brought: messages, body bytes, and where the next pull of the queue starts."""

    messages: int
    nbytes: int
    next_offset: int


class RequestFailed(Exception):
    """The server answered with an error code; the run counts it and goes on."""


class Load(Protocol):
    """What the runner drives. ``conn`` picks one of the load's connections (0-based)."""

    @property
    def batch(self) -> int:
        """Messages per :meth:`send`."""
        ...

    async def send(self, conn: int, queue: QueueRef) -> None:
        """Send one message (or one batch of :attr:`batch`) and wait for the answer."""
        ...

    async def pull(self, conn: int, queue: QueueRef, offset: int, max_nums: int) -> Pulled:
        """Pull up to ``max_nums`` messages from ``offset`` (never suspended by the broker)."""
        ...

    async def close(self) -> None: ...


class RemotingLoad:
    """:class:`Load` over ``connections`` remoting clients (one TCP connection per broker each)."""

    def __init__(self, topic: str, *, connections: int, size: int, batch: int, timeout: float = 5.0) -> None:
        self.topic = topic
        self._batch = batch
        self._timeout = timeout
        self._clients = [RemotingClient() for _ in range(connections)]
        self._body = (b"0123456789abcdef" * (size // 16 + 1))[:size]
        self._code = RequestCode.SEND_BATCH_MESSAGE if batch > 1 else RequestCode.SEND_MESSAGE_V2
        self._ids = UniqKeyGenerator()
        self._send_ext: dict[int, dict[str, str]] = {}
        self._pull_ext: dict[int, dict[str, str]] = {}

    @property
    def batch(self) -> int:
        return self._batch

    def _send_fields(self, queue_id: int) -> dict[str, str]:
        ext = self._send_ext.get(queue_id)
        if ext is None:
            header = SendMessageRequestHeaderV2(
                a=PRODUCER_GROUP,
                b=self.topic,
                c="TBW102",
                d=4,
                e=queue_id,
                f=0,
                g=0,
                h=0,
                i=encode_properties({message_properties.WAIT: "true"})
                if self._batch > 1
                else None,  # a batch's own
                j=0,
                k=False,
                m=self._batch > 1 or None,
            )
            ext = self._send_ext[queue_id] = header.to_ext_fields()
        return ext

    def _props(self) -> str:
        return encode_properties(
            {message_properties.WAIT: "true", message_properties.UNIQ_KEY: self._ids.next()}
        )

    async def send(self, conn: int, queue: QueueRef) -> None:
        ext = dict(self._send_fields(queue.queue_id))
        ext["g"] = str(int(time.time() * 1000))
        if self._batch > 1:
            body = encode_batch([BatchItem(0, self._body, self._props()) for _ in range(self._batch)])
        else:
            body = self._body
            ext["i"] = self._props()
        request = RemotingCommand(self._code, opaque=next_opaque(), ext_fields=ext, body=body)
        response = await self._clients[conn].invoke(queue.addr, request, self._timeout)
        if response.code != ResponseCode.SUCCESS:
            raise RequestFailed(f"send answered {response.code}: {response.remark or 'no remark'}")

    async def pull(self, conn: int, queue: QueueRef, offset: int, max_nums: int) -> Pulled:
        ext = self._pull_ext.get(queue.queue_id)
        if ext is None:
            header = PullMessageRequestHeader(
                consumerGroup=CONSUMER_GROUP, topic=self.topic, queueId=queue.queue_id, queueOffset=0,
                maxMsgNums=max_nums, sysFlag=_PULL_SUBSCRIPTION, commitOffset=0, suspendTimeoutMillis=0,
                subVersion=0, subscription="*", expressionType="TAG",
            )  # fmt: skip
            ext = self._pull_ext[queue.queue_id] = header.to_ext_fields()
        ext = dict(ext)
        ext["queueOffset"] = str(offset)
        ext["maxMsgNums"] = str(max_nums)
        request = RemotingCommand(RequestCode.PULL_MESSAGE, opaque=next_opaque(), ext_fields=ext)
        response = await self._clients[conn].invoke(queue.addr, request, self._timeout)
        if response.code == ResponseCode.SUCCESS:
            next_offset = int(response.ext_fields.get("nextBeginOffset", offset))
            return Pulled(next_offset - offset, len(response.body or b""), next_offset)
        if response.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
            return Pulled(0, 0, offset)
        raise RequestFailed(f"pull answered {response.code}: {response.remark or 'no remark'}")

    async def close(self) -> None:
        for client in self._clients:
            await client.close()
