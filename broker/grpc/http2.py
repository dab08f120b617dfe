"""One client's HTTP/2 connection on the broker's event loop: the asyncio adapter of the sans-IO
:class:`broker.protocol.http2.ServerConnection`.

It feeds the socket's bytes to the protocol, hands each stream's events to a :class:`Stream` made by the
server's ``open_stream`` (its request headers, its DATA, its end or reset) and writes the protocol's
bytes back once per loop turn, so the answers to a burst of calls leave in one system call. Streams
write back through :meth:`Http2Connection.send_headers`, :meth:`send_answer` and :meth:`send_data`.

What a client can make the connection hold or do is bounded here, beside the protocol's own limits:

* **Output to a slow reader:** while the socket's send buffer is full (``pause_writing``) the connection
  reads nothing more, so a client that sends but never reads (a PING flood, a stream whose answers it
  leaves unread) stops itself.
* **Fairness:** one loop turn handles at most :data:`FRAMES_PER_TURN` frames of a connection, or what
  it can handle in about :data:`TURN_SECONDS`; the rest waits for the next turn (the connection does not
  read meanwhile), so a client pipelining calls as fast as it can gets its turn like every other
  connection, remoting ones included.
* **Calls in flight:** at most ``max_calls_in_flight`` handlers of a connection run at once (streams
  that waited for one start in order as others end).
* **Idle:** a connection on which nothing moved either way for ``idle_timeout`` seconds is closed.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from broker.protocol.hpack_codec import Header
from broker.protocol.http2 import (
    NO_ERROR,
    ConnectionEnded,
    DataReceived,
    Event,
    Limits,
    RequestReceived,
    ServerConnection,
    StreamEnded,
    StreamReset,
    StreamState,
)
from broker.remoting.channel import wake

if TYPE_CHECKING:
    from broker.server.config import BrokerConfig

log = logging.getLogger(__name__)

# One loop turn of a connection handles at most FRAMES_PER_TURN frames, in batches, and starts no new
# batch after TURN_SECONDS: a few ms of its work, then other connections get theirs
FRAMES_PER_TURN: Final = 128
FRAMES_PER_BATCH: Final = 16
TURN_SECONDS: Final = 0.002


class QueuedCall(Protocol):
    """A call of ``broker.grpc.calls``, as the connection queues it for its turn."""

    def begin(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The per-connection limits of the gRPC port (the broker's ``grpc*`` settings)."""

    protocol: Limits = field(default_factory=Limits)
    max_calls_in_flight: int = 128
    idle_timeout: float = 120.0  # grpcClientIdleTimeMills


def connection_limits(config: BrokerConfig) -> ConnectionLimits:
    """The limits the broker's ``grpc*`` settings ask for."""
    protocol = Limits(
        max_concurrent_streams=config.grpc_max_concurrent_streams,
        max_header_list_size=config.grpc_max_header_list_size,
        control_frame_burst=config.grpc_control_frame_burst,
        control_frames_per_second=float(config.grpc_control_frames_per_second),
    )
    return ConnectionLimits(
        protocol, config.grpc_max_calls_in_flight, config.grpc_client_idle_time_mills / 1000.0
    )


class Stream:
    """One stream's application side; the gRPC call built on it overrides the ``on_*`` hooks."""

    def __init__(self, connection: Http2Connection, state: StreamState) -> None:
        self.connection = connection
        # Only the id: the protocol's state points here (``owner``) while the stream is open, and
        # nothing points back, so a finished call is freed at once rather than by the cycle collector.
        self.id = state.id

    def on_data(self, data: bytes) -> None:
        raise NotImplementedError

    def on_end(self) -> None:
        """The client half-closed the stream."""

    def on_reset(self) -> None:
        """The stream is gone (RST_STREAM, or the connection closed)."""


OpenStream = Callable[["Http2Connection", StreamState, list[Header]], Stream]


