"""asyncio remoting: one connection abstraction used by both ends, and the client's connection pool.

A :class:`RemotingChannel` is one TCP connection speaking frames in both directions: it correlates
responses to its own requests by opaque and hands incoming requests to a
:class:`RequestDispatcher`. The broker side (``broker.server.transport``) reuses it, because brokers
also send requests (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED) over connections clients
opened, and clients answer requests exactly as servers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable

from broker.protocol.codes import ResponseCode, SerializeType, name_of
from broker.protocol.remoting import (
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    FrameDecoder,
    ProtocolError,
    RemotingCommand,
    encode_command,
    make_response,
)

log = logging.getLogger(__name__)

Handler = Callable[[RemotingCommand, "RemotingChannel"], Awaitable[RemotingCommand | None]]

_READ_CHUNK = 64 * 1024
DEFAULT_MAX_INFLIGHT = 64  # concurrent handlers per connection before we stop reading from it


class RemotingError(Exception):
    """Base of the transport's failures."""


class RemotingConnectError(RemotingError):
    def __init__(self, addr: str, reason: str) -> None:
        super().__init__(f"connect to {addr} failed: {reason}")
        self.addr = addr


class RemotingTimeoutError(RemotingError):
    def __init__(self, addr: str, code: int, timeout: float) -> None:
        super().__init__(f"no response from {addr} to request {name_of(code)} within {timeout:g} s")
        self.addr = addr
        self.code = code
        self.timeout = timeout


class RemotingClosedError(RemotingError):
    def __init__(self, addr: str) -> None:
        super().__init__(f"connection to {addr} is closed")
        self.addr = addr


