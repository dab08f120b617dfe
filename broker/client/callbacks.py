"""Running user callbacks that may be plain functions or coroutine functions."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """True for coroutine functions and objects whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def as_async(fn: Callable[..., Any], executor: Executor | None = None) -> Callable[..., Awaitable[Any]]:
    """``fn`` as a coroutine function, decided once: an async callback as it is, a sync one run in
    ``executor`` (default: the loop's) so it cannot block the event loop."""
    if is_async_callable(fn):
        return fn

    async def run_sync(*args: Any) -> Any:
        result = await asyncio.get_running_loop().run_in_executor(executor, functools.partial(fn, *args))
        return await result if inspect.isawaitable(result) else result

    return run_sync


async def call_user(fn: Callable[..., Any], *args: Any, executor: Executor | None = None) -> Any:
    """Await ``fn(*args)`` the way :func:`as_async` runs it."""
    return await as_async(fn, executor)(*args)
