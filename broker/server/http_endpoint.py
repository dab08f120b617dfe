"""A small HTTP/1.1 endpoint for probes and scrapers: ``/healthz``, ``/readyz`` and ``/metrics``.

It serves a handful of GET routes and nothing else, so it is written on asyncio streams instead of
pulling in a web framework; every response closes the connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)
MAX_REQUEST_HEAD = 8192
READ_TIMEOUT = 10.0


@dataclass(slots=True, frozen=True)
class HttpResponse:
    status: int
    body: str
    content_type: str = "text/plain; charset=utf-8"


Route = Callable[[], Awaitable[HttpResponse]]
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
}


class HttpEndpoint:
    def __init__(self, host: str, port: int, routes: dict[str, Route]) -> None:
        self.host = host
        self.requested_port = port
        self.routes = routes
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the endpoint is not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.requested_port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            response = await self._respond(reader)
            payload = response.body.encode("utf-8")
            head = (
                f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Error')}\r\n"
                f"Content-Type: {response.content_type}\r\nContent-Length: {len(payload)}\r\n"
                "Connection: close\r\n\r\n"
            )
            writer.write(head.encode("ascii") + payload)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _respond(self, reader: asyncio.StreamReader) -> HttpResponse:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return HttpResponse(400, "malformed request\n")
        if len(head) > MAX_REQUEST_HEAD:
            return HttpResponse(400, "request head too large\n")
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return HttpResponse(400, "malformed request line\n")
        method, target = parts[0], parts[1].split("?", 1)[0]
        route = self.routes.get(target)
        if route is None:
            return HttpResponse(404, f"no such path {target}; try {', '.join(sorted(self.routes))}\n")
        if method not in ("GET", "HEAD"):
            return HttpResponse(405, "only GET is served\n")
        try:
            return await route()
        except Exception as exc:  # a failing probe answers 503, it must never kill the endpoint
            log.exception("HTTP route %s failed", target)
            return HttpResponse(503, f"{type(exc).__name__}: {exc}\n")
