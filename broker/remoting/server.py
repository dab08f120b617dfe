"""The remoting TCP server the NameServer and the broker both run.

Each accepted connection becomes a :class:`RemotingChannel` (the client pool's too, because a
broker also sends requests over connections its clients opened). Requests go to async handlers
registered by code; unknown codes, failing handlers, one-way requests, malformed frames, idle
connections and back-pressure are handled there, the same way for every server.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from broker.protocol.codes import SerializeType
from broker.protocol.remoting import LENIENT_HEADER_LIMIT
from broker.remoting.channel import DEFAULT_MAX_INFLIGHT, Handler, RemotingChannel, RequestDispatcher

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT = 120.0  # serverChannelMaxIdleTimeSeconds


def install_uvloop() -> bool:
    """Make new event loops uvloop ones when uvloop is installed; returns whether it was."""
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


class RemotingServer:
    """Listen, dispatch requests by code, and stop gracefully."""

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 0,
        *,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        serialize_type: SerializeType = SerializeType.JSON,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        ssl_context: ssl.SSLContext | None = None,
        lenient_header_limit: int = LENIENT_HEADER_LIMIT,
    ) -> None:
        self.host = host
        self._lenient_header_limit = lenient_header_limit
        self._requested_port = port
        self._ssl_context = ssl_context  # TLS only (broker.acl.tls), no plain-text fallback
        self._idle_timeout = idle_timeout
        self._serialize_type = serialize_type
        self._max_inflight = max_inflight
        self._dispatcher = RequestDispatcher()
        self._server: asyncio.Server | None = None
        self._channels: set[RemotingChannel] = set()

    def register(self, code: int, handler: Handler) -> None:
        """Route requests with ``code`` to ``handler``; it returns the response, or None for none/later."""
        self._dispatcher.register(code, handler)

    @property
    def port(self) -> int:
        """The bound port (the real one when started with port 0)."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError("server is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def connections(self) -> frozenset[RemotingChannel]:
        """Open client connections, e.g. to find the one a client heartbeats on for a push."""
        return frozenset(self._channels)

    async def start(self) -> None:
        self._server = await asyncio.get_running_loop().create_server(
            self._new_channel, self.host, self._requested_port, reuse_address=True, ssl=self._ssl_context
        )
        log.info("remoting server listening on %s:%d", self.host, self.port)

    def _new_channel(self) -> RemotingChannel:
        return RemotingChannel(
            self._dispatcher,
            serialize_type=self._serialize_type,
            idle_timeout=self._idle_timeout,
            max_inflight=self._max_inflight,
            on_open=self._channels.add,  # once connected (after the TLS handshake, with TLS)
            on_close=self._channels.discard,
            lenient_header_limit=self._lenient_header_limit,
        )

    async def stop(self, grace: float = 10.0) -> None:
        """Stop accepting, give in-flight handlers up to ``grace`` seconds, close every connection."""
        if self._server is None:
            return
        self._server.close()
        channels = list(self._channels)
        if channels:
            await asyncio.gather(*(channel.shutdown(grace) for channel in channels))
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
