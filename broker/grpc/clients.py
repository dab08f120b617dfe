"""gRPC clients as the broker's client registry sees them.

Each client (identified by its ``x-mq-client-id`` metadata) gets a :class:`GrpcChannel`, an object with
the parts of a remoting connection the broker uses (``remote_addr``, ``invoke_oneway``, ``close``,
``wait_closed``). So gRPC producers and consumers show up in consumer-connection and producer
listings, expire like remoting clients, and a broker-side push such as CHECK_TRANSACTION_STATE reaches
a gRPC producer: the channel turns it into a RecoverOrphanedTransactionCommand on the client's
Telemetry stream (what RocketMQ's proxy does).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from broker.grpc.schema import PB
from broker.protocol.codes import ResponseCode
from broker.protocol.remoting import RemotingCommand, make_response

log = logging.getLogger(__name__)

CLIENT_TYPE_PRODUCER = 1
CLIENT_TYPE_PUSH_CONSUMER = 2
CLIENT_TYPE_SIMPLE_CONSUMER = 3
CLIENT_TYPE_PULL_CONSUMER = 4


class GrpcChannel:
    """A gRPC client standing in for a remoting connection (duck-typed RemotingChannel)."""

    def __init__(
        self,
        client_id: str,
        remote_addr: str,
        on_push: Callable[[GrpcChannel, RemotingCommand], bool],
        on_close: Callable[[GrpcChannel], None],
    ) -> None:
        self.client_id = client_id
        self.remote_addr = remote_addr
        self._on_push = on_push
        self._on_close = on_close
        self._closed = asyncio.Event()

    def __repr__(self) -> str:
        return f"GrpcChannel({self.client_id!r}, {self.remote_addr!r})"

    @property
    def is_closed(self) -> bool:
        return self._closed.is_set()

    async def send(self, cmd: RemotingCommand) -> None:
        self._on_push(self, cmd)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        self._on_push(self, request)

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        if self._on_push(self, request):
            return make_response(request)
        return make_response(request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "not supported over gRPC")

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._on_close(self)

    async def wait_closed(self) -> None:
        await self._closed.wait()


@dataclass(slots=True, eq=False)
class Session:
    """What the broker knows about one gRPC client."""

    client_id: str
    channel: GrpcChannel
    client_type: int = 0
    group: str | None = None
    topics: list[str] = field(default_factory=list)  # publishing topics
    subscriptions: dict[str, tuple[int, str]] = field(default_factory=dict)  # topic -> (type, expression)
    language: int = 0
    version: str = ""
    settings: PB.Settings | None = None  # the client's last Settings
    outbox: asyncio.Queue[PB.TelemetryCommand | None] | None = (
        None  # the Telemetry stream's outgoing commands
    )
    last_seen: float = field(default_factory=time.monotonic)

    @property
    def is_consumer(self) -> bool:
        return self.client_type in (
            CLIENT_TYPE_PUSH_CONSUMER,
            CLIENT_TYPE_SIMPLE_CONSUMER,
            CLIENT_TYPE_PULL_CONSUMER,
        )

    def push(self, command: PB.TelemetryCommand) -> bool:
        if self.outbox is None:
            return False
        self.outbox.put_nowait(command)
        return True
