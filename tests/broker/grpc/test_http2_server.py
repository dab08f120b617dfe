"""The broker's own gRPC server (:mod:`broker.grpc.calls` over :mod:`broker.grpc.http2`) as a grpcio
client sees it: unary, server-, client- and bidi-streaming calls, payloads beyond the flow-control
windows, many calls at once, status codes and messages, metadata, deadlines and cancellation; with and
without an interceptor. Then raw HTTP/2 from a plain socket: broken input gets the GOAWAY or
RST_STREAM the RFC asks for, and nothing a client sends stops the server from serving the next call."""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import queue
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]
import hpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.grpc import calls
from broker.grpc.calls import MAX_MESSAGE, NativeGrpcServer
from broker.grpc.http2 import ConnectionLimits
from broker.protocol.hpack_codec import encode_int, literal
from broker.protocol.http2 import (
    ACK,
    COMPRESSION_ERROR,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    FLOW_CONTROL_ERROR,
    FRAME_SIZE_ERROR,
    GOAWAY,
    HEADERS,
    INITIAL_WINDOW_SIZE,
    MAX_FRAME,
    MAX_FRAME_SIZE,
    PING,
    PREFACE,
    PRIORITY,
    PROTOCOL_ERROR,
    RECEIVE_WINDOW,
    RST_STREAM,
    SETTINGS,
    STREAM_CLOSED,
    WINDOW_UPDATE,
    StreamState,
    frame,
)
from tests.peers.conftest import LoopThread

CALLS_COMPILED = not calls.__file__.endswith(".py")  # the mypyc build is in use
SERVICE = "test.Echo"
ECHO = f"/{SERVICE}/Echo"
TIMEOUT = 20.0  # for every call: a server that stops answering fails the test instead of hanging it


# == the service ==============================================================================
class Inline:
    """A plain-function handler the server runs as the request ends, without a task."""

    answers_inline = True

    def __init__(self, fn: Callable[[bytes, Any], bytes]) -> None:
        self.fn = fn

    def __call__(self, request: bytes, context: Any) -> bytes:
        return self.fn(request, context)


def inline_fail(request: bytes, context: Any) -> bytes:
    raise RuntimeError("inline boom")


class Service:
    """The handlers, and what they saw (counters read from the test thread)."""

    def __init__(self) -> None:
        self.once_runs = 0
        self.stream_ends = 0
        self.running = 0  # Once handlers running now, and the most at any time
        self.most_running = 0

    async def echo(self, request: bytes, context: Any) -> bytes:
        return request

    async def abort(self, request: bytes, context: Any) -> bytes:
        await context.abort(grpc.StatusCode.NOT_FOUND, "nope ü%")
        raise AssertionError("abort returned")

    async def fail(self, request: bytes, context: Any) -> bytes:
        raise RuntimeError("boom")

    async def context(self, request: bytes, context: Any) -> bytes:
        metadata = [
            [key, value if isinstance(value, str) else {"bytes": value.hex()}]
            for key, value in context.invocation_metadata()
        ]
        answer = {"metadata": metadata, "peer": context.peer(), "time_remaining": context.time_remaining()}
        return json.dumps(answer).encode()

    async def once(self, request: bytes, context: Any) -> bytes:
        self.once_runs += 1
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(0.05)
        finally:
            self.running -= 1
        return request

    async def count(self, request: bytes, context: Any) -> AsyncIterator[bytes]:
        """``b"N:SIZE"``: N messages of SIZE bytes, each starting with its number."""
        number, size = (int(part) for part in request.split(b":"))
        for i in range(number):
            yield str(i).encode().ljust(size, b".")

    async def forever(self, request: bytes, context: Any) -> AsyncIterator[bytes]:
        try:
            while True:
                yield b"tick"
                await asyncio.sleep(0.005)
        finally:
            self.stream_ends += 1

    async def concat(self, requests: AsyncIterator[bytes], context: Any) -> bytes:
        return b"".join([part async for part in requests])

    async def bidi(self, requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        async for request in requests:
            yield request

    def generic(self) -> Any:
        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Echo": grpc.unary_unary_rpc_method_handler(self.echo),
                "InlineEcho": grpc.unary_unary_rpc_method_handler(Inline(lambda request, _: request[::-1])),
                "InlineFail": grpc.unary_unary_rpc_method_handler(Inline(inline_fail)),
                "Abort": grpc.unary_unary_rpc_method_handler(self.abort),
                "Fail": grpc.unary_unary_rpc_method_handler(self.fail),
                "Context": grpc.unary_unary_rpc_method_handler(self.context),
                "Once": grpc.unary_unary_rpc_method_handler(self.once),
                "Count": grpc.unary_stream_rpc_method_handler(self.count),
                "Forever": grpc.unary_stream_rpc_method_handler(self.forever),
                "Concat": grpc.stream_unary_rpc_method_handler(self.concat),
                "Bidi": grpc.stream_stream_rpc_method_handler(self.bidi),
            },
        )


