"""The asyncio adapter of the HTTP/2 protocol (:mod:`broker.grpc.http2`) on a transport that records
what it is told, no sockets: it stops reading while its answers wait for a client that does not read,
hands one connection at most its turn of frames before others get theirs, and closes idle connections."""

from __future__ import annotations

import asyncio
from typing import Any

from broker.grpc.http2 import FRAMES_PER_TURN, ConnectionLimits, Http2Connection, Stream
from broker.protocol.http2 import ACK, GOAWAY, NO_ERROR, PING, PREFACE, SETTINGS, StreamState, frame

PINGS = 3 * FRAMES_PER_TURN


class Transport:
    """What the connection wrote, and whether it reads."""

    def __init__(self) -> None:
        self.written = b""
        self.reading = True
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written += data

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5555) if name == "peername" else default

    def frames(self, kind: int) -> list[tuple[int, bytes]]:
        found, data = [], self.written
        while len(data) >= 9:
            length = int.from_bytes(data[:3], "big")
            if data[3] == kind:
                found.append((data[4], data[9 : 9 + length]))
            data = data[9 + length :]
        return found


def no_streams(connection: Http2Connection, state: StreamState, headers: Any) -> Stream:
    raise AssertionError("no stream expected")


def connect(limits: ConnectionLimits | None = None) -> tuple[Http2Connection, Transport]:
    connection = Http2Connection(no_streams, lambda _: None, limits)
    transport = Transport()
    connection.connection_made(transport)  # type: ignore[arg-type]
    connection.data_received(PREFACE + frame(SETTINGS, 0, 0))
    return connection, transport


async def turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_a_client_that_does_not_read_its_answers_is_not_read() -> None:
    async def go() -> None:
        connection, transport = connect()
        connection.pause_writing()  # the socket's send buffer is full
        assert not transport.reading
        connection.data_received(frame(PING, 0, 0, b"12345678"))  # what the kernel had already read
        await turns(3)
        assert not transport.reading and transport.frames(PING) == []
        connection.resume_writing()
        await turns(3)
        assert transport.reading and transport.frames(PING) == [(ACK, b"12345678")]

    asyncio.run(go())


def test_one_turn_takes_a_turn_of_frames_then_the_others_get_theirs() -> None:
    async def go() -> None:
        connection, transport = connect()
        connection.data_received(frame(PING, 0, 0, b"12345678") * PINGS)
        assert 0 < len(transport.frames(PING)) <= FRAMES_PER_TURN and not transport.reading
        await turns(PINGS)  # a turn may end sooner, after its time
        pongs = transport.frames(PING)
        assert len(pongs) == PINGS and all(flags == ACK for flags, _ in pongs)
        assert transport.reading

    asyncio.run(go())


def test_frames_left_over_wait_while_the_client_does_not_read() -> None:
    async def go() -> None:
        connection, transport = connect()
        connection.data_received(frame(PING, 0, 0, b"12345678") * PINGS)
        connection.pause_writing()
        answered = len(transport.frames(PING))
        await turns(5)
        assert len(transport.frames(PING)) == answered <= FRAMES_PER_TURN and not transport.reading
        connection.resume_writing()
        await turns(PINGS)
        assert len(transport.frames(PING)) == PINGS and transport.reading

    asyncio.run(go())


def test_an_idle_connection_is_closed_with_a_goaway() -> None:
    async def go() -> None:
        connection, transport = connect(ConnectionLimits(idle_timeout=60.0))
        now = asyncio.get_running_loop().time()
        connection.last_activity = now - 59.0  # activity a second ago postpones it
        connection._check_idle()
        assert not transport.closed
        connection.last_activity = now - 61.0
        connection._check_idle()
        assert transport.closed
        ((_, payload),) = transport.frames(GOAWAY)
        assert int.from_bytes(payload[4:8], "big") == NO_ERROR and payload[8:] == b"idle"

    asyncio.run(go())
