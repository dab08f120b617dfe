"""Running user callbacks that may be plain functions or coroutine functions."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """True for coroutine functions and objects whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


async def call_user(fn: Callable[..., Any], *args: Any, executor: Executor | None = None) -> Any:
    """Await an async callback; run a sync one in ``executor`` (default: the loop's) so it cannot block
    the event loop."""
    if is_async_callable(fn):
        return await fn(*args)
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(executor, functools.partial(fn, *args))
    return await result if inspect.isawaitable(result) else result