class PassThrough:
    """A grpc.aio.ServerInterceptor that looks at each call and lets it through."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]], details: Any) -> Any:
        self.methods.append(details.method)
        if details.method.endswith("/Broken"):
            raise RuntimeError("interceptor bug")
        return await continuation(details)


@dataclass
class Served:
    loop: LoopThread
    service: Service
    interceptor: PassThrough
    ports: dict[str, int]
    channels: dict[str, Any]
    errors: list[dict[str, Any]] = field(default_factory=list)  # what reached the loop's exception handler

    @property
    def port(self) -> int:
        return self.ports["plain"]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    loop = LoopThread()
    errors: list[dict[str, Any]] = []
    loop.loop.set_exception_handler(lambda _loop, context: errors.append(context))
    service = Service()
    interceptor = PassThrough()
    servers = {
        "plain": NativeGrpcServer([service.generic()]),
        "intercepted": NativeGrpcServer([service.generic()], [interceptor]),
        "two_in_flight": NativeGrpcServer(
            [service.generic()], limits=ConnectionLimits(max_calls_in_flight=2)
        ),
    }
    ports = {name: loop.run(server.start("127.0.0.1", 0)) for name, server in servers.items()}
    channels = {name: grpc.insecure_channel(f"127.0.0.1:{port}") for name, port in ports.items()}
    try:
        yield Served(loop, service, interceptor, ports, channels, errors)
    finally:
        for channel in channels.values():
            channel.close()
        for server in servers.values():
            loop.run(server.stop(1.0))
        loop.close()


@pytest.fixture(params=["plain", "intercepted"])
def channel(request: pytest.FixtureRequest, served: Served) -> Any:
    return served.channels[request.param]


def assert_serving(served: Served) -> None:
    """The server answers a grpcio call on a new connection, and nothing escaped to the loop."""
    with grpc.insecure_channel(f"127.0.0.1:{served.port}") as fresh:
        assert fresh.unary_unary(ECHO)(b"still here", timeout=TIMEOUT) == b"still here"
    assert served.errors == []


async def collect_garbage() -> None:
    gc.collect()


def forget_loop_errors(served: Served) -> None:
    """After a test that may leave a failed task: it reports now, and not in the next test."""
    served.loop.run(collect_garbage())
    served.errors.clear()


def rpc_error(call: Callable[[], Any]) -> Any:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def wait_for(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


# == grpcio clients ===========================================================================
def test_echo(channel: Any) -> None:
    echo = channel.unary_unary(ECHO)
    for payload in (b"", b"x", bytes(range(256)), b"\x00" * 70_000):
        assert echo(payload, timeout=TIMEOUT) == payload


@pytest.mark.parametrize("compression", ["Gzip", "Deflate"])
def test_compressed_requests(channel: Any, compression: str) -> None:
    echo = channel.unary_unary(ECHO)
    for payload in (b"", b"abc" * 1000, os.urandom(100_000)):
        assert echo(payload, compression=getattr(grpc.Compression, compression), timeout=TIMEOUT) == payload


def test_echo_beyond_the_flow_control_windows(channel: Any) -> None:
    payload = os.urandom(3 << 20)  # far over the 64 KiB default windows, in both directions
    assert channel.unary_unary(ECHO)(payload, timeout=TIMEOUT) == payload


def test_large_calls_at_once_share_the_connection_window(channel: Any) -> None:
    echo = channel.unary_unary(ECHO)
    payloads = [os.urandom(1 << 20) + bytes((i,)) for i in range(6)]
    futures = [echo.future(payload, timeout=TIMEOUT) for payload in payloads]
    assert [future.result() for future in futures] == payloads


def test_calls_beyond_the_connection_window_in_total(channel: Any) -> None:
    """The window opens again as whole messages reach their handlers."""
    echo = channel.unary_unary(ECHO)
    payload = os.urandom(2 << 20)
    for _ in range(RECEIVE_WINDOW // len(payload) + 8):
        assert echo(payload, timeout=TIMEOUT) == payload


def test_calls_beyond_the_calls_in_flight_wait_their_turn(served: Served) -> None:
    once = served.channels["two_in_flight"].unary_unary(f"/{SERVICE}/Once")
    served.service.most_running = 0
    calls = [once.future(b"%d" % i, timeout=TIMEOUT) for i in range(8)]
    assert [call.result() for call in calls] == [b"%d" % i for i in range(8)]
    assert served.service.most_running == 2


@pytest.mark.parametrize(
    "compression", [grpc.Compression.Gzip, grpc.Compression.Deflate], ids=["gzip", "deflate"]
)
def test_a_message_that_inflates_past_the_limit_is_refused(served: Served, compression: Any) -> None:
    """A few KiB on the wire, over 16 MiB once inflated: refused while inflating, and the connection
    serves on."""
    echo = served.channels["plain"].unary_unary(ECHO)
    error = rpc_error(lambda: echo(b"\0" * (MAX_MESSAGE + 1), timeout=TIMEOUT, compression=compression))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "decompresses to over the limit" in error.details()
    assert echo(b"after", timeout=TIMEOUT) == b"after"


def test_partial_messages_hold_the_connection_window(served: Served) -> None:
    """Bytes of messages not yet complete are not given back: however many streams a client opens,
    the requests a connection holds stay within the window, and sending past it is an error."""
    chunk = MAX_FRAME - 64
    streams = RECEIVE_WINDOW // chunk
    with Raw(served.port) as raw:
        for i in range(streams):
            sid = 1 + 2 * i
            head = (16 << 20).to_bytes(4, "big")  # announces 16 MiB, sends about 1 MiB of it
            raw.send(
                frame(HEADERS, END_HEADERS, sid, request_block(ECHO)),
                frame(DATA, 0, sid, b"\x00" + head + bytes(chunk - 5)),
            )
        raw.send(frame(DATA, 0, 1 + 2 * streams - 2, bytes(RECEIVE_WINDOW - streams * chunk + 1)))
        debug = raw.closed_with(FLOW_CONTROL_ERROR)
    assert b"window" in debug
    assert_serving(served)


def test_many_concurrent_calls(channel: Any) -> None:
    echo = channel.unary_unary(ECHO)
    futures = [echo.future(b"call %d" % i, timeout=TIMEOUT) for i in range(500)]
    assert [future.result() for future in futures] == [b"call %d" % i for i in range(500)]


def test_abort_status_and_percent_encoded_message(channel: Any) -> None:
    error = rpc_error(lambda: channel.unary_unary(f"/{SERVICE}/Abort")(b"", timeout=TIMEOUT))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert error.details() == "nope ü%"


def assert_unknown(served: Served, channel_name: str, method: str, details: str) -> None:
    """A call of ``method`` fails UNKNOWN naming ``details``, and the channel still serves."""
    channel = served.channels[channel_name]
    try:
        # the answer takes milliseconds; the short deadline only bounds the wait when none comes
        error = rpc_error(lambda: channel.unary_unary(f"/{SERVICE}/{method}")(b"", timeout=3))
        assert error.code() == grpc.StatusCode.UNKNOWN
        assert details in error.details()
        assert channel.unary_unary(ECHO)(b"after", timeout=TIMEOUT) == b"after"
        assert served.errors == []
    finally:
        forget_loop_errors(served)


def test_a_raising_handler_is_unknown(served: Served) -> None:
    assert_unknown(served, "plain", "Fail", "boom")


def test_inline_handlers_answer_within_and_beyond_the_windows(channel: Any) -> None:
    """Small answers leave with the request's own read; one over the stream window waits in a task."""
    echo = channel.unary_unary(f"/{SERVICE}/InlineEcho")
    for payload in (b"", b"abc", os.urandom(3 << 20)):
        assert echo(payload, timeout=TIMEOUT) == payload[::-1]
    futures = [echo.future(b"call %d" % i, timeout=TIMEOUT) for i in range(200)]
    assert [future.result() for future in futures] == [(b"call %d" % i)[::-1] for i in range(200)]


