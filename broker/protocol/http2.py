"""HTTP/2 (RFC 9113) as a gRPC server needs it, sans-IO: bytes in, events and bytes out.

:class:`ServerConnection` is one client connection's protocol state: the frames, the HPACK decoder,
the streams and the flow-control windows in both directions, and the limits a client must keep
within. It never touches a socket or a clock of its own: the caller feeds what it read
(:meth:`~ServerConnection.receive_data`), asks for the events of at most so many frames
(:meth:`~ServerConnection.events`, given the time), and writes what :meth:`~ServerConnection.data_to_send`
returns. The asyncio adapter (``broker.grpc.http2``) is that caller, and tests feed it bytes directly.

Rules, in the order a frame meets them:

* The preface, then frames no longer than :data:`MAX_FRAME` (FRAME_SIZE_ERROR beyond).
* A header block (HEADERS and its CONTINUATIONs) may not be interrupted and may not grow past twice the
  announced SETTINGS_MAX_HEADER_LIST_SIZE (ENHANCE_YOUR_CALM, counted as each fragment arrives); its
  decoded list may not pass that size (COMPRESSION_ERROR, counted field by field as they decode).
* At most ``max_concurrent_streams`` streams are open (announced); a HEADERS beyond gets REFUSED_STREAM.
* PING, SETTINGS, WINDOW_UPDATE, RST_STREAM, PRIORITY and unknown frames, and frames that carry nothing
  (an empty DATA without END_STREAM, an empty CONTINUATION), each draw on a budget of their own: a burst,
  refilled at a steady rate and by every stream the client opens (work the control frames belong to).
  A client that spends one out gets GOAWAY(ENHANCE_YOUR_CALM) and the connection ends.
* What a client may send ahead is its window: 64 MiB on the connection and per stream. The connection
  window opens again only as the application reports bytes consumed (:meth:`acknowledge`), so the
  request bytes a connection holds never exceed it.

A client that breaks the protocol gets a GOAWAY with the RFC's error code and a readable reason, then a
:class:`ConnectionEnded` event; the connection stays ended. An error confined to one stream resets that
stream only (RST_STREAM, and a :class:`StreamReset` event).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Final

from broker.protocol.hpack_codec import Header, HeaderDecoder, HpackError

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


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client connection may make the server hold or do (the broker's ``grpc*`` settings)."""

    max_concurrent_streams: int = 256  # announced; HEADERS beyond get REFUSED_STREAM
    max_header_list_size: int = 16 * 1024  # announced; the decoded list, RFC 7541 sizes
    control_frame_burst: int = 1000  # per kind of control frame
    control_frames_per_second: float = 100.0  # the steady refill of each budget
    control_frames_per_stream: int = 4  # what each stream the client opens adds to every budget


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


def settings_payload(pairs: tuple[tuple[int, int], ...]) -> bytes:
    return b"".join(key.to_bytes(2, "big") + value.to_bytes(4, "big") for key, value in pairs)


SETTINGS_ACK: Final = frame(SETTINGS, ACK, 0)


class Budget:
    """A token bucket: ``burst`` frames at once, refilled at ``rate`` a second and by ``per_stream``
    for each stream opened (counted by the connection, collected when a frame is charged)."""

    __slots__ = ("burst", "per_stream", "rate", "stamp", "streams", "tokens")

    def __init__(self, burst: int, rate: float, per_stream: int) -> None:
        self.burst = float(burst)
        self.rate = rate
        self.per_stream = per_stream
        self.tokens = float(burst)
        self.stamp = 0.0
        self.streams = 0  # the connection's streams opened when this budget last refilled

    def take(self, now: float, streams: int) -> bool:
        tokens = self.tokens + (streams - self.streams) * self.per_stream
        if now > self.stamp:
            tokens += (now - self.stamp) * self.rate
        self.stamp = now
        self.streams = streams
        if tokens < 1.0:
            self.tokens = tokens
            return False
        self.tokens = min(tokens, self.burst) - 1.0
        return True


# the budgets' names, as the GOAWAY's reason gives them
_BUDGETED: Final = ("PING", "SETTINGS", "WINDOW_UPDATE", "RST_STREAM", "PRIORITY or unknown", "empty")
_PING, _SETTINGS, _WINDOW_UPDATE, _RST_STREAM, _OTHER, _EMPTY = range(6)


