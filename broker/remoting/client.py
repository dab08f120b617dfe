"""The client side's connection pool: one multiplexed channel per "host:port", opened on first use."""

from __future__ import annotations

import asyncio
import ssl

from broker.protocol.codes import SerializeType
from broker.protocol.remoting import RemotingCommand
from broker.remoting.channel import Handler, RemotingChannel, RequestDispatcher, RpcHook
from broker.remoting.errors import RemotingConnectError


def _split_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise RemotingConnectError(addr, "address must be host:port")
    return host.strip("[]"), int(port)


class RemotingClient:
    """Connections keyed by "host:port", one multiplexed channel each, opened on first use."""

    def __init__(
        self,
        *,
        connect_timeout: float = 3.0,
        serialize_type: SerializeType = SerializeType.JSON,
        idle_timeout: float | None = None,
        rpc_hook: RpcHook | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._connect_timeout = connect_timeout
        self._serialize_type = serialize_type
        self._idle_timeout = idle_timeout
        self.rpc_hook = rpc_hook  # called on every request just before it is sent (ACL signing)
        self.ssl_context = ssl_context  # connect with TLS (both apply to connections opened later)
        self._dispatcher = RequestDispatcher()
        self._channels: dict[str, RemotingChannel] = {}
        self._connecting: dict[str, asyncio.Lock] = {}

    def register(self, code: int, handler: Handler) -> None:
        """Handle requests the server sends us (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE…)."""
        self._dispatcher.register(code, handler)

    async def channel(self, addr: str) -> RemotingChannel:
        channel = self._channels.get(addr)
        if channel is not None and not channel.is_closed:
            return channel
        async with self._connecting.setdefault(addr, asyncio.Lock()):
            channel = self._channels.get(addr)
            if channel is None or channel.is_closed:
                channel = self._channels[addr] = await self._connect(addr)
            return channel

    async def _connect(self, addr: str) -> RemotingChannel:
        host, port = _split_addr(addr)

        def make() -> RemotingChannel:
            return RemotingChannel(
                self._dispatcher,
                serialize_type=self._serialize_type,
                idle_timeout=self._idle_timeout,
                on_close=lambda ch: self._forget(addr, ch),
            )

        try:
            async with asyncio.timeout(self._connect_timeout):
                _, channel = await asyncio.get_running_loop().create_connection(
                    make, host, port, ssl=self.ssl_context
                )
        except TimeoutError:
            raise RemotingConnectError(addr, f"timed out after {self._connect_timeout:g} s") from None
        except OSError as exc:
            raise RemotingConnectError(addr, exc.strerror or str(exc)) from None
        channel.rpc_hook = self.rpc_hook
        return channel

    def _forget(self, addr: str, channel: RemotingChannel) -> None:
        if self._channels.get(addr) is channel:
            del self._channels[addr]

    async def invoke(self, addr: str, request: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        channel = await self.channel(addr)
        return await channel.invoke(request, timeout)

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        channel = await self.channel(addr)
        await channel.invoke_oneway(request)

    async def close(self) -> None:
        channels = list(self._channels.values())
        for channel in channels:
            channel.close()
        for channel in channels:
            await channel.wait_closed()