def test_finished_calls_are_freed_as_they_end(channel: Any) -> None:
    """Nothing of a finished call is left to the cycle collector, whose passes over every call's
    garbage cost the broker a sixth of its CPU per received message."""
    echo, inline = channel.unary_unary(ECHO), channel.unary_unary(f"/{SERVICE}/InlineEcho")
    count = channel.unary_stream(f"/{SERVICE}/Count")
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable stays in gc.garbage
    try:
        for i in range(20):
            assert echo(b"%d" % i, timeout=TIMEOUT) == b"%d" % i
            assert inline(b"ab", timeout=TIMEOUT) == b"ba"
            assert len(list(count(b"3:10", timeout=TIMEOUT))) == 3
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage if isinstance(o, calls.Call | StreamState)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == []


@pytest.mark.parametrize("channel_name", ["plain", "intercepted"])
def test_a_raising_inline_handler_is_unknown(served: Served, channel_name: str) -> None:
    assert_unknown(served, channel_name, "InlineFail", "inline boom")


@pytest.mark.parametrize("method", [f"/{SERVICE}/Nope", "/other.Service/Echo", "/nonsense"])
def test_an_unknown_method_is_unimplemented(channel: Any, method: str) -> None:
    error = rpc_error(lambda: channel.unary_unary(method)(b"", timeout=TIMEOUT))
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED
    bidi = channel.stream_stream(method)
    error = rpc_error(lambda: list(bidi(iter([b"a", b"b"]), timeout=TIMEOUT)))
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED


def test_server_streaming(channel: Any) -> None:
    count = channel.unary_stream(f"/{SERVICE}/Count")
    answers = list(count(b"3000:1000", timeout=TIMEOUT))  # 3 MB: many window updates
    assert answers == [str(i).encode().ljust(1000, b".") for i in range(3000)]
    assert list(count(b"0:10", timeout=TIMEOUT)) == []
    big = list(count(b"3:2000000", timeout=TIMEOUT))
    assert [len(m) for m in big] == [2_000_000] * 3
    assert [m[:1] for m in big] == [b"0", b"1", b"2"]


