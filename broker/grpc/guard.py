"""The wrappers every MessagingService handler runs in: a refusal (GrpcError) becomes the response's
v2 status, and anything else an INTERNAL_SERVER_ERROR status, logged, so nothing a client sends can
take the broker down. Every call passes through :class:`Guarded` (or, for handlers that never wait,
:class:`GuardedInline`; for server streams, :class:`GuardedStream`), so this module is compiled by
``make install``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from broker.grpc.schema import Code, GrpcError, status

log = logging.getLogger("broker.grpc.service")


def failed(fn: Any, response: Any, error: Exception) -> Any:
    """The ``response`` (an RPC's response message class) that answers ``fn`` raising ``error``;
    called in the ``except`` clause, so an unexpected error is logged with its traceback."""
    if isinstance(error, GrpcError):
        return response(status=status(error.code, error.message))
    log.exception("gRPC %s failed", getattr(fn, "__name__", fn))
    return response(status=status(Code.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}"))


class Guarded:
    """``fn`` answering with ``response`` (the RPC's response message class) when it fails."""

    def __init__(self, fn: Callable[[Any, Any], Awaitable[Any]], response: Any) -> None:
        self.fn = fn
        self.response = response

    async def __call__(self, request: Any, context: Any) -> Any:
        try:
            return await self.fn(request, context)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            return failed(self.fn, self.response, error)


class GuardedInline:
    """:class:`Guarded` for a handler that never waits: the server calls it as the request ends,
    without a task (see ``broker.grpc.calls.Call._answer_inline``)."""

    answers_inline = True

    def __init__(self, fn: Callable[[Any, Any], Any], response: Any) -> None:
        self.fn = fn
        self.response = response

    def __call__(self, request: Any, context: Any) -> Any:
        try:
            return self.fn(request, context)
        except Exception as error:
            return failed(self.fn, self.response, error)


class GuardedStream:
    """:class:`Guarded` for a server stream whose handler writes its responses (``context.write``), as a
    compiled handler must (it cannot be an async generator): a failure is written as the last one."""

    def __init__(self, fn: Callable[[Any, Any], Awaitable[None]], response: Any) -> None:
        self.fn = fn
        self.response = response

    async def __call__(self, request: Any, context: Any) -> None:
        try:
            await self.fn(request, context)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            await context.write(failed(self.fn, self.response, error))