class StreamState:
    """One stream's HTTP/2 side; ``owner`` is what the application keeps on it (its gRPC call)."""

    __slots__ = ("id", "local_closed", "owner", "remote_closed", "send_window", "unacked")

    def __init__(self, stream_id: int, send_window: int) -> None:
        self.id = stream_id
        self.send_window = send_window
        self.unacked = 0  # bytes received since the last WINDOW_UPDATE of this stream
        self.remote_closed = False
        self.local_closed = False
        self.owner: Any = None


# == events =======================================================================================
class RequestReceived:
    """A new stream's header block (``end_stream``: the request has no body)."""

    __slots__ = ("end_stream", "headers", "stream")

    def __init__(self, stream: StreamState, headers: list[Header], end_stream: bool) -> None:
        self.stream = stream
        self.headers = headers
        self.end_stream = end_stream


class DataReceived:
    """DATA of a stream; its bytes count against the connection window until :meth:`acknowledge`."""

    __slots__ = ("data", "end_stream", "stream")

    def __init__(self, stream: StreamState, data: bytes, end_stream: bool) -> None:
        self.stream = stream
        self.data = data
        self.end_stream = end_stream


class StreamEnded:
    """The client half-closed the stream without data (empty DATA or trailers with END_STREAM)."""

    __slots__ = ("stream",)

    def __init__(self, stream: StreamState) -> None:
        self.stream = stream


class StreamReset:
    """The stream is gone: the client reset it, or the server did for a stream error."""

    __slots__ = ("code", "stream")

    def __init__(self, stream: StreamState, code: int) -> None:
        self.stream = stream
        self.code = code


class ConnectionEnded:
    """The server closed the connection for a protocol error (its GOAWAY is in the data to send)."""

    __slots__ = ("code", "reason")

    def __init__(self, code: int, reason: str) -> None:
        self.code = code
        self.reason = reason


Event = RequestReceived | DataReceived | StreamEnded | StreamReset | ConnectionEnded


