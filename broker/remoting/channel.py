"""One remoting connection, used by both ends, and the request-code dispatch behind it.

A :class:`RemotingChannel` is one TCP connection speaking frames in both directions: it correlates
responses to its own requests by opaque and hands incoming requests to a :class:`RequestDispatcher`.
Servers (``broker.remoting.server``) and the client pool (``broker.remoting.client``) both use it,
because brokers also send requests (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED) over
connections clients opened, and clients answer requests exactly as servers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections import deque
from collections.abc import Awaitable, Callable
from typing import cast

from broker.protocol.codes import ResponseCode, SerializeType, name_of
from broker.protocol.remoting import (
    LENIENT_HEADER_LIMIT,
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    FrameDecoder,
    ProtocolError,
    RemotingCommand,
    encode_frame,
    make_response,
)
from broker.remoting.errors import RemotingClosedError, RemotingTimeoutError

log = logging.getLogger(__name__)

Handler = Callable[[RemotingCommand, "RemotingChannel"], Awaitable[RemotingCommand | None]]
"""Answers one request code: the response, or None for none (one-way) or one sent later."""

RpcHook = Callable[[RemotingCommand], None]
"""Runs on each request a channel sends, just before it goes out (ACL signing)."""

DEFAULT_MAX_INFLIGHT = 64  # concurrent handlers per connection before we stop reading from it


class RequestDispatcher:
    """Request code -> async handler, with RocketMQ's answers for unknown codes and failures."""

    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}

    def register(self, code: int, handler: Handler) -> None:
        self._handlers[code] = handler

    def handler(self, code: int) -> Handler | None:
        return self._handlers.get(code)


def wake(waiters: list[asyncio.Future[None]], error: Exception | None) -> None:
    """Resolves every writer waiting for room: with None to go on, or with ``error`` to give up."""
    for waiter in waiters:
        if not waiter.done():
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error)


