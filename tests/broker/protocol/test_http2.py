"""The sans-IO HTTP/2 server connection (:mod:`broker.protocol.http2`) fed bytes directly: every limit
a client can run into (control-frame budgets, header block and list sizes, concurrent streams, the
connection window, frames per turn) ends the connection or the stream the way the RFC asks, as the
bytes arrive, and a client within them is served."""

from __future__ import annotations

import hpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.protocol.hpack_codec import literal
from broker.protocol.http2 import (
    ACK,
    COMPRESSION_ERROR,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    GOAWAY,
    HEADERS,
    MAX_CONCURRENT_STREAMS,
    MAX_HEADER_LIST_SIZE,
    PING,
    PREFACE,
    PRIORITY,
    RECEIVE_WINDOW,
    REFUSED_STREAM,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    ConnectionEnded,
    DataReceived,
    Event,
    Limits,
    RequestReceived,
    ServerConnection,
    StreamReset,
    frame,
)

LIMITS = Limits(max_concurrent_streams=8, max_header_list_size=1024, control_frame_burst=20,
                control_frames_per_second=10.0, control_frames_per_stream=4)  # fmt: skip
REQUEST = (
    literal(b":method", b"POST")
    + literal(b":path", b"/test.Echo/Echo")
    + literal(b"content-type", b"application/grpc")
)


def frames_of(data: bytes) -> list[tuple[int, int, int, bytes]]:
    """(type, flags, stream id, payload) of each frame the server wrote."""
    out = []
    while data:
        length = int.from_bytes(data[:3], "big")
        out.append((data[3], data[4], int.from_bytes(data[5:9], "big") & 0x7FFFFFFF, data[9 : 9 + length]))
        data = data[9 + length :]
    return out


def goaway_code(data: bytes) -> int | None:
    codes = [int.from_bytes(p[4:8], "big") for kind, _, _, p in frames_of(data) if kind == GOAWAY]
    return codes[-1] if codes else None


class Client:
    """Bytes as a client would send them, into one server connection, at a clock the test moves."""

    def __init__(self, limits: Limits = LIMITS) -> None:
        self.server = ServerConnection(limits)
        self.now = 1000.0
        self.next_stream = 1
        self.send(PREFACE + frame(SETTINGS, 0, 0))

    def send(self, data: bytes, max_frames: int = 1 << 30) -> list[Event]:
        self.server.receive_data(data)
        return self.server.events(self.now, max_frames)

    def call(self, end_stream: bool = True) -> tuple[int, list[Event]]:
        stream_id = self.next_stream
        self.next_stream += 2
        flags = END_HEADERS | (END_STREAM if end_stream else 0)
        return stream_id, self.send(frame(HEADERS, flags, stream_id, REQUEST))

    def written(self) -> bytes:
        return self.server.data_to_send()


def ended(events: list[Event]) -> ConnectionEnded:
    assert events and isinstance(events[-1], ConnectionEnded), events
    return events[-1]


def test_the_server_announces_its_limits() -> None:
    server = ServerConnection(LIMITS)
    kind, _, _, payload = frames_of(server.data_to_send())[0]
    assert kind == SETTINGS
    announced = {int.from_bytes(payload[i : i + 2], "big"): int.from_bytes(payload[i + 2 : i + 6], "big")
                 for i in range(0, len(payload), 6)}  # fmt: skip
    assert announced[MAX_CONCURRENT_STREAMS] == 8
    assert announced[MAX_HEADER_LIST_SIZE] == 1024


def test_a_request_becomes_events() -> None:
    client = Client()
    stream_id, events = client.call(end_stream=False)
    assert isinstance(events[0], RequestReceived) and (b":path", b"/test.Echo/Echo") in events[0].headers
    events = client.send(frame(DATA, END_STREAM, stream_id, b"\0\0\0\0\x02hi"))
    assert isinstance(events[0], DataReceived) and events[0].end_stream
    assert events[0].data == b"\0\0\0\0\x02hi"


FLOODS = {
    "PING": frame(PING, 0, 0, b"12345678"),
    "PING ACK": frame(PING, ACK, 0, b"12345678"),
    "SETTINGS": frame(SETTINGS, 0, 0),
    "SETTINGS ACK": frame(SETTINGS, ACK, 0),
    "WINDOW_UPDATE": frame(WINDOW_UPDATE, 0, 0, (1).to_bytes(4, "big")),
    "RST_STREAM": frame(RST_STREAM, 0, 1, (8).to_bytes(4, "big")),  # on a stream long closed
    "PRIORITY": frame(PRIORITY, 0, 3, b"\0\0\0\0\x10"),
    "unknown": frame(0x42, 0, 0, b"x"),
    "empty DATA": frame(DATA, 0, 1, b""),
}


@pytest.mark.parametrize("flood", FLOODS.values(), ids=FLOODS.keys())
def test_a_control_frame_flood_is_told_to_calm_down(flood: bytes) -> None:
    client = Client()
    _, events = client.call(end_stream=False)  # stream 1 stays open for the empty DATA
    client.written()
    events = client.send(flood * 100)
    failure = ended(events)
    assert failure.code == ENHANCE_YOUR_CALM and "too many" in failure.reason
    assert goaway_code(client.written()) == ENHANCE_YOUR_CALM
    assert client.send(frame(PING, 0, 0, b"12345678")) == []  # ended for good: nothing more is read
    assert client.written() == b""


def test_empty_continuations_are_told_to_calm_down() -> None:
    client = Client()
    events = client.send(frame(HEADERS, 0, 1, REQUEST) + frame(CONTINUATION, 0, 1, b"") * 100)
    assert ended(events).code == ENHANCE_YOUR_CALM