def test_client_streaming(channel: Any) -> None:
    concat = channel.stream_unary(f"/{SERVICE}/Concat")
    parts = [os.urandom(n) for n in (0, 1, 100, 100_000, 1_000_000)]
    assert concat(iter(parts), timeout=TIMEOUT) == b"".join(parts)
    assert concat(iter([]), timeout=TIMEOUT) == b""


def test_bidi_streaming(channel: Any) -> None:
    bidi = channel.stream_stream(f"/{SERVICE}/Bidi")
    requests = [b"m%d" % i for i in range(300)] + [os.urandom(300_000), b""]
    assert list(bidi(iter(requests), timeout=TIMEOUT)) == requests


def test_bidi_answers_before_the_requests_end(channel: Any) -> None:
    """Ping-pong: each answer arrives while the request stream is still open."""
    pending: queue.Queue[bytes | None] = queue.Queue()

    def requests() -> Iterator[bytes]:
        while (item := pending.get()) is not None:
            yield item

    answers = channel.stream_stream(f"/{SERVICE}/Bidi")(requests(), timeout=TIMEOUT)
    for i in range(30):
        pending.put(b"ping %d" % i)
        assert next(answers) == b"ping %d" % i
    pending.put(None)
    assert list(answers) == []
    assert answers.code() == grpc.StatusCode.OK


def context_of(channel: Any, **kwargs: Any) -> dict[str, Any]:
    answer = channel.unary_unary(f"/{SERVICE}/Context")(b"", **kwargs)
    result: dict[str, Any] = json.loads(answer)
    return result


def test_client_metadata_is_the_invocation_metadata(channel: Any) -> None:
    sent = [("x-mq-client-id", "client@1"), ("x-mq-namespace", ""), ("authorization", "MQv2 a=b, c=d")]
    seen = context_of(channel, metadata=sent, timeout=TIMEOUT)
    metadata = [tuple(pair) for pair in seen["metadata"]]
    assert [pair for pair in metadata if pair[0] != "user-agent"] == sent
    assert any(key == "user-agent" and "grpc" in value for key, value in metadata)
    assert not {key for key, _ in metadata} & {"te", "content-type", "grpc-timeout", ":path"}
    assert seen["peer"].startswith("ipv4:127.0.0.1:")
    assert 0 < seen["time_remaining"] <= TIMEOUT + 1  # grpcio rounds the grpc-timeout it sends up
    assert context_of(channel)["time_remaining"] is None  # no deadline, none sent


def test_binary_metadata_reaches_the_handler_as_bytes(served: Served) -> None:
    seen = context_of(served.channels["plain"], metadata=[("x-trace-bin", b"\x00\x01\xff")], timeout=TIMEOUT)
    assert ["x-trace-bin", {"bytes": "0001ff"}] in seen["metadata"]


def test_a_deadline_on_a_stream_does_not_break_the_next_calls(served: Served) -> None:
    channel = served.channels["plain"]
    ends = served.service.stream_ends
    ticks = channel.unary_stream(f"/{SERVICE}/Forever")(b"", timeout=0.3)
    error = rpc_error(lambda: [None for _ in ticks])
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    wait_for("the handler of the expired stream ends", lambda: served.service.stream_ends > ends)
    assert channel.unary_unary(ECHO)(b"next", timeout=TIMEOUT) == b"next"
    count = channel.unary_stream(f"/{SERVICE}/Count")
    assert list(count(b"5:1", timeout=TIMEOUT)) == [str(i).encode() for i in range(5)]


def test_a_cancelled_stream_does_not_break_the_next_calls(served: Served) -> None:
    channel = served.channels["plain"]
    ends = served.service.stream_ends
    ticks = channel.unary_stream(f"/{SERVICE}/Forever")(b"", timeout=TIMEOUT)
    assert [next(ticks) for _ in range(3)] == [b"tick"] * 3
    ticks.cancel()
    error = rpc_error(lambda: [None for _ in ticks])
    assert error.code() == grpc.StatusCode.CANCELLED
    wait_for("the handler of the cancelled stream ends", lambda: served.service.stream_ends > ends)
    bidi = channel.stream_stream(f"/{SERVICE}/Bidi")(iter([b"a", b"b"]), timeout=TIMEOUT)
    assert list(bidi) == [b"a", b"b"]
    assert_serving(served)


def test_the_interceptor_sees_the_calls(served: Served) -> None:
    before = len(served.interceptor.methods)
    assert served.channels["intercepted"].unary_unary(ECHO)(b"x", timeout=TIMEOUT) == b"x"
    assert served.interceptor.methods[before:] == [ECHO]


def test_a_raising_interceptor_is_unknown(served: Served) -> None:
    assert_unknown(served, "intercepted", "Broken", "interceptor bug")


