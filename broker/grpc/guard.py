"""The wrapper every unary MessagingService handler runs in: a refusal (GrpcError) becomes the
response's v2 status, and anything else an INTERNAL_SERVER_ERROR status, logged, so nothing a client
sends can take the broker down. Every call passes through it, so this module is compiled by
``make install``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from broker.grpc.schema import Code, GrpcError, status

log = logging.getLogger("broker.grpc.service")


class Guarded:
    """``fn`` answering with ``response`` (the RPC's response message class) when it fails."""

    def __init__(self, fn: Callable[[Any, Any], Awaitable[Any]], response: Any) -> None:
        self.fn = fn
        self.response = response

    async def __call__(self, request: Any, context: Any) -> Any:
        try:
            return await self.fn(request, context)
        except GrpcError as refused:  # each clause its own name: mypyc types a shared one by the first
            return self.response(status=status(refused.code, refused.message))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.exception("gRPC %s failed", getattr(self.fn, "__name__", self.fn))
            return self.response(
                status=status(Code.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}")
            )
