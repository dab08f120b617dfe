"""The wrapper every broker request handler runs in: timed into the broker's stats, with malformed
headers and bodies answered INVALID_PARAMETER. Every request passes through it, so this module is
compiled by ``make install``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from broker.protocol.bodies import BodyError
from broker.protocol.codes import ResponseCode
from broker.protocol.headers import HeaderFieldError
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler


class Instrumented:
    """``handler`` for request ``code``; ``record_latency(code, seconds)`` gets each one's time."""

    def __init__(self, code: int, handler: Handler, record_latency: Callable[[int, float], None]) -> None:
        self._code = code
        self._handler = handler
        self._record_latency = record_latency

    # ``channel`` is Any: gRPC hands in its stand-in for a remoting channel, and a compiled module
    # would refuse anything but the declared class
    async def __call__(self, request: RemotingCommand, channel: Any) -> RemotingCommand | None:
        started = time.monotonic()
        try:
            return await self._handler(request, channel)
        except (HeaderFieldError, BodyError) as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, str(exc))
        finally:
            self._record_latency(self._code, time.monotonic() - started)
