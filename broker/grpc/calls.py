"""gRPC calls over :mod:`broker.grpc.http2`: the broker's gRPC server.

It serves the handlers grpcio's server API describes (``grpc.RpcMethodHandler`` from a generic
handler, wrapped by ``grpc.aio.ServerInterceptor`` objects), on the broker's own event loop. Each call
is a :class:`Call`, which is also the servicer context the handlers see: ``invocation_metadata()``,
``peer()``, ``time_remaining()``, ``write()`` and ``abort()`` as in grpc.aio, and ``metadata_value()``
for one header without building the rest.

The protocol is gRPC over HTTP/2: a request is ``:method POST``, ``:path /Service/Method``,
``content-type: application/grpc``; each message has a 5-byte prefix (compressed flag and length);
the answer is a header block, the messages, and trailers with ``grpc-status`` and ``grpc-message``.
A call that breaks these rules is answered with the gRPC status grpcio would give.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import ssl
import struct
import time
import zlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn, cast

import grpc  # type: ignore[import-untyped,unused-ignore]

from broker.grpc.http2 import ConnectionLimits, Http2Connection, Stream
from broker.protocol.hpack_codec import RESPONSE_HEADERS, Header, literal
from broker.protocol.http2 import CANCEL, StreamState

log = logging.getLogger(__name__)

MAX_MESSAGE: Final = 16 * 1024 * 1024  # either way, as grpc.max_{receive,send}_message_length
# request messages of a connection's streams waiting for their handlers: their bytes are held against
# the connection window, and this bounds how many objects they are
MAX_QUEUED_MESSAGES: Final = 4096
MAX_STATUS_MESSAGE: Final = 4096
_TIMEOUT_UNITS: Final = {b"H": 3600.0, b"M": 60.0, b"S": 1.0, b"m": 1e-3, b"u": 1e-6, b"n": 1e-9}
_HIDDEN: Final = frozenset(
    {b"te", b"content-type", b"grpc-timeout", b"grpc-encoding", b"grpc-accept-encoding"}
)
_WBITS: Final = {b"gzip": 31, b"deflate": 15}  # zlib's window bits of each grpc-encoding
_END: Final = object()  # ends a request stream
_MESSAGE_HEAD: Final = struct.Struct(">BI")  # a gRPC message's compressed flag and length


Metadatum = tuple[str, str | bytes]  # bytes for the "-bin" names, as grpcio gives them


def _metadatum(name: bytes, value: bytes) -> Metadatum:
    key = name.decode("latin-1")
    if key.endswith("-bin"):  # base64, padding optional (gRPC over HTTP/2)
        try:
            return key, base64.b64decode(value + b"=" * (-len(value) % 4))
        except binascii.Error:
            return key, value
    return key, value.decode("utf-8", "replace")


class Abort(Exception):
    """Raised by :meth:`Call.abort`: the call ends with this status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


@dataclass(frozen=True, slots=True)
class CallDetails:
    """What interceptors and generic handlers look a call up by (grpc.HandlerCallDetails)."""

    method: str
    invocation_metadata: tuple[Metadatum, ...]


def _status_value(code: grpc.StatusCode) -> int:
    return int(code.value[0])


def _percent_encode(text: str) -> bytes:
    """grpc-message: UTF-8 with bytes outside printable ASCII and '%' as %XX, cut at a character so
    that it stays under MAX_STATUS_MESSAGE bytes (clients refuse trailers over 8 KiB)."""
    out = bytearray()
    for char in text:
        raw = char.encode("utf-8", "replace")
        coded = (
            raw
            if len(raw) == 1 and 0x20 <= raw[0] <= 0x7E and raw != b"%"
            else b"".join(b"%%%02X" % b for b in raw)
        )
        if len(out) + len(coded) > MAX_STATUS_MESSAGE:
            break
        out += coded
    return bytes(out)