def test_a_steady_rate_within_the_budget_goes_on_for_ever() -> None:
    client = Client()
    for _ in range(200):  # 10 a second is the refill: 5 every second stay within it
        client.now += 0.5
        assert client.send(frame(PING, 0, 0, b"12345678") * 5) == []
    pongs = [f for f in frames_of(client.written()) if f[0] == PING]
    assert len(pongs) == 1000 and all(flags == ACK for _, flags, _, _ in pongs)


def test_calls_earn_the_control_frames_that_go_with_them() -> None:
    """A busy client's WINDOW_UPDATEs and RST_STREAMs (a few per call) never run out, and
    rapid reset (HEADERS then RST_STREAM) leaves nothing behind."""
    client = Client()
    for _ in range(2000):
        stream_id, events = client.call(end_stream=False)
        assert isinstance(events[0], RequestReceived)
        events = client.send(
            frame(RST_STREAM, 0, stream_id, (8).to_bytes(4, "big"))
            + frame(WINDOW_UPDATE, 0, 0, (100).to_bytes(4, "big")) * 2
        )
        assert len(events) == 1 and isinstance(events[0], StreamReset)
    assert client.server.streams == {} and not client.server.ended


def test_streams_over_the_limit_are_refused() -> None:
    client = Client()
    for _ in range(8):
        client.call(end_stream=False)
    client.written()
    stream_id, events = client.call(end_stream=False)
    assert events == []
    written = frames_of(client.written())
    resets = [(sid, int.from_bytes(p, "big")) for kind, _, sid, p in written if kind == RST_STREAM]
    assert resets == [(stream_id, REFUSED_STREAM)]
    assert not client.server.ended


def test_a_header_block_is_refused_as_its_fragments_arrive() -> None:
    """The block's size is checked frame by frame, not once END_HEADERS comes (which never does)."""
    client = Client()
    events = client.send(frame(HEADERS, 0, 1, REQUEST))
    for _ in range(20):
        if events:
            break
        events = client.send(frame(CONTINUATION, 0, 1, b"\x00" * 200))
    failure = ended(events)
    assert failure.code == ENHANCE_YOUR_CALM and "header block over 2048" in failure.reason


def test_a_header_list_over_the_limit_ends_the_connection() -> None:
    client = Client()
    block = REQUEST + b"".join(literal(b"x-pad-%d" % i, b"v" * 100) for i in range(10))
    failure = ended(client.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, block)))
    assert failure.code == COMPRESSION_ERROR and "over 1024 bytes" in failure.reason


def test_references_to_one_large_entry_count_each_time() -> None:
    """Indexing a dynamic-table entry costs a byte on the wire and its full size in the list."""
    encoder = hpack.Encoder()
    client = Client()
    block = encoder.encode([(":method", "POST"), ("x-big", "v" * 400)])
    block += bytes([0x80 | 62]) * 10  # the newest dynamic entry, again and again
    failure = ended(client.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, block)))
    assert failure.code == COMPRESSION_ERROR


def test_the_connection_window_holds_what_the_application_has_not_consumed() -> None:
    client = Client(Limits())
    stream_id, _ = client.call(end_stream=False)
    chunk = b"\0" * (1 << 20)
    for _ in range(RECEIVE_WINDOW >> 20):
        events = client.send(frame(DATA, 0, stream_id, chunk))
        assert isinstance(events[0], DataReceived)
    assert ended(client.send(frame(DATA, 0, stream_id, b"x"))).code == FLOW_CONTROL_ERROR

    client = Client(Limits())
    stream_id, _ = client.call(end_stream=False)
    for _ in range(2 * (RECEIVE_WINDOW >> 20)):  # consumed as it comes: the window opens again
        events = client.send(frame(DATA, 0, stream_id, chunk))
        assert isinstance(events[0], DataReceived), events
        client.server.acknowledge(len(chunk))
    assert not client.server.ended


def test_one_turn_handles_at_most_the_frames_it_is_asked_for() -> None:
    client = Client()
    client.written()
    client.send(frame(PING, 0, 0, b"12345678") * 10, max_frames=3)
    assert len(frames_of(client.written())) == 3 and client.server.has_frame()
    client.server.events(client.now, 100)
    assert len(frames_of(client.written())) == 7 and not client.server.has_frame()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 255), st.integers(0, 9), st.binary(max_size=40)),
                max_size=30))  # fmt: skip
def test_arbitrary_frames_end_in_events_or_a_goaway(frames: list[tuple[int, int, int, bytes]]) -> None:
    """Whatever frames come, the connection answers with events, frames, or its end: never another
    exception, and nothing more once it has ended."""
    client = Client()
    for kind, flags, stream_id, payload in frames:
        events = client.send(frame(kind, flags, stream_id, payload))
        if client.server.ended:
            assert isinstance(events[-1], ConnectionEnded)
            assert goaway_code(client.written()) is not None
            break


def test_the_preface_may_come_in_pieces_but_not_wrong() -> None:
    server = ServerConnection(LIMITS)
    server.receive_data(PREFACE[:10])
    assert not server.has_frame() and server.events(0.0, 10) == []
    server.receive_data(PREFACE[10:] + frame(PING, 0, 0, b"12345678"))
    assert server.has_frame() and server.events(0.0, 10) == [] and not server.ended

    server = ServerConnection(LIMITS)
    server.receive_data(b"\x16\x03\x01")  # a TLS hello: known to be wrong at once, not after 24 bytes
    assert server.has_frame()
    assert ended(server.events(0.0, 10)).reason == "not an HTTP/2 connection preface"
