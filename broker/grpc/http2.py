"""HTTP/2 (RFC 9113) as a gRPC server needs it: one client connection's frames, streams and flow
control, on the broker's event loop.

The connection reads frames, keeps the HPACK state and the windows in both directions, and hands each
stream to a :class:`Stream` made by the server's ``open_stream``: its request headers, its DATA and
its end or reset. Streams write back through :meth:`Http2Connection.send_headers` and
:meth:`send_data`. Frames bound for the client are gathered and written once per loop turn, so the
answers to a burst of calls leave in one system call.

A client that breaks the protocol gets a GOAWAY with the RFC's error code and a readable reason, and
the connection closes; an error confined to one stream resets that stream only.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Callable
from typing import Any, Final, cast

from broker.grpc.hpack_codec import Header, HeaderDecoder, HpackError
from broker.remoting.channel import wake

log = logging.getLogger(__name__)

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# frame types
DATA: Final = 0
HEADERS: Final = 1
PRIORITY: Final = 2
RST_STREAM: Final = 3
SETTINGS: Final = 4
PUSH_PROMISE: Final = 5
PING: Final = 6
GOAWAY: Final = 7
WINDOW_UPDATE: Final = 8
CONTINUATION: Final = 9
# flags
END_STREAM: Final = 0x1
ACK: Final = 0x1
END_HEADERS: Final = 0x4
PADDED: Final = 0x8
PRIORITY_FLAG: Final = 0x20
# error codes
NO_ERROR: Final = 0x0
PROTOCOL_ERROR: Final = 0x1
INTERNAL_ERROR: Final = 0x2
FLOW_CONTROL_ERROR: Final = 0x3
STREAM_CLOSED: Final = 0x5
FRAME_SIZE_ERROR: Final = 0x6
REFUSED_STREAM: Final = 0x7
CANCEL: Final = 0x8
COMPRESSION_ERROR: Final = 0x9
ENHANCE_YOUR_CALM: Final = 0xB
# settings
HEADER_TABLE_SIZE: Final = 0x1
ENABLE_PUSH: Final = 0x2
MAX_CONCURRENT_STREAMS: Final = 0x3
INITIAL_WINDOW_SIZE: Final = 0x4
MAX_FRAME_SIZE: Final = 0x5
MAX_HEADER_LIST_SIZE: Final = 0x6

DEFAULT_WINDOW: Final = 65_535
DEFAULT_MAX_FRAME: Final = 16_384
MAX_WINDOW: Final = (1 << 31) - 1
RECEIVE_WINDOW: Final = 1 << 26  # what a client may send ahead, per stream and on the connection
MAX_FRAME: Final = 1 << 20  # the largest frame we accept (advertised)
MAX_STREAMS: Final = 1000  # concurrent calls per connection (advertised); more are refused
MAX_HEADER_BLOCK: Final = 1 << 16
OUR_SETTINGS: Final = (
    (MAX_CONCURRENT_STREAMS, MAX_STREAMS),
    (INITIAL_WINDOW_SIZE, RECEIVE_WINDOW),
    (MAX_FRAME_SIZE, MAX_FRAME),
    (MAX_HEADER_LIST_SIZE, MAX_HEADER_BLOCK),
)


class ConnectionFailure(Exception):
    """Ends the connection with GOAWAY(code)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code


class StreamFailure(Exception):
    """Resets one stream with RST_STREAM(code)."""

    def __init__(self, stream_id: int, code: int, reason: str) -> None:
        super().__init__(reason)
        self.stream_id = stream_id
        self.code = code


_FRAME_HEAD: Final = struct.Struct(">BHBBI")  # length (24 bits, as 8 + 16), type, flags, stream id


def frame_head(kind: int, flags: int, stream_id: int, length: int) -> bytes:
    return _FRAME_HEAD.pack(length >> 16, length & 0xFFFF, kind, flags, stream_id)


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return frame_head(kind, flags, stream_id, len(payload)) + payload