def _status_block(code: grpc.StatusCode, details: str) -> bytes:
    block = literal(b"grpc-status", str(_status_value(code)).encode())
    return block + literal(b"grpc-message", _percent_encode(details)) if details else block


OK_TRAILERS: Final = _status_block(grpc.StatusCode.OK, "")


def _awaitable(value: object) -> bool:
    """``inspect.isawaitable`` without its ABC check, which a compiled handler's coroutine (not a
    CoroutineType) always reaches: a Python-level call per call."""
    return hasattr(type(value), "__await__")


def _timeout(value: bytes) -> float | None:
    """grpc-timeout: up to 8 digits and a unit."""
    unit = _TIMEOUT_UNITS.get(value[-1:])
    digits = value[:-1]
    if unit is None or not digits.isdigit() or len(digits) > 8:
        return None
    return int(digits) * unit


class Requests:
    """The request messages of a streaming call (or of one whose interceptors still run), waiting for
    its handler. Each holds its bytes against the connection window until the handler takes it, and
    a connection holds at most MAX_QUEUED_MESSAGES of them: a call that would pass that is ended."""

    def __init__(self, connection: Http2Connection) -> None:
        self.connection = connection
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.held: deque[int] = deque()  # the wire size of each queued message

    def put(self, message: bytes, size: int) -> bool:
        connection = self.connection
        if connection.queued_messages >= MAX_QUEUED_MESSAGES:
            return False
        connection.queued_messages += 1
        self.held.append(size)
        self.queue.put_nowait(message)
        return True

    def end(self) -> None:
        self.queue.put_nowait(_END)

    async def get(self) -> Any:
        item = await self.queue.get()
        if item is _END:
            self.queue.put_nowait(_END)  # ended for good
        elif self.held:
            self._release(1)
        return item

    def drop(self) -> None:
        """The call ended: what still waits is let go (and a handler still reading sees the end)."""
        self._release(len(self.held))
        queue = self.queue
        while not queue.empty():
            queue.get_nowait()
        queue.put_nowait(_END)

    def _release(self, count: int) -> None:
        held = self.held
        size = 0
        for _ in range(count):
            size += held.popleft()
        self.connection.queued_messages -= count
        if size:
            self.connection.consumed(size)