class RemotingChannel(asyncio.Protocol):
    """One connection as an asyncio protocol: frames are decoded as the bytes arrive, responses
    complete their invocations by opaque, requests run as handler tasks, at most ``max_inflight`` at
    once (beyond that the channel stops reading: back-pressure)."""

    def __init__(
        self,
        dispatcher: RequestDispatcher,
        *,
        serialize_type: SerializeType = SerializeType.JSON,
        idle_timeout: float | None = None,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        on_open: Callable[[RemotingChannel], None] | None = None,
        on_close: Callable[[RemotingChannel], None] | None = None,
        lenient_header_limit: int = LENIENT_HEADER_LIMIT,
    ) -> None:
        self._dispatcher = dispatcher
        self.serialize_type = serialize_type
        self._idle_timeout = idle_timeout
        self._max_inflight = max_inflight
        self._on_open = on_open
        self._on_close = on_close
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._decoder = FrameDecoder(lenient_limit=lenient_header_limit)
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._backlog: deque[RemotingCommand] = deque()  # requests read while max_inflight were running
        self._outgoing: list[bytes] = []  # frame parts waiting for the flush scheduled in this loop turn
        self._write_paused = False
        self._writable: list[asyncio.Future[None]] = []  # senders waiting for the socket buffer to drain
        self._reading = True  # False once shutdown() stopped taking requests
        self._last_activity = self._loop.time()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._closed = asyncio.Event()  # for waiters; the hot paths read the plain flag beside it
        self._is_closed = False
        self._lost = self._loop.create_future()  # the transport is gone
        self.rpc_hook: RpcHook | None = None  # runs on each request (ACL signing)
        self.remote_addr = "?"

    # == asyncio.Protocol ======================================================================
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        peer = transport.get_extra_info("peername")
        self.remote_addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._idle_timeout is not None:
            self._idle_timer = self._loop.call_later(self._idle_timeout, self._check_idle)
        if self._on_open is not None:
            self._on_open(self)

    def data_received(self, data: bytes) -> None:
        if self._is_closed or not self._reading:
            return
        self._last_activity = self._loop.time()
        try:
            for cmd in self._decoder.feed(data):
                if cmd.is_response:
                    self._complete(cmd)
                elif self._backlog or len(self._handlers) >= self._max_inflight:
                    self._backlog.append(cmd)
                else:
                    self._start_handler(cmd)
        except ProtocolError as exc:
            log.warning("closing connection %s: malformed frame: %s", self.remote_addr, exc)
            self.close()
            return
        if self._backlog and self._transport is not None:
            self._transport.pause_reading()  # too many handlers running: stop reading

    def eof_received(self) -> bool | None:
        return None  # close the transport; handlers already running still finish (see close())

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.debug("connection %s lost: %s", self.remote_addr, exc)
        self.close()
        if not self._lost.done():
            self._lost.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_writers(None)

    # == sending ===============================================================================
    @property
    def is_closed(self) -> bool:
        return self._is_closed

    async def send(self, cmd: RemotingCommand) -> None:
        """Queue one frame for this loop turn's write; wait while the socket buffer is full."""
        self._queue(encode_frame(cmd, self.serialize_type))
        if self._write_paused:
            await self._wait_writable()

    def _queue(self, frame: tuple[bytes, bytes]) -> None:
        if self._is_closed:
            raise RemotingClosedError(self.remote_addr)
        if not self._outgoing:
            self._loop.call_soon(self._flush)
        head, body = frame
        self._outgoing.append(head)
        if body:
            self._outgoing.append(body)
        self._last_activity = self._loop.time()

    def _flush(self) -> None:
        """Write every frame queued since the last flush at once: one send syscall, not one per frame."""
        frames, self._outgoing = self._outgoing, []
        if frames and self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(frames)

    async def _wait_writable(self) -> None:
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._writable.append(waiter)
        await waiter

    def _wake_writers(self, error: Exception | None) -> None:
        waiters, self._writable = self._writable, []
        wake(waiters, error)

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request and wait for the response with the same opaque."""
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        frame = encode_frame(request, self.serialize_type)
        future: asyncio.Future[RemotingCommand] = self._loop.create_future()
        opaque = request.opaque
        self._pending[opaque] = future
        timer = self._loop.call_later(timeout, _expire, future, self.remote_addr, request.code, timeout)
        try:
            self._queue(frame)
            return await future  # a full socket buffer delays the answer; the timer bounds both
        finally:
            timer.cancel()
            if self._pending.get(opaque) is future:
                del self._pending[opaque]

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        request.flag |= ONEWAY_FLAG
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        await self.send(request)

    # == lifecycle =============================================================================
    def close(self) -> None:
        """Close now: pending invocations fail. Running handlers are left to finish their work (a
        store write must not be cut in half); their answers have nowhere to go and are dropped."""
        if self._is_closed:
            return
        self._is_closed = True
        self._closed.set()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._backlog.clear()
        closed = RemotingClosedError(self.remote_addr)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(closed)
        self._wake_writers(closed)
        self._flush()  # frames already queued still go out before the connection closes
        if self._transport is not None:
            self._transport.close()
        elif not self._lost.done():
            self._lost.set_result(None)
        if self._on_close is not None:
            self._on_close(self)

    async def wait_closed(self) -> None:
        await self._closed.wait()
        await self._lost

    async def shutdown(self, grace: float) -> None:
        """Stop reading, let running handlers finish (up to ``grace`` seconds, then cancel), close."""
        self._reading = False
        self._backlog.clear()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()
        if self._handlers:
            _, late = await asyncio.wait(set(self._handlers), timeout=grace)
            for task in late:
                task.cancel()
        self.close()
        await self.wait_closed()

    def _check_idle(self) -> None:
        """Close once nothing moved either way for the idle time."""
        assert self._idle_timeout is not None
        due = self._last_activity + self._idle_timeout
        if self._loop.time() >= due:
            log.info("closing connection %s: idle for %g s", self.remote_addr, self._idle_timeout)
            self.close()
        else:
            self._idle_timer = self._loop.call_at(due, self._check_idle)

    # == receiving =============================================================================
    def _complete(self, response: RemotingCommand) -> None:
        future = self._pending.get(response.opaque)
        if future is None or future.done():
            log.debug("response with unknown opaque %d from %s dropped", response.opaque, self.remote_addr)
        else:
            future.set_result(response)

    def _start_handler(self, request: RemotingCommand) -> None:
        task = self._loop.create_task(self._handle(request))
        self._handlers.add(task)
        task.add_done_callback(self._handler_done)

    def _handler_done(self, task: asyncio.Task[None]) -> None:
        self._handlers.discard(task)
        if not self._backlog or not self._reading:
            return
        while self._backlog and len(self._handlers) < self._max_inflight:
            self._start_handler(self._backlog.popleft())
        if not self._backlog and not self._is_closed and self._transport is not None:
            self._transport.resume_reading()

    async def _handle(self, request: RemotingCommand) -> None:
        # the dispatch and the answer's write inline, not as coroutines of their own: a request's
        # await chain is one level shorter
        handler = self._dispatcher.handler(request.code)
        response: RemotingCommand | None
        if handler is None:
            response = make_response(
                request,
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                f" request type {request.code} not supported",
            )
        else:
            try:
                response = await handler(request, self)
            except Exception as exc:  # a failing handler answers SYSTEM_ERROR; the connection lives on
                log.exception("handler for %s from %s failed", name_of(request.code), self.remote_addr)
                response = make_response(request, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if response is None or request.is_oneway:
            return
        response.opaque = request.opaque
        response.flag |= RESPONSE_FLAG
        try:
            try:
                frame = encode_frame(response, self.serialize_type)
            except ProtocolError as exc:  # e.g. a body beyond the frame limit
                log.error("cannot encode response to %s: %s", name_of(request.code), exc)
                frame = encode_frame(
                    make_response(request, ResponseCode.SYSTEM_ERROR, str(exc)), self.serialize_type
                )
            self._queue(frame)
            if self._write_paused:
                await self._wait_writable()
        except RemotingClosedError:
            pass  # the peer went away; nobody is left to answer


def _expire(future: asyncio.Future[RemotingCommand], addr: str, code: int, timeout: float) -> None:
    if not future.done():
        future.set_exception(RemotingTimeoutError(addr, code, timeout))