class RequestDispatcher:
    """Request code -> async handler, with RocketMQ's answers for unknown codes and failures."""

    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}

    def register(self, code: int, handler: Handler) -> None:
        self._handlers[code] = handler

    async def dispatch(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand | None:
        handler = self._handlers.get(request.code)
        if handler is None:
            return make_response(
                request,
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                f" request type {request.code} not supported",
            )
        try:
            return await handler(request, channel)
        except Exception as exc:  # a failing handler answers SYSTEM_ERROR; the connection lives on
            log.exception("handler for %s from %s failed", name_of(request.code), channel.remote_addr)
            return make_response(request, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")


class RemotingChannel:
    """One connection: a reader task, opaque-correlated invocations and bounded request handling."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        dispatcher: RequestDispatcher,
        *,
        serialize_type: SerializeType = SerializeType.JSON,
        idle_timeout: float | None = None,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        on_close: Callable[[RemotingChannel], None] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._dispatcher = dispatcher
        self.serialize_type = serialize_type
        self._idle_timeout = idle_timeout
        self._slots = asyncio.Semaphore(max_inflight)
        self._on_close = on_close
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._outgoing: list[bytes] = []  # frames waiting for the flush scheduled in this loop turn
        self._loop = asyncio.get_running_loop()
        self._last_activity = self._loop.time()
        self._closed = asyncio.Event()
        self.rpc_hook: Callable[[RemotingCommand], None] | None = None  # runs on each request (ACL signing)
        peer = writer.get_extra_info("peername")
        self.remote_addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._read_task = asyncio.create_task(self._read_loop(), name=f"remoting-read {self.remote_addr}")

    @property
    def is_closed(self) -> bool:
        return self._closed.is_set()

    async def send(self, cmd: RemotingCommand) -> None:
        """Queue one frame for this loop turn's write; wait while the socket buffer is full."""
        if self._closed.is_set() or self._writer.is_closing():
            raise RemotingClosedError(self.remote_addr)
        frame = encode_command(cmd, self.serialize_type)
        if not self._outgoing:
            self._loop.call_soon(self._flush)
        self._outgoing.append(frame)
        self._last_activity = self._loop.time()
        try:
            await self._writer.drain()
        except ConnectionError:
            self.close()
            raise RemotingClosedError(self.remote_addr) from None

    def _flush(self) -> None:
        """Write every frame queued since the last flush at once: one send syscall, not one per frame."""
        frames, self._outgoing = self._outgoing, []
        if frames and not self._writer.is_closing():
            self._writer.writelines(frames)

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request and wait for the response with the same opaque."""
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        future: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self._pending[request.opaque] = future
        try:
            async with asyncio.timeout(timeout):
                await self.send(request)
                return await future
        except TimeoutError:
            raise RemotingTimeoutError(self.remote_addr, request.code, timeout) from None
        finally:
            self._pending.pop(request.opaque, None)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        request.flag |= ONEWAY_FLAG
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        await self.send(request)

    def close(self) -> None:
        """Close now: pending invocations fail. Running handlers are left to finish their work (a
        store write must not be cut in half); their answers have nowhere to go and are dropped."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._read_task is not asyncio.current_task():
            self._read_task.cancel()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RemotingClosedError(self.remote_addr))
        self._flush()  # frames already queued still go out before the connection closes
        self._writer.close()
        if self._on_close is not None:
            self._on_close(self)

    async def wait_closed(self) -> None:
        await self._closed.wait()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()

    async def shutdown(self, grace: float) -> None:
        """Stop reading, let running handlers finish (up to ``grace`` seconds, then cancel), close."""
        self._read_task.cancel()
        if self._handlers:
            _, late = await asyncio.wait(set(self._handlers), timeout=grace)
            for task in late:
                task.cancel()
        self.close()
        await self.wait_closed()

    async def _read_loop(self) -> None:
        decoder = FrameDecoder()
        try:
            while True:
                data = await self._read_some()
                if not data:
                    return  # peer closed; handlers already running still finish (see close())
                for cmd in decoder.feed(data):
                    if cmd.is_response:
                        self._complete(cmd)
                    else:
                        await self._slots.acquire()  # too many handlers running: stop reading
                        task = asyncio.create_task(self._handle(cmd))
                        self._handlers.add(task)
                        task.add_done_callback(self._handlers.discard)
        except ProtocolError as exc:
            log.warning("closing connection %s: malformed frame: %s", self.remote_addr, exc)
        except ConnectionError as exc:
            log.debug("connection %s lost: %s", self.remote_addr, exc)
        except TimeoutError:
            log.info("closing connection %s: idle for %g s", self.remote_addr, self._idle_timeout)
        finally:
            current = asyncio.current_task()
            if current is None or not current.cancelling():  # cancelled means close() or shutdown() owns it
                self.close()

    async def _read_some(self) -> bytes:
        """The next chunk; raises TimeoutError once nothing moved either way for the idle time."""
        while True:
            if self._idle_timeout is None:
                return await self._reader.read(_READ_CHUNK)
            remaining = self._last_activity + self._idle_timeout - self._loop.time()
            if remaining <= 0:
                raise TimeoutError
            try:
                async with asyncio.timeout(remaining):
                    data = await self._reader.read(_READ_CHUNK)
            except TimeoutError:
                continue  # recheck: a write may have counted as activity meanwhile
            self._last_activity = self._loop.time()
            return data

    def _complete(self, response: RemotingCommand) -> None:
        future = self._pending.get(response.opaque)
        if future is None or future.done():
            log.debug("response with unknown opaque %d from %s dropped", response.opaque, self.remote_addr)
        else:
            future.set_result(response)

    async def _handle(self, request: RemotingCommand) -> None:
        try:
            response = await self._dispatcher.dispatch(request, self)
            if response is None or request.is_oneway:
                return
            response.opaque = request.opaque
            response.flag |= RESPONSE_FLAG
            try:
                await self.send(response)
            except ProtocolError as exc:  # e.g. a body beyond the frame limit
                log.error("cannot encode response to %s: %s", name_of(request.code), exc)
                await self.send(make_response(request, ResponseCode.SYSTEM_ERROR, str(exc)))
        except RemotingClosedError:
            pass  # the peer went away; nobody is left to answer
        finally:
            self._slots.release()


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
        rpc_hook: Callable[[RemotingCommand], None] | None = None,
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
        try:
            async with asyncio.timeout(self._connect_timeout):
                reader, writer = await asyncio.open_connection(host, port, ssl=self.ssl_context)
        except TimeoutError:
            raise RemotingConnectError(addr, f"timed out after {self._connect_timeout:g} s") from None
        except OSError as exc:
            raise RemotingConnectError(addr, exc.strerror or str(exc)) from None
        channel = RemotingChannel(
            reader,
            writer,
            self._dispatcher,
            serialize_type=self._serialize_type,
            idle_timeout=self._idle_timeout,
            on_close=lambda ch: self._forget(addr, ch),
        )
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