class Call(Stream):
    """One gRPC call on its stream, and the context its handler gets."""

    def __init__(self, server: NativeGrpcServer, connection: Http2Connection, state: StreamState) -> None:
        super().__init__(connection, state)
        self.server = server
        self.method = ""
        self.headers: list[Header] = []
        self.metadata: tuple[Metadatum, ...] | None = None  # built from the headers when first asked
        self.deadline: float | None = None
        self.wbits: int | bytes | None = None  # grpc-encoding: zlib's window bits, or what we lack
        self.handler: Any = None
        self.buffer = bytearray()
        self.request: bytes | None = None  # the one message of a unary request
        self.held = 0  # its wire size, held against the connection window until the handler runs
        self.requests: Requests | None = None  # the messages of a streaming request
        self.task: asyncio.Task[None] | None = None
        self.runner: Any = None  # what the task runs, and the answer it sends (see _spawn)
        self.answer: bytes | None = None
        self.started = False  # the handler runs, or waits for a place among the calls in flight
        self.in_flight = False  # the handler's task holds a place among them
        self.headers_sent = False
        self.finished = False

    # == the request ===========================================================================
    def start(self, headers: list[Header]) -> None:
        self.headers = headers
        path = method = content_type = b""
        for name, value in headers:
            if name.startswith(b":"):
                if name == b":path":
                    path = value
                elif name == b":method":
                    method = value
            elif name == b"content-type":
                content_type = value
            elif name == b"grpc-timeout":
                timeout = _timeout(value)
                if timeout is not None:
                    self.deadline = time.monotonic() + timeout
            elif name == b"grpc-encoding" and value != b"identity":
                self.wbits = _WBITS.get(value, value)
        self.method = path.decode("utf-8", "replace")
        if method != b"POST" or not content_type.startswith(b"application/grpc"):
            self.finish(grpc.StatusCode.UNIMPLEMENTED, "not a gRPC request (POST, application/grpc)")
        elif isinstance(self.wbits, bytes):
            coding = self.wbits.decode("latin-1", "replace")
            self.finish(grpc.StatusCode.UNIMPLEMENTED, f"message compression {coding!r} is not supported")
        elif self.server.interceptors:  # the handler is known once they have run: queue the request
            self.requests = Requests(self.connection)
            self._spawn(self._intercepted)
        else:
            self.handler = self.server.handler(self.method)
            if self.handler is None:
                self.finish(grpc.StatusCode.UNIMPLEMENTED, f"method {self.method} is not served here")
            elif self.handler.request_streaming:
                self.requests = Requests(self.connection)
                self._spawn(self._run)

    def on_data(self, data: bytes) -> None:
        if self.finished:
            self.connection.consumed(len(data))
            return
        buffer = self.buffer
        if buffer:  # a message began in an earlier frame: nothing to do until it is whole
            buffer += data
            if len(buffer) < 5:
                return
            length = int.from_bytes(buffer[1:5], "big")
            if length <= MAX_MESSAGE and len(buffer) < 5 + length:
                return
            data = bytes(buffer)
            buffer.clear()
        # messages are cut straight from the frame's bytes: one copy each
        pos = 0
        end = len(data)
        while end - pos >= 5:
            length = data[pos + 1] << 24 | data[pos + 2] << 16 | data[pos + 3] << 8 | data[pos + 4]
            if length > MAX_MESSAGE:
                self.connection.consumed(end - pos)
                self.finish(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"a message of {length} bytes is over the limit of {MAX_MESSAGE}",
                )
                return
            if end - pos - 5 < length:
                break
            compressed = data[pos]
            message = data[pos + 5 : pos + 5 + length]
            pos += 5 + length
            if not self._take(message, compressed, 5 + length):
                self.connection.consumed(end - pos)  # the rest goes with the ended call
                return
        if pos < end:
            buffer += data[pos:]

    def _take(self, message: bytes, compressed: int, size: int) -> bool:
        """Hands a request message on (``size`` bytes on the wire); False when that ended the call
        instead."""
        if compressed:
            if self.wbits is None:
                self.connection.consumed(size)
                self.finish(grpc.StatusCode.INTERNAL, "a compressed message without grpc-encoding")
                return False
            try:
                message = self._inflate(message)
            except Abort as abort:
                self.connection.consumed(size)
                self.finish(abort.code, abort.details)
                return False
        if self.requests is not None:  # a streaming request, or one not yet intercepted
            if self.requests.put(message, size):
                return True
            self.connection.consumed(size)
            self.finish(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"over {MAX_QUEUED_MESSAGES} request messages of the connection wait for their handlers",
            )
            self._cancel()
            return False
        if self.request is None:
            self.request = message
            self.held = size
            return True
        self.connection.consumed(size)
        self.finish(grpc.StatusCode.UNIMPLEMENTED, "a unary call with more than one request message")
        return False

    def _inflate(self, message: bytes) -> bytes:
        """The message decompressed, refused as soon as it passes MAX_MESSAGE (a zip bomb inflates
        no further than that)."""
        assert isinstance(self.wbits, int)
        inflater = zlib.decompressobj(self.wbits)
        try:
            data = inflater.decompress(message, MAX_MESSAGE + 1)
        except zlib.error as exc:
            raise Abort(grpc.StatusCode.INTERNAL, f"a message does not decompress: {exc}") from None
        if len(data) > MAX_MESSAGE:
            raise Abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"a message decompresses to over the limit of {MAX_MESSAGE} bytes",
            )
        if not inflater.eof:
            raise Abort(grpc.StatusCode.INTERNAL, "a message does not decompress: it ends early")
        return data

    def on_end(self) -> None:
        if self.finished or (self.started and self.requests is None):
            return
        if self.buffer:
            self.finish(grpc.StatusCode.INTERNAL, "the request ends inside a message")
        elif self.requests is not None:
            self.requests.end()
        elif self.handler is not None:  # a unary request, complete
            if getattr(self.handler.unary_unary, "answers_inline", False):
                self._answer_inline()
            else:
                self._spawn(self._run)

    def on_reset(self) -> None:
        self.finished = True
        self._drop_held()
        self._cancel()

    def _cancel(self) -> None:
        task = self.task
        if task is not None and not task.done():
            task.cancel()
            if self.in_flight:  # a task cancelled before its first step never runs its finally
                task.add_done_callback(self._release)

    # == running the handler ===================================================================
    def _spawn(self, run: Any, answer: bytes | None = None) -> None:
        """Runs ``run`` (with the ``answer`` of an inline handler) as the call's task, as soon as the
        connection has a place among its calls in flight."""
        self.started = True
        self.runner = run
        self.answer = answer
        self.connection.run_call(self)

    def begin(self) -> None:
        """The call's turn among the connection's calls in flight (see :meth:`_spawn`); the task
        gives its place back as it ends (:meth:`_release`)."""
        run, self.runner = self.runner, None  # a bound method of this call: kept, it would be a cycle
        if self.finished:  # reset while it waited
            self.connection.call_ended()
            return
        self.in_flight = True
        coroutine = run() if self.answer is None else run(self.answer)
        self.task = self.connection.loop.create_task(coroutine)

    def _release(self, _: object = None) -> None:
        """The handler's place among the calls in flight is free (once, however it ended)."""
        if self.in_flight:
            self.in_flight = False
            self.connection.call_ended()

    def _handed_on(self) -> bytes | None:
        """The unary request, now that its handler takes it: its bytes no longer count as held."""
        if self.held:
            self.connection.consumed(self.held)
            self.held = 0
        return self.request

    def _answer_inline(self) -> None:
        """A unary handler that answers without waiting (``answers_inline``) runs right here, as
        its request ends: no task to create and schedule, which costs more than many handlers."""
        self.started = True
        try:
            request = self._unary_request(self.handler, self._handed_on())
            response = self._serialize(self.handler.unary_unary(request, self))
        except Abort as abort:
            self.finish(abort.code, abort.details)
            return
        except Exception as error:
            log.exception("gRPC %s failed", self.method)
            self.finish(grpc.StatusCode.UNKNOWN, f"Unexpected {type(error).__name__}: {error}")
            return
        if not self._answer_now(response):  # the windows are full: the answer waits in a task
            self._spawn(self._run, response)

    async def _intercepted(self) -> None:
        try:
            details = CallDetails(self.method, self.invocation_metadata())
            try:
                self.handler = await self.server.intercepted(details)
            except asyncio.CancelledError:
                return
            except Exception as error:
                log.exception("gRPC interceptor of %s failed", self.method)
                self.finish(grpc.StatusCode.UNKNOWN, f"Unexpected {type(error).__name__}: {error}")
                return
            if self.handler is None:
                self.finish(grpc.StatusCode.UNIMPLEMENTED, f"method {self.method} is not served here")
                return
            if not self.handler.request_streaming:
                self.handler = _UnaryFromQueue(self.handler)
            await self._run()
        finally:
            self.task = None  # the task's frame holds this call: kept, it would be a cycle
            self._release()

    async def _run(self, answer: bytes | None = None) -> None:
        """Runs the handler, or (``answer``) sends the serialized answer of one that ran inline."""
        handler = self.handler
        try:
            try:
                if answer is not None:
                    await self.write(None, answer)
                    self.finish(grpc.StatusCode.OK, "")
                    return
                if handler.request_streaming:
                    assert self.requests is not None
                    request: Any = RequestStream(self.requests, handler.request_deserializer)
                else:
                    if isinstance(handler, _UnaryFromQueue):
                        data = await handler.take(self)
                    else:
                        data = self._handed_on()
                    request = self._unary_request(handler, data)
                if handler.response_streaming:
                    fn = handler.stream_stream if handler.request_streaming else handler.unary_stream
                    result = fn(request, self)
                    if hasattr(result, "__aiter__"):
                        async for item in result:
                            await self.write(item)
                    else:
                        await result
                else:
                    fn = handler.stream_unary if handler.request_streaming else handler.unary_unary
                    result = fn(request, self)
                    response = self._serialize(await result if _awaitable(result) else result)
                    if not self._answer_now(response):
                        await self.write(None, response)
                        self.finish(grpc.StatusCode.OK, "")
                    return
            except Abort as abort:  # its own name: mypyc types a shared one by the first clause
                self.finish(abort.code, abort.details)
                return
            except asyncio.CancelledError:
                if not self.finished:  # the server is stopping
                    self.finish(grpc.StatusCode.UNAVAILABLE, "the broker is shutting down")
                return
            except ConnectionResetError:
                return
            except Exception as error:
                log.exception("gRPC %s failed", self.method)
                self.finish(grpc.StatusCode.UNKNOWN, f"Unexpected {type(error).__name__}: {error}")
                return
            self.finish(grpc.StatusCode.OK, "")
        finally:
            self.task = None
            self._release()

    @staticmethod
    def _unary_request(handler: Any, data: bytes | None) -> Any:
        if data is None:
            raise Abort(grpc.StatusCode.INTERNAL, "the request holds no message")
        deserialize = handler.request_deserializer
        try:
            return deserialize(data) if deserialize is not None else data
        except Exception as exc:
            raise Abort(grpc.StatusCode.INTERNAL, f"the request does not parse: {exc}") from None

    def _serialize(self, message: Any) -> bytes:
        serialize = self.handler.response_serializer if self.handler is not None else None
        body: bytes = serialize(message) if serialize is not None else message
        if len(body) > MAX_MESSAGE:
            raise Abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED, f"an answer of {len(body)} bytes is over the limit"
            )
        return _MESSAGE_HEAD.pack(0, len(body)) + body

    def _answer_now(self, data: bytes) -> bool:
        """A unary answer in one write when the windows allow (the usual case); False otherwise."""
        connection = self.connection
        if self.finished:
            return True  # reset meanwhile: nothing to answer
        if not connection.send_ready(self, len(data)):
            return False
        self.finished = True
        connection.send_answer(self, RESPONSE_HEADERS, data, OK_TRAILERS)
        return True

    # == the context ===========================================================================
    async def write(self, message: Any, data: bytes | None = None) -> None:
        if self.finished:
            raise ConnectionResetError("the call has ended")
        if data is None:
            data = self._serialize(message)
        connection = self.connection
        if not self.headers_sent:
            self.headers_sent = True
            connection.send_headers(self, RESPONSE_HEADERS)
        if connection.send_ready(self, len(data)):  # the usual case: no waiting, no coroutine
            connection.send_now(self, data)
        else:
            await connection.send_data(self, data)

    def _drop_held(self) -> None:
        """Lets go of the request bytes still held: a partial message, a request never handed on, the
        queued messages of a stream."""
        held = len(self.buffer) + self.held
        self.buffer.clear()
        self.held = 0
        self.request = None
        if held:
            self.connection.consumed(held)
        if self.requests is not None:
            self.requests.drop()

    def finish(self, code: grpc.StatusCode, details: str) -> None:
        """Ends the call with trailers (after the headers, or trailers only)."""
        if self.finished:
            return
        self.finished = True
        self._drop_held()
        block = _status_block(code, details)
        if not self.headers_sent:
            self.headers_sent = True
            block = RESPONSE_HEADERS + block
        self.connection.send_headers(self, block, end_stream=True)

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> NoReturn:
        raise Abort(code, details)

    def invocation_metadata(self) -> tuple[Metadatum, ...]:
        if self.metadata is None:
            self.metadata = tuple(
                _metadatum(name, value)
                for name, value in self.headers
                if name not in _HIDDEN and not name.startswith(b":")
            )
        return self.metadata

    def metadata_value(self, key: str) -> str | None:
        """One text header, without building the whole metadata (what most RPCs need)."""
        wanted = key.encode("latin-1")
        for name, value in self.headers:
            if name == wanted:
                return value.decode("utf-8", "replace")
        return None

    def peer(self) -> str:
        return self.connection.peer

    def time_remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