class ServerConnection:
    """The server side of one HTTP/2 connection."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits = limits or Limits()
        self.decoder = HeaderDecoder(max_list_size=limits.max_header_list_size)
        self.max_header_block = 2 * limits.max_header_list_size  # Huffman may code a byte in 30 bits
        self.buffer = b""
        self.pos = 0  # where the unread part of ``buffer`` starts
        self.preface_seen = False
        self.streams: dict[int, StreamState] = {}
        self.last_stream_id = 0
        self.continuing: tuple[int, int, bytearray] | None = None  # stream, HEADERS flags, block
        self.peer_initial_window = DEFAULT_WINDOW
        self.peer_max_frame = DEFAULT_MAX_FRAME
        self.send_window = DEFAULT_WINDOW
        self.receive_window = RECEIVE_WINDOW  # what the client may still send on the connection
        self.unacked = 0  # bytes consumed since the last connection WINDOW_UPDATE
        self.windows_opened = False  # a WINDOW_UPDATE or SETTINGS may let waiting DATA go
        burst, rate = limits.control_frame_burst, limits.control_frames_per_second
        self.budgets = [Budget(burst, rate, limits.control_frames_per_stream) for _ in _BUDGETED]
        self.streams_opened = 0
        self.outgoing: list[bytes] = []
        self.closing = False  # GOAWAY sent or received: no new streams
        self.ended = False
        self.now = 0.0
        ours = (
            (MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams),
            (INITIAL_WINDOW_SIZE, RECEIVE_WINDOW),
            (MAX_FRAME_SIZE, MAX_FRAME),
            (MAX_HEADER_LIST_SIZE, limits.max_header_list_size),
        )
        self.outgoing.append(
            frame(SETTINGS, 0, 0, settings_payload(ours))
            + frame(WINDOW_UPDATE, 0, 0, (RECEIVE_WINDOW - DEFAULT_WINDOW).to_bytes(4, "big"))
        )

    # == bytes in =================================================================================
    @property
    def buffered(self) -> int:
        """Bytes received but not yet turned into events."""
        return len(self.buffer) - self.pos

    def receive_data(self, data: bytes) -> None:
        """Takes what the socket gave; :meth:`events` turns it into events."""
        if self.pos < len(self.buffer):
            self.buffer = self.buffer[self.pos :] + data
        else:
            self.buffer = data
        self.pos = 0

    def events(self, now: float, max_frames: int) -> list[Event]:
        """The events of at most ``max_frames`` whole frames received (fewer when fewer are whole)."""
        events: list[Event] = []
        if self.ended:
            return events
        self.now = now
        try:
            self._frames(events, max_frames)
        except ConnectionFailure as exc:
            self.end(exc.code, str(exc))
            events.append(ConnectionEnded(exc.code, str(exc)))
        return events

    def has_frame(self) -> bool:
        """Whether a whole frame (or one too large to wait for) is waiting for :meth:`events`."""
        buffer, pos = self.buffer, self.pos
        if not self.preface_seen:  # whole, or already not the preface
            return len(buffer) - pos >= len(PREFACE) or not PREFACE.startswith(buffer[pos:])
        if len(buffer) - pos < 9:
            return False
        length = (buffer[pos] << 16) | (buffer[pos + 1] << 8) | buffer[pos + 2]
        return length > MAX_FRAME or len(buffer) - pos >= 9 + length

    def _frames(self, events: list[Event], max_frames: int) -> None:
        data = self.buffer
        pos = self.pos
        if not self.preface_seen:
            if len(data) - pos < len(PREFACE):
                if not PREFACE.startswith(data[pos:]):
                    raise ConnectionFailure(PROTOCOL_ERROR, "not an HTTP/2 connection preface")
                return
            if not data.startswith(PREFACE, pos):
                raise ConnectionFailure(PROTOCOL_ERROR, "not an HTTP/2 connection preface")
            pos += len(PREFACE)
            self.pos = pos
            self.preface_seen = True
        # payloads are cut straight from the read's bytes: one copy each
        available = len(data)
        done = 0
        while available - pos >= 9 and done < max_frames:
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
            self.pos = pos
            done += 1
            try:
                self._frame(events, kind, flags, stream_id, payload)
            except StreamFailure as exc:
                self._reset(events, exc.stream_id, exc.code)
        if pos >= available:  # all read: let the read's bytes go
            self.buffer = b""
            self.pos = 0

    def _charge(self, budget: int) -> None:
        if not self.budgets[budget].take(self.now, self.streams_opened):
            raise ConnectionFailure(
                ENHANCE_YOUR_CALM,
                f"too many {_BUDGETED[budget]} frames ({self.limits.control_frame_burst} "
                f"at once, {self.limits.control_frames_per_second:g} a second)",
            )

    def _frame(self, events: list[Event], kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if self.continuing is not None and kind != CONTINUATION:
            raise ConnectionFailure(PROTOCOL_ERROR, "a header block was interrupted by another frame")
        if kind == DATA:
            self._data(events, flags, stream_id, payload)
        elif kind == HEADERS:
            self._headers(events, flags, stream_id, payload)
        elif kind == WINDOW_UPDATE:  # two with every call from grpcio clients
            self._charge(_WINDOW_UPDATE)
            self._window_update(stream_id, payload)
        elif kind == CONTINUATION:
            self._continuation(events, flags, stream_id, payload)
        elif kind == SETTINGS:
            self._charge(_SETTINGS)
            self._settings(flags, stream_id, payload)
        elif kind == PING:
            self._charge(_PING)
            if stream_id or len(payload) != 8:
                raise ConnectionFailure(FRAME_SIZE_ERROR if stream_id == 0 else PROTOCOL_ERROR, "a bad PING")
            if not flags & ACK:
                self.outgoing.append(frame(PING, ACK, 0, payload))
        elif kind == RST_STREAM:
            self._charge(_RST_STREAM)
            if stream_id == 0 or len(payload) != 4:
                raise ConnectionFailure(PROTOCOL_ERROR, "a bad RST_STREAM")
            if stream_id > self.last_stream_id:
                raise ConnectionFailure(PROTOCOL_ERROR, f"RST_STREAM on idle stream {stream_id}")
            stream = self.streams.pop(stream_id, None)
            if stream is not None:
                stream.local_closed = stream.remote_closed = True
                events.append(StreamReset(stream, int.from_bytes(payload, "big")))
        elif kind == GOAWAY:
            self._charge(_OTHER)
            if stream_id:
                raise ConnectionFailure(PROTOCOL_ERROR, "GOAWAY on a stream")
            self.closing = True
        elif kind == PRIORITY:
            self._charge(_OTHER)
            if stream_id == 0:
                raise ConnectionFailure(PROTOCOL_ERROR, "PRIORITY on stream 0")
            if len(payload) != 5:
                raise StreamFailure(stream_id, FRAME_SIZE_ERROR, "a PRIORITY frame is 5 bytes")
        elif kind == PUSH_PROMISE:
            raise ConnectionFailure(PROTOCOL_ERROR, "a client may not push")
        else:  # other frame types are ignored, as RFC 9113 5.5 requires, within their budget
            self._charge(_OTHER)

    @staticmethod
    def _unpad(flags: int, payload: bytes, stream_id: int) -> bytes:
        if not flags & PADDED:
            return payload
        if not payload or payload[0] >= len(payload):
            raise ConnectionFailure(PROTOCOL_ERROR, f"the padding of stream {stream_id} is too long")
        return payload[1 : len(payload) - payload[0]]

    def _data(self, events: list[Event], flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0:
            raise ConnectionFailure(PROTOCOL_ERROR, "DATA on stream 0")
        end_stream = flags & END_STREAM
        if not payload and not end_stream:
            self._charge(_EMPTY)
        self.receive_window -= len(payload)
        if self.receive_window < 0:
            raise ConnectionFailure(FLOW_CONTROL_ERROR, "the client sent past the connection window")
        stream = self.streams.get(stream_id)
        if stream is None:
            self.acknowledge(len(payload))
            if stream_id > self.last_stream_id:
                raise ConnectionFailure(PROTOCOL_ERROR, f"DATA on idle stream {stream_id}")
            return  # a stream we reset or finished: the client may still be sending
        if stream.remote_closed:
            self.acknowledge(len(payload))
            raise StreamFailure(stream_id, STREAM_CLOSED, "DATA after the end of the stream")
        stream.unacked += len(payload)
        if stream.unacked > RECEIVE_WINDOW:
            raise StreamFailure(stream_id, FLOW_CONTROL_ERROR, "the client sent past the stream window")
        if stream.unacked >= RECEIVE_WINDOW // 2 and not end_stream:
            self.outgoing.append(frame(WINDOW_UPDATE, 0, stream_id, stream.unacked.to_bytes(4, "big")))
            stream.unacked = 0
        data = self._unpad(flags, payload, stream_id)
        if len(data) != len(payload):
            self.acknowledge(len(payload) - len(data))  # the padding
        if end_stream:
            self._remote_end(stream)
        if data:
            events.append(DataReceived(stream, data, bool(end_stream)))
        elif end_stream:
            events.append(StreamEnded(stream))

    def acknowledge(self, size: int) -> None:
        """``size`` received bytes are no longer held: the connection window opens again by them.

        The application reports bytes only once a whole message has gone to its handler (or was
        dropped), so the requests a connection holds in memory never exceed the window."""
        self.unacked += size
        if self.unacked >= RECEIVE_WINDOW // 2:
            self.outgoing.append(frame(WINDOW_UPDATE, 0, 0, self.unacked.to_bytes(4, "big")))
            self.receive_window += self.unacked
            self.unacked = 0

    def _headers(self, events: list[Event], flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0 or not stream_id & 1:
            raise ConnectionFailure(PROTOCOL_ERROR, f"HEADERS on stream {stream_id}, not a client stream")
        fragment = self._unpad(flags, payload, stream_id)
        if flags & PRIORITY_FLAG:
            if len(fragment) < 5:
                raise ConnectionFailure(FRAME_SIZE_ERROR, "HEADERS too short for its priority")
            fragment = fragment[5:]
        self._check_block_size(len(fragment))
        if flags & END_HEADERS:
            self._header_block(events, flags, stream_id, fragment)
        else:
            if not fragment:
                self._charge(_EMPTY)
            self.continuing = (stream_id, flags, bytearray(fragment))

    def _check_block_size(self, size: int) -> None:
        if size > self.max_header_block:
            raise ConnectionFailure(ENHANCE_YOUR_CALM, f"a header block over {self.max_header_block} bytes")

    def _continuation(self, events: list[Event], flags: int, stream_id: int, payload: bytes) -> None:
        if self.continuing is None or self.continuing[0] != stream_id:
            raise ConnectionFailure(PROTOCOL_ERROR, "CONTINUATION without the HEADERS it continues")
        if not payload and not flags & END_HEADERS:
            self._charge(_EMPTY)
        block = self.continuing[2]
        self._check_block_size(len(block) + len(payload))
        block += payload
        if flags & END_HEADERS:
            first_flags = self.continuing[1]
            self.continuing = None
            self._header_block(events, first_flags, stream_id, bytes(block))

    def _header_block(self, events: list[Event], flags: int, stream_id: int, block: bytes) -> None:
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
            events.append(StreamEnded(stream))
            return
        if stream_id <= self.last_stream_id:
            raise ConnectionFailure(STREAM_CLOSED, f"HEADERS on closed stream {stream_id}")
        self.last_stream_id = stream_id
        if self.closing:
            raise StreamFailure(stream_id, REFUSED_STREAM, "the server is going away")
        limit = self.limits.max_concurrent_streams
        if len(self.streams) >= limit:
            raise StreamFailure(stream_id, REFUSED_STREAM, f"over {limit} concurrent streams")
        self.streams_opened += 1  # the budgets collect what it earns when next charged
        stream = StreamState(stream_id, self.peer_initial_window)
        self.streams[stream_id] = stream
        end_stream = bool(flags & END_STREAM)
        if end_stream:
            stream.remote_closed = True
        events.append(RequestReceived(stream, headers, end_stream))

    def _remote_end(self, stream: StreamState) -> None:
        stream.remote_closed = True
        if stream.local_closed:
            self.streams.pop(stream.id, None)

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
        self.outgoing.append(SETTINGS_ACK)
        self.windows_opened = True

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
        self.windows_opened = True

    # == bytes out ================================================================================
    def data_to_send(self) -> bytes:
        """Everything queued for the client since the last call, as one write."""
        outgoing = self.outgoing
        if not outgoing:
            return b""
        data = b"".join(outgoing) if len(outgoing) > 1 else outgoing[0]
        outgoing.clear()
        return data

    def send_headers(self, stream: StreamState, block: bytes, *, end_stream: bool = False) -> None:
        if stream.local_closed or self.ended:
            return
        self.outgoing.append(
            frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream.id, block)
        )
        if end_stream:
            self._local_end(stream)

    def send_room(self, stream: StreamState) -> int:
        """How many bytes of DATA the windows let the stream send now."""
        return min(self.send_window, stream.send_window)

    def send_data(self, stream: StreamState, data: bytes) -> None:
        """DATA that :meth:`send_room` said fits."""
        self.outgoing.append(b"".join(self._data_frames(stream, data)))

    def _data_frames(self, stream: StreamState, data: bytes) -> list[bytes]:
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

    def send_answer(self, stream: StreamState, headers: bytes, data: bytes, trailers: bytes) -> None:
        """A whole answer: headers, DATA that :meth:`send_room` said fits, and the trailers that end
        the stream (a unary call's answer, the busiest writes)."""
        if stream.local_closed or self.ended:
            return
        sid = stream.id
        parts = [frame_head(HEADERS, END_HEADERS, sid, len(headers)), headers]
        parts += self._data_frames(stream, data)
        parts += (frame_head(HEADERS, END_HEADERS | END_STREAM, sid, len(trailers)), trailers)
        self.outgoing.append(b"".join(parts))
        self._local_end(stream)

    def _local_end(self, stream: StreamState) -> None:
        stream.local_closed = True
        if stream.remote_closed:
            self.streams.pop(stream.id, None)
        else:  # gRPC: the answer is complete, the client's side of the stream is not needed
            self.reset(stream, NO_ERROR)

    def reset(self, stream: StreamState, code: int) -> None:
        """Resets a stream the server is done with (no event: the caller knows)."""
        self.streams.pop(stream.id, None)
        stream.local_closed = True
        if not self.ended:
            self.outgoing.append(frame(RST_STREAM, 0, stream.id, code.to_bytes(4, "big")))

    def _reset(self, events: list[Event], stream_id: int, code: int) -> None:
        stream = self.streams.get(stream_id)
        if stream is not None:
            self.reset(stream, code)
            events.append(StreamReset(stream, code))
        elif not self.ended:
            self.outgoing.append(frame(RST_STREAM, 0, stream_id, code.to_bytes(4, "big")))

    def go_away(self, code: int = NO_ERROR, reason: str = "") -> None:
        """Accepts no new streams; the ones open go on."""
        if self.ended or (self.closing and code == NO_ERROR):
            return
        self.closing = True
        debug = reason.encode("utf-8", "replace")[:256]
        self.outgoing.append(
            frame(GOAWAY, 0, 0, self.last_stream_id.to_bytes(4, "big") + code.to_bytes(4, "big") + debug)
        )

    def end(self, code: int, reason: str) -> None:
        """Ends the connection with GOAWAY(code); nothing more is read or sent after it."""
        self.go_away(code, reason)
        self.ended = True
        self.buffer = b""
        self.pos = 0