def test_stop_lets_running_calls_finish_and_ends_streams(served: Served) -> None:
    server = NativeGrpcServer([served.service.generic()])
    port = served.loop.run(server.start("127.0.0.1", 0))
    runs, ends = served.service.once_runs, served.service.stream_ends
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        ticks = channel.unary_stream(f"/{SERVICE}/Forever")(b"", timeout=TIMEOUT)
        assert next(ticks) == b"tick"
        running = channel.unary_unary(f"/{SERVICE}/Once").future(b"finish me", timeout=TIMEOUT)
        wait_for("the call reaches its handler", lambda: served.service.once_runs > runs)
        served.loop.run(server.stop(0.5))
        assert running.result() == b"finish me"  # within the grace period
        error = rpc_error(lambda: [None for _ in ticks])  # the stream outlived it: cut
        assert error.code() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)
        wait_for("the handler of the cut stream ends", lambda: served.service.stream_ends > ends)
        error = rpc_error(lambda: channel.unary_unary(ECHO)(b"", timeout=TIMEOUT))
        assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert_serving(served)


# == raw HTTP/2 ===============================================================================
@dataclass
class Frame:
    kind: int
    flags: int
    stream_id: int
    payload: bytes

    def goaway(self) -> tuple[int, int, bytes]:
        """(last stream id, error code, debug data)."""
        assert self.kind == GOAWAY, self
        return (
            int.from_bytes(self.payload[:4], "big"),
            int.from_bytes(self.payload[4:8], "big"),
            self.payload[8:],
        )

    def settings(self) -> dict[int, int]:
        assert self.kind == SETTINGS, self
        p = self.payload
        return {
            int.from_bytes(p[i : i + 2], "big"): int.from_bytes(p[i + 2 : i + 6], "big")
            for i in range(0, len(p), 6)
        }


class Raw:
    """A plain socket speaking HTTP/2 frames to the server."""

    def __init__(self, port: int, preface: bytes = PREFACE + frame(SETTINGS, 0, 0)) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        if preface:
            self.sock.sendall(preface)

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, *frames: bytes) -> None:
        self.sock.sendall(b"".join(frames))

    def read(self) -> Frame | None:
        """The next frame from the server; None when the server closed the connection."""
        while True:
            if len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) >= 9 + length:
                    b = self.buffer
                    got = Frame(b[3], b[4], int.from_bytes(b[5:9], "big") & 0x7FFFFFFF, b[9 : 9 + length])
                    self.buffer = b[9 + length :]
                    return got
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                assert not self.buffer, f"the connection ended inside a frame: {self.buffer!r}"
                return None
            self.buffer += chunk

    def next(self, kind: int, stream_id: int | None = None) -> Frame:
        """The next frame of this kind (and stream), skipping others."""
        while True:
            got = self.read()
            assert got is not None, f"the connection closed before a frame of type {kind}"
            if got.kind == kind and (stream_id is None or got.stream_id == stream_id):
                return got

    def until_closed(self) -> list[Frame]:
        frames = []
        while (got := self.read()) is not None:
            frames.append(got)
        return frames

    def closed_with(self, code: int) -> bytes:
        """Asserts the server's last word is GOAWAY(code), then the end; returns the debug text."""
        frames = self.until_closed()
        goaways = [f for f in frames if f.kind == GOAWAY]
        assert goaways, f"no GOAWAY in {frames}"
        _, got_code, debug = goaways[-1].goaway()
        assert got_code == code, debug
        assert debug, "the GOAWAY gives no reason"
        return debug


def request_block(path: str, *extra: tuple[bytes, bytes]) -> bytes:
    fields = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", path.encode()),
        (b":authority", b"test"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
        *extra,
    ]
    return b"".join(literal(name, value) for name, value in fields)


def message(body: bytes) -> bytes:
    return b"\x00" + len(body).to_bytes(4, "big") + body


@dataclass
class Answer:
    headers: list[tuple[bytes, bytes]]
    messages: bytes
    trailers: list[tuple[bytes, bytes]]


def answer_of(raw: Raw, stream_id: int) -> Answer:
    """Reads one call's answer: headers, DATA, trailers (HEADERS with END_STREAM)."""
    decoder = hpack.Decoder()  # the server's blocks use no dynamic table
    blocks: list[list[tuple[bytes, bytes]]] = []
    data = b""
    while True:
        got = raw.read()
        assert got is not None, "the connection closed before the call ended"
        if got.stream_id != stream_id:
            continue
        if got.kind == DATA:
            data += got.payload
        elif got.kind == HEADERS:
            assert got.flags & END_HEADERS
            blocks.append([(bytes(n), bytes(v)) for n, v in decoder.decode(got.payload, raw=True)])
            if got.flags & END_STREAM:
                headers = blocks[0] if len(blocks) > 1 else []
                return Answer(headers, data, blocks[-1])
        elif got.kind == RST_STREAM:
            raise AssertionError(f"stream {stream_id} reset with {int.from_bytes(got.payload, 'big')}")