def _settings_payload(pairs: tuple[tuple[int, int], ...]) -> bytes:
    return b"".join(key.to_bytes(2, "big") + value.to_bytes(4, "big") for key, value in pairs)


SERVER_PREFACE: Final = frame(SETTINGS, 0, 0, _settings_payload(OUR_SETTINGS)) + frame(
    WINDOW_UPDATE, 0, 0, (RECEIVE_WINDOW - DEFAULT_WINDOW).to_bytes(4, "big")
)
SETTINGS_ACK: Final = frame(SETTINGS, ACK, 0)


class Stream:
    """One stream's HTTP/2 side; the gRPC call built on it overrides the ``on_*`` hooks."""

    def __init__(self, connection: Http2Connection, stream_id: int) -> None:
        self.connection = connection
        self.id = stream_id
        self.send_window = connection.peer_initial_window
        self.unacked = 0  # bytes received since the last WINDOW_UPDATE of this stream
        self.remote_closed = False
        self.local_closed = False

    def on_data(self, data: bytes) -> None:
        raise NotImplementedError

    def on_end(self) -> None:
        """The client half-closed the stream."""

    def on_reset(self) -> None:
        """The stream is gone (RST_STREAM, or the connection closed)."""


OpenStream = Callable[["Http2Connection", int, list[Header]], Stream]


def _holds_frame(buffer: bytearray) -> bool:
    """Whether ``buffer`` starts with a whole frame (or with the header of one too large to wait for)."""
    if len(buffer) < 9:
        return False
    length = (buffer[0] << 16) | (buffer[1] << 8) | buffer[2]
    return length > MAX_FRAME or len(buffer) >= 9 + length


