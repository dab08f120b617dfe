"""The remoting server and client over real loopback TCP."""

import asyncio
import contextlib
import functools
import logging
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from broker.protocol.codes import RequestCode, ResponseCode, SerializeType
from broker.protocol.remoting import (
    FrameDecoder,
    RemotingCommand,
    encode_command,
    make_request,
    make_response,
)
from broker.remoting.channel import RemotingChannel
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingConnectError, RemotingTimeoutError
from broker.remoting.server import RemotingServer, install_uvloop

TIMEOUT = 5.0  # generous: only ever reached when something is broken


def async_test(fn: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 20))

    return run


async def echo(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
    return make_response(request, ResponseCode.SUCCESS, "echo", body=request.body)


@asynccontextmanager
async def serving(**kwargs: Any) -> AsyncIterator[tuple[RemotingServer, RemotingClient, str]]:
    server = RemotingServer("127.0.0.1", 0, **kwargs)
    server.register(RequestCode.HEART_BEAT, echo)
    client = RemotingClient()
    async with server:
        try:
            yield server, client, f"127.0.0.1:{server.port}"
        finally:
            await client.close()


async def read_response(reader: asyncio.StreamReader) -> RemotingCommand:
    decoder = FrameDecoder()
    while True:
        data = await reader.read(65536)
        assert data, "connection closed before a response"
        for cmd in decoder.feed(data):
            return cmd


@async_test
async def test_request_response() -> None:
    async with serving() as (server, client, addr):
        request = make_request(RequestCode.HEART_BEAT, body=b"ping")
        response = await client.invoke(addr, request, TIMEOUT)
        assert response.is_response and response.opaque == request.opaque
        assert (response.code, response.remark, response.body) == (0, "echo", b"ping")
        assert server.port > 0 and len(server.connections) == 1


@async_test
async def test_concurrent_requests_are_correlated_by_opaque() -> None:
    async with serving() as (_, client, addr):
        bodies = [str(n).encode() for n in range(20)]
        responses = await asyncio.gather(
            *(client.invoke(addr, make_request(RequestCode.HEART_BEAT, body=b), TIMEOUT) for b in bodies)
        )
        assert [r.body for r in responses] == bodies


@async_test
async def test_binary_header_responses_when_configured() -> None:
    async with serving(serialize_type=SerializeType.ROCKETMQ) as (_, client, addr):
        response = await client.invoke(addr, make_request(RequestCode.HEART_BEAT), TIMEOUT)
        assert response.serialize_type is SerializeType.ROCKETMQ and response.code == 0


@async_test
async def test_oneway_is_handled_but_never_answered() -> None:
    seen = asyncio.Event()

    async def record(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        seen.set()
        return make_response(request)  # dropped: the request is one-way

    async with serving() as (server, _, _addr):
        server.register(RequestCode.UPDATE_CONSUMER_OFFSET, record)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        oneway = make_request(RequestCode.UPDATE_CONSUMER_OFFSET, oneway=True, opaque=1)
        normal = make_request(RequestCode.HEART_BEAT, opaque=2)
        writer.write(encode_command(oneway) + encode_command(normal))
        assert (await read_response(reader)).opaque == 2
        await asyncio.wait_for(seen.wait(), TIMEOUT)
        writer.close()


@async_test
async def test_client_oneway() -> None:
    seen: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    async def record(request: RemotingCommand, channel: RemotingChannel) -> None:
        await seen.put(request)

    async with serving() as (server, client, addr):
        server.register(RequestCode.UPDATE_CONSUMER_OFFSET, record)
        await client.invoke_oneway(
            addr, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, ext_fields={"k": "v"})
        )
        request = await asyncio.wait_for(seen.get(), TIMEOUT)
        assert request.is_oneway and request.ext_fields == {"k": "v"}


@async_test
async def test_timeout() -> None:
    never = asyncio.Event()

    async def stuck(request: RemotingCommand, channel: RemotingChannel) -> None:
        await never.wait()

    async with serving() as (server, client, addr):
        server.register(RequestCode.PULL_MESSAGE, stuck)
        with pytest.raises(RemotingTimeoutError, match="PULL_MESSAGE") as err:
            await client.invoke(addr, make_request(RequestCode.PULL_MESSAGE), 0.2)
        assert err.value.addr == addr
        # the connection is still usable afterwards
        assert (await client.invoke(addr, make_request(RequestCode.HEART_BEAT), TIMEOUT)).code == 0
        never.set()


@async_test
async def test_unknown_code_is_not_supported() -> None:
    async with serving() as (_, client, addr):
        response = await client.invoke(addr, make_request(999), TIMEOUT)
        assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert response.remark == " request type 999 not supported"


@async_test
async def test_handler_exception_is_system_error() -> None:
    async def boom(request: RemotingCommand, channel: RemotingChannel) -> None:
        raise ValueError("disk on fire")

    async with serving() as (server, client, addr):
        server.register(RequestCode.SEND_MESSAGE, boom)
        response = await client.invoke(addr, make_request(RequestCode.SEND_MESSAGE), TIMEOUT)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == "ValueError: disk on fire"


@async_test
async def test_garbage_client_is_disconnected_while_others_keep_working(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving() as (server, client, addr):
        assert (await client.invoke(addr, make_request(RequestCode.HEART_BEAT), TIMEOUT)).code == 0
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        with caplog.at_level(logging.WARNING, logger="broker.client.remoting_client"):
            writer.write(b"\xff\xff\xff\xffgarbage")
            assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""  # server closed it
        host, port = writer.get_extra_info("sockname")[:2]
        assert [r.getMessage() for r in caplog.records if "malformed frame" in r.getMessage()] == [
            f"closing connection {host}:{port}: malformed frame: frame length -1 is below the 4-byte minimum"
        ]
        writer.close()
        assert (await client.invoke(addr, make_request(RequestCode.HEART_BEAT), TIMEOUT)).code == 0


@async_test
async def test_a_huge_relaxed_json_header_closes_only_its_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    header = b"{code:10,extFields:{" + b",".join(b"k%d:'v'" % i for i in range(1_150_000)) + b"}}"  # ~13 MiB
    frame = struct.pack(">ii", 4 + len(header), len(header)) + header
    async with serving() as (server, client, addr):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        with caplog.at_level(logging.WARNING, logger="broker.client.remoting_client"):
            writer.write(frame)
            with contextlib.suppress(ConnectionResetError):  # closed with part of the frame unread
                assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""  # closed, nothing answered
        assert any(
            "relaxed JSON headers may have at most 16384 bytes" in r.getMessage() for r in caplog.records
        )
        writer.close()
        assert (await client.invoke(addr, make_request(RequestCode.HEART_BEAT), TIMEOUT)).code == 0


@async_test
async def test_server_sends_request_to_client() -> None:
    connected: asyncio.Future[RemotingChannel] = asyncio.get_running_loop().create_future()

    async def remember(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        connected.set_result(channel)
        return make_response(request)

    async def running_info(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        return make_response(request, body=b"info for " + request.ext_fields["consumerGroup"].encode())

    async with serving() as (server, client, addr):
        server.register(RequestCode.HEART_BEAT, remember)
        client.register(RequestCode.GET_CONSUMER_RUNNING_INFO, running_info)
        await client.invoke(addr, make_request(RequestCode.HEART_BEAT), TIMEOUT)
        channel = await connected
        push = make_request(RequestCode.GET_CONSUMER_RUNNING_INFO, ext_fields={"consumerGroup": "g"})
        response = await channel.invoke(push, TIMEOUT)
        assert response.code == 0 and response.body == b"info for g"
        # a code the client does not handle is answered like a server would
        assert (await channel.invoke(make_request(RequestCode.CONSUME_MESSAGE_DIRECTLY), TIMEOUT)).code == 3


@async_test
async def test_connect_error_names_address() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = RemotingClient(connect_timeout=TIMEOUT)
    with pytest.raises(RemotingConnectError, match=f"127.0.0.1:{port}"):
        await client.invoke(f"127.0.0.1:{port}", make_request(RequestCode.HEART_BEAT), TIMEOUT)
    with pytest.raises(RemotingConnectError, match="host:port"):
        await client.invoke("nonsense", make_request(RequestCode.HEART_BEAT), TIMEOUT)


@async_test
async def test_idle_connections_are_closed() -> None:
    async with serving(idle_timeout=0.2) as (server, _, _addr):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""
        writer.close()


@async_test
async def test_graceful_stop_finishes_in_flight_handlers() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        started.set()
        await release.wait()
        return make_response(request, remark="finished")

    server = RemotingServer("127.0.0.1", 0)
    server.register(RequestCode.PULL_MESSAGE, slow)
    await server.start()
    client = RemotingClient()
    addr = f"127.0.0.1:{server.port}"
    call = asyncio.create_task(client.invoke(addr, make_request(RequestCode.PULL_MESSAGE), TIMEOUT))
    await asyncio.wait_for(started.wait(), TIMEOUT)
    stopping = asyncio.create_task(server.stop(grace=TIMEOUT))
    await asyncio.sleep(0)
    release.set()
    assert (await call).remark == "finished"
    await stopping
    assert not server.connections
    await client.close()
    with pytest.raises(RemotingConnectError):  # no longer accepting
        await RemotingClient().invoke(addr, make_request(RequestCode.PULL_MESSAGE), TIMEOUT)


@async_test
async def test_back_pressure_limits_handlers_per_connection() -> None:
    first_started, release = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def first(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        first_started.set()
        await release.wait()
        order.append("first done")
        return make_response(request)

    async def second(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        order.append("second")
        return make_response(request)

    async with serving(max_inflight=1) as (server, client, addr):
        server.register(RequestCode.PULL_MESSAGE, first)
        server.register(RequestCode.QUERY_MESSAGE, second)
        a = asyncio.create_task(client.invoke(addr, make_request(RequestCode.PULL_MESSAGE), TIMEOUT))
        await asyncio.wait_for(first_started.wait(), TIMEOUT)
        b = asyncio.create_task(client.invoke(addr, make_request(RequestCode.QUERY_MESSAGE), TIMEOUT))
        await asyncio.sleep(0.1)  # room for the second request to be (wrongly) dispatched
        release.set()
        await asyncio.gather(a, b)
        assert order == ["first done", "second"]


def test_request_response_on_uvloop() -> None:
    if not install_uvloop():
        pytest.skip("uvloop is not installed")
    try:
        test_request_response()
    finally:
        asyncio.set_event_loop_policy(None)


@async_test
async def test_handler_finishes_after_the_client_hangs_up() -> None:
    started, gate, done = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def commit(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        started.set()
        await gate.wait()
        done.set()  # e.g. the offset got stored although nobody waits for the answer
        return make_response(request)

    async with serving() as (server, _, _addr):
        server.register(RequestCode.UPDATE_CONSUMER_OFFSET, commit)
        _, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(encode_command(make_request(RequestCode.UPDATE_CONSUMER_OFFSET)))
        await asyncio.wait_for(started.wait(), TIMEOUT)
        writer.close()
        await writer.wait_closed()
        gate.set()
        await asyncio.wait_for(done.wait(), TIMEOUT)


@async_test
async def test_a_client_that_does_not_read_its_answers_stops_being_read() -> None:
    handled = 0
    big = b"x" * (1 << 20)

    async def large(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        nonlocal handled
        handled += 1
        return make_response(request, body=big)

    requests = 64  # 64 MiB of answers: far beyond what the socket buffers hold
    async with serving(max_inflight=4) as (server, _, _addr):
        server.register(RequestCode.QUERY_MESSAGE, large)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port, limit=1 << 21)
        frames = [encode_command(make_request(RequestCode.QUERY_MESSAGE)) for _ in range(requests)]
        writer.write(b"".join(frames))
        await writer.drain()
        for _ in range(50):  # let the server get as far as it can
            await asyncio.sleep(0.02)
        stalled_at = handled
        assert stalled_at < requests // 2  # it stopped taking requests while its answers piled up
        decoder, answers = FrameDecoder(), 0
        while answers < requests:  # reading the answers lets it go on with the rest
            data = await asyncio.wait_for(reader.read(1 << 20), TIMEOUT)
            assert data, "connection closed before every answer arrived"
            answers += sum(1 for cmd in decoder.feed(data) if cmd.body == big)
        assert handled == requests
        writer.close()