def test_the_server_speaks_first(served: Served) -> None:
    with Raw(served.port, preface=b"") as raw:
        first = raw.read()
        assert first is not None and first.kind == SETTINGS and not first.flags & ACK
        assert first.stream_id == 0
        ours = first.settings()
        assert ours[MAX_FRAME_SIZE] >= 16_384
        assert ours[INITIAL_WINDOW_SIZE] > 65_535
        update = raw.read()
        assert update is not None and update.kind == WINDOW_UPDATE and update.stream_id == 0
        raw.send(PREFACE, frame(SETTINGS, 0, 0))
        assert raw.next(SETTINGS).flags & ACK


def test_a_raw_call(served: Served) -> None:
    with Raw(served.port) as raw:
        raw.send(
            frame(HEADERS, END_HEADERS, 1, request_block(ECHO, (b"x-mq-a", b"b"))),
            frame(DATA, END_STREAM, 1, message(b"raw hello")),
        )
        answer = answer_of(raw, 1)
        assert answer.headers == [(b":status", b"200"), (b"content-type", b"application/grpc")]
        assert answer.messages == message(b"raw hello")
        assert answer.trailers == [(b"grpc-status", b"0")]


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=40, deadline=None)
@given(
    bodies=st.lists(st.binary(min_size=0, max_size=3000), min_size=1, max_size=3),
    frame_cuts=st.lists(st.integers(0, 1 << 16), max_size=4),
    read_cuts=st.lists(st.integers(0, 1 << 16), max_size=12),
)
def test_calls_cut_anywhere_into_frames_and_reads(
    served: Served, bodies: list[bytes], frame_cuts: list[int], read_cuts: list[int]
) -> None:
    """Messages split across DATA frames, frames and the preface split across reads: every call
    is answered whole, and the window comes back (the fresh call after them is served)."""
    wire = PREFACE + frame(SETTINGS, 0, 0)
    for i, body in enumerate(bodies):
        sid = 1 + 2 * i
        pieces = _cut(message(body), frame_cuts)
        wire += frame(HEADERS, END_HEADERS, sid, request_block(ECHO))
        wire += b"".join(
            frame(DATA, END_STREAM if j == len(pieces) - 1 else 0, sid, piece)
            for j, piece in enumerate(pieces)
        )
    with Raw(served.port, preface=b"") as raw:
        raw.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for piece in _cut(wire, read_cuts):
            raw.send(piece)
            time.sleep(0.001)  # most pieces arrive as reads of their own
        for i, body in enumerate(bodies):
            assert answer_of(raw, 1 + 2 * i).messages == message(body)
    assert_serving(served)


def test_an_inline_answer_over_the_stream_window_waits_for_it(served: Served) -> None:
    small = INITIAL_WINDOW_SIZE.to_bytes(2, "big") + (10).to_bytes(4, "big")
    with Raw(served.port, preface=PREFACE + frame(SETTINGS, 0, 0, small)) as raw:
        body = b"0123456789abcdef"  # answered reversed: 21 bytes with the gRPC prefix, over the 10
        raw.send(frame(HEADERS, END_HEADERS, 1, request_block(f"/{SERVICE}/InlineEcho")))
        raw.send(frame(DATA, END_STREAM, 1, message(body)))
        first = raw.next(DATA, 1)
        assert len(first.payload) == 10  # what the window allows, then it waits
        raw.send(frame(WINDOW_UPDATE, 0, 1, (100).to_bytes(4, "big")))
        rest = answer_of(raw, 1)
        assert first.payload + rest.messages == message(body[::-1])
        assert (b"grpc-status", b"0") in rest.trailers
    assert_serving(served)


def test_a_message_over_the_limit_announced_in_a_later_frame(served: Served) -> None:
    with Raw(served.port) as raw:
        raw.send(
            frame(HEADERS, END_HEADERS, 1, request_block(ECHO)),
            frame(DATA, 0, 1, b"\x00\x01"),  # the length arrives in the next frame
            frame(DATA, END_STREAM, 1, (calls.MAX_MESSAGE + 1).to_bytes(4, "big") + b"x" * 100),
        )
        answer = answer_of(raw, 1)
        assert (b"grpc-status", b"8") in answer.trailers  # RESOURCE_EXHAUSTED
        raw.send(
            frame(HEADERS, END_HEADERS, 3, request_block(ECHO)), frame(DATA, END_STREAM, 3, message(b"next"))
        )
        assert answer_of(raw, 3).messages == message(b"next")


def test_a_header_block_in_continuation_frames(served: Served) -> None:
    block = request_block(ECHO, (b"x-long", b"v" * 5000))
    with Raw(served.port) as raw:
        raw.send(
            frame(HEADERS, 0, 1, block[:10]),
            frame(CONTINUATION, 0, 1, block[10:3000]),
            frame(CONTINUATION, END_HEADERS, 1, block[3000:]),
            frame(DATA, END_STREAM, 1, message(b"continued")),
        )
        assert answer_of(raw, 1).messages == message(b"continued")