class RequestStream:
    """The messages of a streaming request, as the handler iterates them."""

    def __init__(self, requests: Requests, deserialize: Any) -> None:
        self.requests = requests
        self.deserialize = deserialize

    def __aiter__(self) -> RequestStream:
        return self

    async def __anext__(self) -> Any:
        item = await self.requests.get()
        if item is _END:
            raise StopAsyncIteration
        return self.deserialize(item) if self.deserialize is not None else item


class _UnaryFromQueue:
    """A unary handler whose request had not ended when interception finished."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handler, name)

    async def take(self, call: Call) -> bytes | None:
        assert call.requests is not None
        message = None
        while (item := await call.requests.get()) is not _END:
            if message is not None:
                raise Abort(grpc.StatusCode.UNIMPLEMENTED, "a unary call with more than one request message")
            message = item
        return message


class NativeGrpcServer:
    """Listens for gRPC over HTTP/2 (with TLS and ALPN ``h2`` when given an SSL context)."""

    def __init__(
        self,
        handlers: Sequence[Any],
        interceptors: Sequence[Any] = (),
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.generic = list(handlers)
        self.interceptors = list(interceptors)
        self.limits = limits or ConnectionLimits()
        self.connections: set[Http2Connection] = set()
        self._handlers: dict[str, Any] = {}
        self._listener: asyncio.Server | None = None

    def handler(self, method: str) -> Any:
        handler = self._handlers.get(method)
        if handler is None:
            details = CallDetails(method, ())
            for generic in self.generic:
                handler = generic.service(details)
                if handler is not None:
                    self._handlers[method] = handler
                    break
        return handler

    async def intercepted(self, details: CallDetails) -> Any:
        async def lookup(d: Any) -> Any:
            return self.handler(d.method)

        continuation = lookup
        for interceptor in self.interceptors[::-1]:
            continuation = _chain(interceptor, continuation)
        return await continuation(details)

    def _open(self, connection: Http2Connection, state: StreamState, headers: list[Header]) -> Stream:
        call = Call(self, connection, state)
        call.start(headers)
        return call

    def _connection(self) -> Http2Connection:
        connection = Http2Connection(self._open, self.connections.discard, self.limits)
        self.connections.add(connection)
        return connection

    async def start(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> int:
        if tls is not None:
            tls.set_alpn_protocols(["h2"])
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(self._connection, host, port, ssl=tls, reuse_address=True)
        sockets: Any = cast(Any, self._listener).sockets  # a list under uvloop, not the tuple typeshed says
        return int(sockets[0].getsockname()[1])

    async def stop(self, grace: float) -> None:
        """GOAWAY to every client, up to ``grace`` seconds for open calls, then closes the rest."""
        if self._listener is None:
            return
        self._listener.close()
        for connection in list(self.connections):
            connection.go_away()
            connection.flush()
        deadline = time.monotonic() + grace
        while any(c.streams for c in self.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for connection in list(self.connections):
            for state in list(connection.streams.values()):
                if state.owner is not None:
                    connection.reset(state.owner, CANCEL)
            connection.close()
        await self._listener.wait_closed()
        self._listener = None


def _chain(interceptor: Any, continuation: Any) -> Any:
    async def next_step(details: Any) -> Any:
        return await interceptor.intercept_service(continuation, details)

    return next_step
