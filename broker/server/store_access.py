"""How the broker's parts reach the blocking store: a Protocol the broker implements (reads on its
read threads, writes in order on its store-writer thread), so a part names it instead of the broker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class StoreAccess(Protocol):
    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a read thread."""
        ...

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the store-writer thread, in order with every other write."""
        ...
