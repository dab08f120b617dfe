"""The wrappers every MessagingService handler runs in: a refusal (GrpcError) becomes the response's
v2 status, and anything else an INTERNAL_SERVER_ERROR status, logged, so nothing a client sends can
take the broker down. Every call passes through :class:`Guarded` (or, for handlers that never wait,
:class:`GuardedInline`; for server streams, :class:`GuardedStream`), so this module is compiled by
``make install``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from google.protobuf.message import Message

from broker.grpc.schema import PB, CallContext, Code, GrpcError, status

log = logging.getLogger("broker.grpc.service")
Request = TypeVar("Request", bound=Message)


class StatusAnswer(Protocol):
    """An RPC's response message class: every v2 response can carry a status."""

    def __call__(self, *, status: PB.Status) -> Message: ...


def failed(fn: object, response: StatusAnswer, error: Exception) -> Message:
    """The ``response`` (an RPC's response message class) that answers ``fn`` raising ``error``;
    called in the ``except`` clause, so an unexpected error is logged with its traceback."""
    if isinstance(error, GrpcError):
        return response(status=status(error.code, error.message))
    log.exception("gRPC %s failed", getattr(fn, "__name__", fn))
    return response(status=status(Code.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}"))


class Guarded(Generic[Request]):
    """``fn`` answering with ``response`` (the RPC's response message class) when it fails."""

    answers_inline = False  # asked of every call's handler: found, it costs no AttributeError

    def __init__(
        self, fn: Callable[[Request, CallContext], Awaitable[Message | bytes]], response: StatusAnswer
    ) -> None:
        self.fn = fn
        self.response = response

    async def __call__(self, request: Request, context: CallContext) -> Message | bytes:
        try:
            return await self.fn(request, context)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            return failed(self.fn, self.response, error)


class GuardedInline(Generic[Request]):
    """:class:`Guarded` for a handler that never waits: the server calls it as the request ends,
    without a task (see ``broker.grpc.calls.Call._answer_inline``)."""

    answers_inline = True

    def __init__(self, fn: Callable[[Request, CallContext], Message | bytes], response: StatusAnswer) -> None:
        self.fn = fn
        self.response = response

    def __call__(self, request: Request, context: CallContext) -> Message | bytes:
        try:
            return self.fn(request, context)
        except Exception as error:
            return failed(self.fn, self.response, error)


class GuardedStream(Generic[Request]):
    """:class:`Guarded` for a server stream whose handler writes its responses (``context.write``), as a
    compiled handler must (it cannot be an async generator): a failure is written as the last one."""

    def __init__(self, fn: Callable[[Request, CallContext], Awaitable[None]], response: StatusAnswer) -> None:
        self.fn = fn
        self.response = response

    async def __call__(self, request: Request, context: CallContext) -> None:
        try:
            await self.fn(request, context)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            await context.write(failed(self.fn, self.response, error))