def test_the_server_respects_a_small_client_window(served: Served) -> None:
    with Raw(served.port, preface=PREFACE) as raw:
        raw.send(frame(SETTINGS, 0, 0, INITIAL_WINDOW_SIZE.to_bytes(2, "big") + (10).to_bytes(4, "big")))
        body = os.urandom(1000)
        raw.send(
            frame(HEADERS, END_HEADERS, 1, request_block(ECHO)), frame(DATA, END_STREAM, 1, message(body))
        )
        sent = raw.next(DATA, 1).payload
        raw.send(frame(PING, 0, 0, b"pingpong"))  # answered after whatever DATA the server sends now
        while (got := raw.read()) is not None and not (got.kind == PING and got.flags & ACK):
            assert not (got.kind == HEADERS and got.flags & END_STREAM), "the call ended past the window"
            if got.kind == DATA:
                sent += got.payload
        assert len(sent) == 10  # what the window allowed, and no more
        raw.send(frame(WINDOW_UPDATE, 0, 1, (5000).to_bytes(4, "big")))
        answer = answer_of(raw, 1)
        assert sent + answer.messages == message(body)
        assert answer.trailers == [(b"grpc-status", b"0")]


@pytest.mark.parametrize(
    "preface",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00",
    ],
    ids=["http1", "almost", "tls"],
)
def test_a_wrong_preface_gets_protocol_error(served: Served, preface: bytes) -> None:
    with Raw(served.port, preface=preface) as raw:
        assert b"preface" in raw.closed_with(PROTOCOL_ERROR)
    assert_serving(served)


def test_a_frame_over_the_advertised_maximum_gets_frame_size_error(served: Served) -> None:
    with Raw(served.port) as raw:
        limit = raw.next(SETTINGS).settings()[MAX_FRAME_SIZE]
        raw.send(frame(PING, 0, 0, b"12345678"))
        assert raw.next(PING).payload == b"12345678"
        raw.send((limit + 1).to_bytes(3, "big") + bytes((DATA, 0)) + (1).to_bytes(4, "big"))
        raw.closed_with(FRAME_SIZE_ERROR)
    assert_serving(served)


@pytest.mark.parametrize(
    "block",
    [encode_int(70, 7, 0x80), b"\xff", b"\x00\x05ab", b"\x00\x81\xff\x01a", encode_int(9999, 5, 0x20)],
    ids=["index", "integer", "string", "huffman", "size-update"],
)
def test_an_undecodable_header_block_gets_compression_error(served: Served, block: bytes) -> None:
    with Raw(served.port) as raw:
        raw.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, block))
        raw.closed_with(COMPRESSION_ERROR)
    assert_serving(served)


@pytest.mark.parametrize(
    "frames",
    [
        frame(DATA, 0, 0, b"data"),
        frame(HEADERS, END_HEADERS, 2, request_block(ECHO)),  # an even, server stream
        frame(HEADERS, 0, 1, request_block(ECHO)[:5]) + frame(PING, 0, 0, b"12345678"),  # interrupted
        frame(CONTINUATION, END_HEADERS, 1, b"\x82"),
        frame(SETTINGS, 0, 1),
        frame(WINDOW_UPDATE, 0, 0, b"\x00\x00\x00\x00"),
        frame(DATA, 0, 9, message(b"x")),  # an idle stream
    ],
    ids=["data-0", "even-stream", "interrupted", "continuation", "settings-stream", "window-0", "idle"],
)
def test_protocol_errors_close_the_connection(served: Served, frames: bytes) -> None:
    with Raw(served.port) as raw:
        raw.send(frames)
        raw.closed_with(PROTOCOL_ERROR)
    assert_serving(served)


def test_a_ping_gets_its_bytes_back(served: Served) -> None:
    with Raw(served.port) as raw:
        for payload in (b"\x00" * 8, b"\xff\x01\x02\x03\x04\x05\x06\x07"):
            raw.send(frame(PING, 0, 0, payload))
            pong = raw.next(PING)
            assert (pong.flags, pong.stream_id, pong.payload) == (ACK, 0, payload)
        raw.send(frame(PING, ACK, 0, b"ignored!"), frame(PING, 0, 0, b"the last"))
        assert raw.next(PING).payload == b"the last"  # an ACK is not answered


def test_a_stream_error_resets_only_that_stream(served: Served) -> None:
    with Raw(served.port) as raw:
        raw.send(frame(PRIORITY, 0, 3, b"\x00\x00\x00"))  # PRIORITY is 5 bytes
        reset = raw.next(RST_STREAM)
        assert (reset.stream_id, int.from_bytes(reset.payload, "big")) == (3, FRAME_SIZE_ERROR)
        raw.send(
            frame(HEADERS, END_HEADERS, 5, request_block(ECHO)), frame(DATA, END_STREAM, 5, message(b"ok"))
        )
        assert answer_of(raw, 5).messages == message(b"ok")