class Http2Connection(asyncio.Protocol):
    def __init__(self, open_stream: OpenStream, on_closed: Callable[[Http2Connection], None]) -> None:
        self.open_stream = open_stream
        self.on_closed = on_closed
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()  # kept: each lookup costs a getpid() system call
        self.peer = ""
        self.buffer = bytearray()
        self.preface_seen = False
        self.decoder = HeaderDecoder(max_list_size=MAX_HEADER_BLOCK)
        self.streams: dict[int, Stream] = {}
        self.last_stream_id = 0
        self.continuing: tuple[int, int, bytearray] | None = None  # stream, HEADERS flags, block
        self.peer_initial_window = DEFAULT_WINDOW
        self.peer_max_frame = DEFAULT_MAX_FRAME
        self.send_window = DEFAULT_WINDOW
        self.receive_window = RECEIVE_WINDOW  # what the client may still send on the connection
        self.unacked = 0  # bytes consumed since the last connection WINDOW_UPDATE
        self.outgoing: list[bytes] = []
        self.flush_scheduled = False
        self.window_waiters: list[asyncio.Future[None]] = []
        self.writable: asyncio.Future[None] | None = None  # set while the transport is paused
        self.closing = False  # GOAWAY sent: no new streams
        self.closed = False

    # == asyncio.Protocol ======================================================================
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport
        self.peer = _peer_text(transport.get_extra_info("peername"))
        self.transport.write(SERVER_PREFACE)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            self._receive(data)
        except ConnectionFailure as exc:
            self.fail(exc.code, str(exc))
            return
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        streams, self.streams = self.streams, {}
        for stream in streams.values():
            stream.on_reset()
        self._wake(ConnectionResetError("the client closed the connection"))
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)
        self.on_closed(self)

    def pause_writing(self) -> None:
        if self.writable is None or self.writable.done():
            self.writable = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    # == reading ===============================================================================
    def _receive(self, data: bytes) -> None:
        buffer = self.buffer
        if buffer:  # a frame (or the preface) began in an earlier read: nothing to do until it is whole
            buffer += data
            if self.preface_seen and not _holds_frame(buffer):
                return
            data = bytes(buffer)
            buffer.clear()
        pos = 0
        if not self.preface_seen:
            if len(data) < len(PREFACE):
                if not PREFACE.startswith(data):
                    raise ConnectionFailure(PROTOCOL_ERROR, "not an HTTP/2 connection preface")
                buffer += data
                return
            if not data.startswith(PREFACE):
                raise ConnectionFailure(PROTOCOL_ERROR, "not an HTTP/2 connection preface")
            pos = len(PREFACE)
            self.preface_seen = True
        # payloads are cut straight from the read's bytes: one copy each
        available = len(data)
        while available - pos >= 9:
            length = (data[pos] << 16) | (data[pos + 1] << 8) | data[pos + 2]
            if length > MAX_FRAME:
                raise ConnectionFailure(FRAME_SIZE_ERROR, f"a frame of {length} bytes is over {MAX_FRAME}")
            if available - pos - 9 < length:
                break
            kind = data[pos + 3]
            flags = data[pos + 4]
            stream_id = (data[pos + 5] & 0x7F) << 24 | data[pos + 6] << 16
            stream_id |= data[pos + 7] << 8 | data[pos + 8]
            payload = data[pos + 9 : pos + 9 + length]
            pos += 9 + length
            try:
                self._frame(kind, flags, stream_id, payload)
            except StreamFailure as exc:
                self.reset(exc.stream_id, exc.code)
                log.debug("gRPC stream %d from %s reset: %s", exc.stream_id, self.peer, exc)
            if self.closed:
                return
        if pos < available:
            buffer += data[pos:]

    def _frame(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if self.continuing is not None and kind != CONTINUATION:
            raise ConnectionFailure(PROTOCOL_ERROR, "a header block was interrupted by another frame")
        if kind == DATA:
            self._data(flags, stream_id, payload)
        elif kind == HEADERS:
            self._headers(flags, stream_id, payload)
        elif kind == WINDOW_UPDATE:  # two with every call from grpcio clients
            self._window_update(stream_id, payload)
        elif kind == CONTINUATION:
            self._continuation(flags, stream_id, payload)
        elif kind == SETTINGS:
            self._settings(flags, stream_id, payload)
        elif kind == PING:
            if stream_id or len(payload) != 8:
                raise ConnectionFailure(FRAME_SIZE_ERROR if stream_id == 0 else PROTOCOL_ERROR, "a bad PING")
            if not flags & ACK:
                self.write(frame(PING, ACK, 0, payload))
        elif kind == RST_STREAM:
            if stream_id == 0 or len(payload) != 4:
                raise ConnectionFailure(PROTOCOL_ERROR, "a bad RST_STREAM")
            stream = self.streams.pop(stream_id, None)
            if stream is not None:
                stream.on_reset()
        elif kind == PRIORITY:
            if stream_id == 0:
                raise ConnectionFailure(PROTOCOL_ERROR, "PRIORITY on stream 0")
            if len(payload) != 5:
                raise StreamFailure(stream_id, FRAME_SIZE_ERROR, "a PRIORITY frame is 5 bytes")
        elif kind == GOAWAY:
            if stream_id:
                raise ConnectionFailure(PROTOCOL_ERROR, "GOAWAY on a stream")
            self.closing = True
        elif kind == PUSH_PROMISE:
            raise ConnectionFailure(PROTOCOL_ERROR, "a client may not push")
        # other frame types are ignored, as RFC 9113 5.5 requires

    @staticmethod
    def _unpad(flags: int, payload: bytes, stream_id: int) -> bytes:
        if not flags & PADDED:
            return payload
        if not payload or payload[0] >= len(payload):
            raise ConnectionFailure(PROTOCOL_ERROR, f"the padding of stream {stream_id} is too long")
        return payload[1 : len(payload) - payload[0]]

    def _data(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0:
            raise ConnectionFailure(PROTOCOL_ERROR, "DATA on stream 0")
        self.receive_window -= len(payload)
        if self.receive_window < 0:
            raise ConnectionFailure(FLOW_CONTROL_ERROR, "the client sent past the connection window")
        stream = self.streams.get(stream_id)
        if stream is None:
            self.consumed(len(payload))
            if stream_id > self.last_stream_id:
                raise ConnectionFailure(PROTOCOL_ERROR, f"DATA on idle stream {stream_id}")
            return  # a stream we reset or finished: the client may still be sending
        if stream.remote_closed:
            self.consumed(len(payload))
            raise StreamFailure(stream_id, STREAM_CLOSED, "DATA after the end of the stream")
        stream.unacked += len(payload)
        if stream.unacked > RECEIVE_WINDOW:
            raise StreamFailure(stream_id, FLOW_CONTROL_ERROR, "the client sent past the stream window")
        if stream.unacked >= RECEIVE_WINDOW // 2 and not flags & END_STREAM:
            self.write(frame(WINDOW_UPDATE, 0, stream_id, stream.unacked.to_bytes(4, "big")))
            stream.unacked = 0
        data = self._unpad(flags, payload, stream_id)
        self.consumed(len(payload) - len(data))  # the padding
        if data:
            stream.on_data(data)  # the stream reports the bytes consumed as it hands them on
        if flags & END_STREAM:
            self._remote_end(stream)

    def consumed(self, size: int) -> None:
        """``size`` received bytes are no longer held: the connection window opens again by them.

        Streams report bytes only once a whole message has gone to its handler (or was dropped), so
        the requests a connection holds in memory never exceed the window, however many streams."""
        self.unacked += size
        if self.unacked >= RECEIVE_WINDOW // 2:
            self.write(frame(WINDOW_UPDATE, 0, 0, self.unacked.to_bytes(4, "big")))
            self.receive_window += self.unacked
            self.unacked = 0

    def _headers(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0 or not stream_id & 1:
            raise ConnectionFailure(PROTOCOL_ERROR, f"HEADERS on stream {stream_id}, not a client stream")
        fragment = self._unpad(flags, payload, stream_id)
        if flags & PRIORITY_FLAG:
            if len(fragment) < 5:
                raise ConnectionFailure(FRAME_SIZE_ERROR, "HEADERS too short for its priority")
            fragment = fragment[5:]
        if flags & END_HEADERS:
            self._header_block(flags, stream_id, fragment)
        else:
            self.continuing = (stream_id, flags, bytearray(fragment))

    def _continuation(self, flags: int, stream_id: int, payload: bytes) -> None:
        if self.continuing is None or self.continuing[0] != stream_id:
            raise ConnectionFailure(PROTOCOL_ERROR, "CONTINUATION without the HEADERS it continues")
        block = self.continuing[2]
        block += payload
        if len(block) > MAX_HEADER_BLOCK:
            raise ConnectionFailure(ENHANCE_YOUR_CALM, f"a header block over {MAX_HEADER_BLOCK} bytes")
        if flags & END_HEADERS:
            first_flags = self.continuing[1]
            self.continuing = None
            self._header_block(first_flags, stream_id, bytes(block))

    def _header_block(self, flags: int, stream_id: int, block: bytes) -> None:
        try:  # always decoded, even for a refused stream, to keep the table in step with the client
            headers = self.decoder.decode(block)
        except HpackError as exc:
            raise ConnectionFailure(COMPRESSION_ERROR, str(exc)) from None
        stream = self.streams.get(stream_id)
        if stream is not None:  # trailers: gRPC clients send none, but they would end the stream
            if stream.remote_closed:
                raise StreamFailure(stream_id, STREAM_CLOSED, "HEADERS after the end of the stream")
            if not flags & END_STREAM:
                raise StreamFailure(stream_id, PROTOCOL_ERROR, "a second header block without END_STREAM")
            self._remote_end(stream)
            return
        if stream_id <= self.last_stream_id:
            raise ConnectionFailure(STREAM_CLOSED, f"HEADERS on closed stream {stream_id}")
        self.last_stream_id = stream_id
        if self.closing:
            raise StreamFailure(stream_id, REFUSED_STREAM, "the server is going away")
        if len(self.streams) >= MAX_STREAMS:
            raise StreamFailure(stream_id, REFUSED_STREAM, f"over {MAX_STREAMS} concurrent streams")
        stream = self.open_stream(self, stream_id, headers)
        if not stream.local_closed:
            self.streams[stream_id] = stream
        if flags & END_STREAM:
            self._remote_end(stream)

    def _remote_end(self, stream: Stream) -> None:
        stream.remote_closed = True
        if stream.local_closed:
            self.streams.pop(stream.id, None)
        stream.on_end()

    def _settings(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id:
            raise ConnectionFailure(PROTOCOL_ERROR, "SETTINGS on a stream")
        if flags & ACK:
            if payload:
                raise ConnectionFailure(FRAME_SIZE_ERROR, "a SETTINGS acknowledgement with a payload")
            return
        if len(payload) % 6:
            raise ConnectionFailure(FRAME_SIZE_ERROR, "SETTINGS not a multiple of 6 bytes")
        for at in range(0, len(payload), 6):
            key = int.from_bytes(payload[at : at + 2], "big")
            value = int.from_bytes(payload[at + 2 : at + 6], "big")
            if key == INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise ConnectionFailure(FLOW_CONTROL_ERROR, f"an initial window of {value}")
                delta = value - self.peer_initial_window
                self.peer_initial_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
            elif key == MAX_FRAME_SIZE:
                if not DEFAULT_MAX_FRAME <= value < 1 << 24:
                    raise ConnectionFailure(PROTOCOL_ERROR, f"a maximum frame size of {value}")
                self.peer_max_frame = value
            elif key == ENABLE_PUSH and value > 1:
                raise ConnectionFailure(PROTOCOL_ERROR, f"ENABLE_PUSH of {value}")
            # the client's table size matters not: answers never use the dynamic table
        self.write(SETTINGS_ACK)
        if self.window_waiters:
            self._wake(None)

    def _window_update(self, stream_id: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise ConnectionFailure(FRAME_SIZE_ERROR, "a WINDOW_UPDATE is 4 bytes")
        increment = int.from_bytes(payload, "big") & 0x7FFFFFFF
        if stream_id == 0:
            if increment == 0:
                raise ConnectionFailure(PROTOCOL_ERROR, "a connection WINDOW_UPDATE of 0")
            self.send_window += increment
            if self.send_window > MAX_WINDOW:
                raise ConnectionFailure(FLOW_CONTROL_ERROR, "the connection window is over 2^31-1")
        else:
            stream = self.streams.get(stream_id)
            if stream is None:
                return
            if increment == 0:
                raise StreamFailure(stream_id, PROTOCOL_ERROR, "a stream WINDOW_UPDATE of 0")
            stream.send_window += increment
            if stream.send_window > MAX_WINDOW:
                raise StreamFailure(stream_id, FLOW_CONTROL_ERROR, "the stream window is over 2^31-1")
        if self.window_waiters:
            self._wake(None)

    # == writing ===============================================================================
    def write(self, data: bytes) -> None:
        """Queues bytes for the client; they leave at the end of this loop turn."""
        self.outgoing.append(data)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self.flush_scheduled = False
        if self.outgoing and self.transport is not None and not self.closed:
            data = b"".join(self.outgoing) if len(self.outgoing) > 1 else self.outgoing[0]
            self.transport.write(data)
        self.outgoing.clear()

    def send_headers(self, stream: Stream, block: bytes, *, end_stream: bool = False) -> None:
        if stream.local_closed or self.closed:
            return
        self.write(frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream.id, block))
        if end_stream:
            self._local_end(stream)

    def send_ready(self, stream: Stream, size: int) -> bool:
        """Whether ``size`` bytes of DATA fit the windows now."""
        writable = self.writable is None or self.writable.done()
        return size <= self.send_window and size <= stream.send_window and writable

    def send_now(self, stream: Stream, data: bytes) -> None:
        """DATA that :meth:`send_ready` said fits."""
        self.write(b"".join(self._data_frames(stream, data)))

    def _data_frames(self, stream: Stream, data: bytes) -> list[bytes]:
        """The DATA frames (heads and payloads) that carry ``data``, its size taken off the windows."""
        self.send_window -= len(data)
        stream.send_window -= len(data)
        limit = self.peer_max_frame
        if len(data) <= limit:
            return [frame_head(DATA, 0, stream.id, len(data)), data]
        parts: list[bytes] = []
        for at in range(0, len(data), limit):
            chunk = data[at : at + limit]
            parts.append(frame_head(DATA, 0, stream.id, len(chunk)))
            parts.append(chunk)
        return parts

    def send_answer(self, stream: Stream, headers: bytes, data: bytes, trailers: bytes) -> None:
        """A whole answer in one write: headers, DATA that :meth:`send_ready` said fits, and the
        trailers that end the stream (a unary call's answer, the busiest writes)."""
        if stream.local_closed or self.closed:
            return
        sid = stream.id
        parts = [frame_head(HEADERS, END_HEADERS, sid, len(headers)), headers]
        parts += self._data_frames(stream, data)
        parts += (frame_head(HEADERS, END_HEADERS | END_STREAM, sid, len(trailers)), trailers)
        self.write(b"".join(parts))
        self._local_end(stream)

    async def send_data(self, stream: Stream, data: bytes) -> None:
        """DATA as the windows allow, waiting for the client's WINDOW_UPDATEs (and for the socket to
        drain) in between."""
        at = 0
        while at < len(data):
            if self.closed or stream.local_closed:
                raise ConnectionResetError("the stream is closed")
            if self.writable is not None and not self.writable.done():
                await self.writable
                continue
            room = min(self.send_window, stream.send_window, len(data) - at)
            if room <= 0:
                waiter = self.loop.create_future()
                self.window_waiters.append(waiter)
                await waiter
                continue
            self.send_now(stream, data[at : at + room])
            at += room

    def _wake(self, error: Exception | None) -> None:
        waiters, self.window_waiters = self.window_waiters, []
        wake(waiters, error)

    def _local_end(self, stream: Stream) -> None:
        stream.local_closed = True
        if stream.remote_closed:
            self.streams.pop(stream.id, None)
        else:  # gRPC: the answer is complete, the client's side of the stream is not needed
            self.reset(stream.id, NO_ERROR)

    def reset(self, stream_id: int, code: int) -> None:
        stream = self.streams.pop(stream_id, None)
        if stream is not None:
            stream.local_closed = True
            stream.on_reset()
        if not self.closed:
            self.write(frame(RST_STREAM, 0, stream_id, code.to_bytes(4, "big")))

    def go_away(self, code: int = NO_ERROR, reason: str = "") -> None:
        """Accepts no new streams; the ones open go on."""
        if self.closed or (self.closing and code == NO_ERROR):
            return
        self.closing = True
        debug = reason.encode("utf-8", "replace")[:256]
        self.write(
            frame(GOAWAY, 0, 0, self.last_stream_id.to_bytes(4, "big") + code.to_bytes(4, "big") + debug)
        )

    def fail(self, code: int, reason: str) -> None:
        log.warning("gRPC connection from %s closed: %s", self.peer, reason)
        self.go_away(code, reason)
        self.flush()
        if self.transport is not None:
            self.transport.close()
        self.closed = True

    def close(self) -> None:
        self.flush()
        if self.transport is not None:
            self.transport.close()


def _peer_text(name: Any) -> str:
    """gRPC's peer notation: ``ipv4:1.2.3.4:5`` or ``ipv6:[::1]:5``."""
    if isinstance(name, tuple) and len(name) >= 2:
        host, port = str(name[0]), name[1]
        return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"
    return str(name or "")