class Http2Connection(asyncio.Protocol):
    def __init__(
        self,
        open_stream: OpenStream,
        on_closed: Callable[[Http2Connection], None],
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.open_stream = open_stream
        self.on_closed = on_closed
        self.limits = limits = limits or ConnectionLimits()
        self.h2 = ServerConnection(limits.protocol)
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()  # kept: each lookup costs a getpid() system call
        self.peer = ""
        self.flush_scheduled = False
        self.window_waiters: list[asyncio.Future[None]] = []
        self.writable: asyncio.Future[None] | None = None  # set while the transport is paused
        self.reading = True
        self.turn_scheduled = False  # frames wait for the next loop turn
        self.running = 0  # handlers in flight
        self.queued_messages = 0  # request messages waiting for their handlers (broker.grpc.calls)
        self.waiting: deque[QueuedCall] = deque()  # calls whose handlers wait for one to end
        self.last_activity = self.loop.time()
        self.idle_timer: asyncio.TimerHandle | None = None
        self.closed = False

    @property
    def streams(self) -> dict[int, StreamState]:
        return self.h2.streams

    # == asyncio.Protocol ======================================================================
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport
        self.peer = _peer_text(transport.get_extra_info("peername"))
        self.transport.write(self.h2.data_to_send())  # the server's SETTINGS
        self.idle_timer = self.loop.call_later(self.limits.idle_timeout, self._check_idle)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_activity = self.loop.time()
        self.h2.receive_data(data)
        self._turn()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.idle_timer is not None:
            self.idle_timer.cancel()
        self.waiting.clear()
        streams = list(self.h2.streams.values())
        self.h2.streams.clear()
        for state in streams:
            if state.owner is not None:
                state.owner.on_reset()
        self._wake(ConnectionResetError("the client closed the connection"))
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)
        self.on_closed(self)

    def pause_writing(self) -> None:
        if self.writable is None or self.writable.done():
            self.writable = self.loop.create_future()
        self._reading(False)  # a client that does not read its answers sends no more requests

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)
        self._next_turn()

    # == reading ===============================================================================
    def _turn(self) -> None:
        """Handles the frames of one turn, writes what they produced, and reads on only when no
        whole frame is left over and the client reads its answers."""
        self.turn_scheduled = False
        if self.closed or (self.writable is not None and not self.writable.done()):
            return  # resume_writing() brings the next turn
        h2 = self.h2
        began = now = self.loop.time()
        frames = 0
        more = h2.has_frame()
        while more and frames < FRAMES_PER_TURN and now - began < TURN_SECONDS:
            frames += FRAMES_PER_BATCH
            if not self._handle(h2.events(now, FRAMES_PER_BATCH)):
                return
            more = h2.has_frame()
            if more:
                now = self.loop.time()
        if h2.windows_opened:
            h2.windows_opened = False
            if self.window_waiters:
                self._wake(None)
        self.flush()
        if more:
            self._reading(False)
            self._next_turn()
        elif self.writable is None or self.writable.done():
            self._reading(True)

    def _handle(self, events: list[Event]) -> bool:
        """Hands events to their streams; False when the connection ended."""
        for event in events:
            if type(event) is DataReceived:
                stream = event.stream.owner
                stream.on_data(event.data)
                if event.end_stream:
                    stream.on_end()
            elif type(event) is RequestReceived:
                stream = event.stream.owner = self.open_stream(self, event.stream, event.headers)
                if event.end_stream:
                    stream.on_end()
            elif type(event) is StreamEnded:
                event.stream.owner.on_end()
            elif type(event) is StreamReset:
                if event.stream.owner is not None:
                    event.stream.owner.on_reset()
            elif type(event) is ConnectionEnded:
                log.warning("gRPC connection from %s closed: %s", self.peer, event.reason)
                self.fail()
                return False
        return True

    def _next_turn(self) -> None:
        writing = self.writable is None or self.writable.done()
        if writing and not self.turn_scheduled and not self.closed:
            if self.h2.has_frame():
                self.turn_scheduled = True
                self.loop.call_soon(self._turn)
            else:
                self._reading(True)

    def _reading(self, on: bool) -> None:
        if on != self.reading and self.transport is not None and not self.closed:
            self.reading = on
            if on:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    def consumed(self, size: int) -> None:
        """``size`` received bytes are no longer held (see :meth:`ServerConnection.acknowledge`)."""
        h2 = self.h2
        h2.acknowledge(size)
        if h2.outgoing:  # a WINDOW_UPDATE was due
            self._schedule_flush()

    def _check_idle(self) -> None:
        due = self.last_activity + self.limits.idle_timeout
        if self.loop.time() >= due:
            log.info("gRPC connection from %s closed: idle for %g s", self.peer, self.limits.idle_timeout)
            self.h2.go_away(NO_ERROR, "idle")
            self.fail()
        else:
            self.idle_timer = self.loop.call_at(due, self._check_idle)

    # == calls in flight =======================================================================
    def run_call(self, call: QueuedCall) -> None:
        """Begins a call's handler now, or once one of the ``max_calls_in_flight`` running ends; its
        end must be reported with :meth:`call_ended`."""
        if self.running < self.limits.max_calls_in_flight and not self.waiting:
            self.running += 1
            call.begin()
        else:
            self.waiting.append(call)

    def call_ended(self) -> None:
        """A handler ended: its place goes to the next call waiting."""
        self.running -= 1
        while self.waiting and self.running < self.limits.max_calls_in_flight and not self.closed:
            self.running += 1
            self.waiting.popleft().begin()

    # == writing ===============================================================================
    def _schedule_flush(self) -> None:
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self.flush_scheduled = False
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.closed:
            self.last_activity = self.loop.time()
            self.transport.write(data)

    def send_headers(self, stream: Stream, block: bytes, *, end_stream: bool = False) -> None:
        state = self.h2.streams.get(stream.id)  # none once the stream is closed on our side
        if state is not None and not self.closed:
            self.h2.send_headers(state, block, end_stream=end_stream)
            self._schedule_flush()

    def send_ready(self, stream: Stream, size: int) -> bool:
        """Whether ``size`` bytes of DATA fit the windows now."""
        if self.writable is not None and not self.writable.done():
            return False
        state = self.h2.streams.get(stream.id)
        return state is not None and size <= self.h2.send_room(state)

    def send_now(self, stream: Stream, data: bytes) -> None:
        """DATA that :meth:`send_ready` said fits."""
        self.h2.send_data(self.h2.streams[stream.id], data)
        self._schedule_flush()

    def send_answer(self, stream: Stream, headers: bytes, data: bytes, trailers: bytes) -> None:
        """A whole unary answer in one write (see :meth:`ServerConnection.send_answer`)."""
        state = self.h2.streams.get(stream.id)
        if state is not None and not self.closed:
            self.h2.send_answer(state, headers, data, trailers)
            self._schedule_flush()

    async def send_data(self, stream: Stream, data: bytes) -> None:
        """DATA as the windows allow, waiting for the client's WINDOW_UPDATEs (and for the socket to
        drain) in between."""
        at = 0
        while at < len(data):
            state = self.h2.streams.get(stream.id)
            if self.closed or state is None:
                raise ConnectionResetError("the stream is closed")
            if self.writable is not None and not self.writable.done():
                await self.writable
                continue
            room = min(self.h2.send_room(state), len(data) - at)
            if room <= 0:
                waiter = self.loop.create_future()
                self.window_waiters.append(waiter)
                await waiter
                continue
            self.h2.send_data(state, data[at : at + room])
            self._schedule_flush()
            at += room

    def _wake(self, error: Exception | None) -> None:
        waiters, self.window_waiters = self.window_waiters, []
        wake(waiters, error)

    def reset(self, stream: Stream, code: int) -> None:
        """Resets a stream the server is done with; its call hears of it (``on_reset``)."""
        state = self.h2.streams.get(stream.id)
        if state is None:
            return
        self.h2.reset(state, code)
        self._schedule_flush()
        stream.on_reset()

    def go_away(self, code: int = NO_ERROR, reason: str = "") -> None:
        """Accepts no new streams; the ones open go on."""
        self.h2.go_away(code, reason)
        self._schedule_flush()

    def fail(self) -> None:
        """Closes the connection after the GOAWAY the protocol has queued."""
        self.flush()
        self.closed = True
        if self.transport is not None:
            self.transport.close()

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