def test_a_second_end_of_stream_does_not_run_the_handler_twice(served: Served) -> None:
    """Frames after the client's END_STREAM are a STREAM_CLOSED stream error (RFC 9113 5.1)."""
    runs = served.service.once_runs
    with Raw(served.port) as raw:
        raw.send(
            frame(HEADERS, END_HEADERS, 1, request_block(f"/{SERVICE}/Once")),
            frame(DATA, END_STREAM, 1, message(b"once")),
            frame(HEADERS, END_HEADERS | END_STREAM, 1, b""),  # trailers after the end
        )
        codes = []
        while not codes and (got := raw.read()) is not None:
            if got.kind == RST_STREAM and got.stream_id == 1:
                codes.append(int.from_bytes(got.payload, "big"))
    assert codes == [STREAM_CLOSED]
    assert served.service.once_runs - runs in (0, 1)  # cancelled by the reset, or ran once


ignorable = st.one_of(
    st.builds(frame, st.integers(10, 255), st.integers(0, 255), st.integers(0, 9), st.binary(max_size=30)),
    st.builds(lambda data: frame(PING, 0, 0, data), st.binary(min_size=8, max_size=8)),
    st.just(frame(PING, ACK, 0, b"unasked!")),
    st.just(frame(SETTINGS, 0, 0)),
    st.builds(lambda sid: frame(PRIORITY, 0, sid, b"\x00\x00\x00\x00\x10"), st.sampled_from([1, 3, 7])),
    st.builds(lambda n: frame(WINDOW_UPDATE, 0, 0, n.to_bytes(4, "big")), st.integers(1, 1000)),
    st.builds(lambda n: frame(WINDOW_UPDATE, 0, 1, n.to_bytes(4, "big")), st.integers(1, 1000)),
)


@settings(max_examples=100, deadline=None)
@given(
    body=st.binary(max_size=3000),
    cuts=st.lists(st.integers(0, 3010), max_size=6),
    paddings=st.lists(st.integers(0, 255), min_size=8, max_size=8),
    between=st.lists(st.lists(ignorable, max_size=3), min_size=9, max_size=9),
)
def test_a_call_among_frames_to_ignore(
    served: Served, body: bytes, cuts: list[int], paddings: list[int], between: list[list[bytes]]
) -> None:
    """A request cut into padded DATA frames, with PING, PRIORITY, SETTINGS, WINDOW_UPDATE and frames of
    unknown types in between, is answered as if sent in one piece."""
    request = message(body)
    edges = [0, *sorted(min(cut, len(request)) for cut in cuts), len(request)]
    sent = [frame(HEADERS, END_HEADERS, 1, request_block(ECHO))]
    for i, (start, end) in enumerate(itertools.pairwise(edges)):
        sent += between[i]
        pad = paddings[i]
        last = END_STREAM if i == len(edges) - 2 else 0
        sent.append(frame(DATA, 0x8 | last, 1, bytes((pad,)) + request[start:end] + b"\x00" * pad))
    with Raw(served.port) as raw:
        raw.send(*sent, *between[-1])
        answer = answer_of(raw, 1)
        assert answer.messages == request
        assert answer.trailers == [(b"grpc-status", b"0")]


# == nothing a client sends stops the server ==================================================
def drain(raw: Raw) -> None:
    """Ends our side, then reads until the server closes (it must, within the socket timeout)."""
    try:
        raw.sock.shutdown(socket.SHUT_WR)
    except OSError:  # the server already closed
        return
    raw.buffer = b""
    while True:
        try:
            if not raw.sock.recv(1 << 16):
                return
        except ConnectionResetError:
            return


@settings(max_examples=50, deadline=None)
@given(junk=st.binary(max_size=2000))
def test_arbitrary_bytes_after_the_preface(served: Served, junk: bytes) -> None:
    with Raw(served.port, preface=PREFACE + junk) as raw:
        drain(raw)
    assert_serving(served)


REQUESTS = [
    request_block(f"/{SERVICE}/{name}") for name in ("Echo", "Count", "Bidi", "Concat", "Forever", "Nope")
]
payloads = st.one_of(
    st.sampled_from(REQUESTS),
    st.sampled_from([message(b"3:10"), message(b"x"), message(b"")[:3], b"\x01" + message(b"zz")[1:]]),
    st.sampled_from([b"\x00\x04\x00\x00\x00\x00", b"\x00\x04\x7f\xff\xff\xff", b"\x00\x05\x00\x00\x40\x00"]),
    st.binary(max_size=40),
)
frames = st.builds(
    frame,
    kind=st.one_of(st.integers(0, 9), st.integers(10, 255)),
    flags=st.one_of(
        st.sampled_from([0, END_STREAM, END_HEADERS, END_HEADERS | END_STREAM, 0x8, 0x20]),
        st.integers(0, 255),
    ),
    stream_id=st.sampled_from([0, 1, 1, 3, 3, 4, 0x7FFFFFFF]),
    payload=payloads,
)


@settings(max_examples=50, deadline=None)
@given(sent=st.lists(frames, max_size=12))
def test_arbitrary_frames_after_the_preface(served: Served, sent: list[bytes]) -> None:
    with Raw(served.port) as raw:
        raw.send(*sent)
        drain(raw)
    assert_serving(served)
