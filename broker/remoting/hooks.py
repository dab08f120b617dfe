"""Server-side RPC hooks: a guard that wraps every handler a server registers, and the server that
applies it. Access control (``broker.acl.remoting_hook``) is the hook the servers install; the client
side's hook is a channel's ``rpc_hook`` (``broker.remoting.channel.RpcHook``), which signs requests.
"""

from __future__ import annotations

from typing import Any, Protocol

from broker.remoting.channel import Handler
from broker.remoting.server import RemotingServer


class Hook(Protocol):
    def guard(self, code: int, handler: Handler) -> Handler:
        """``handler`` wrapped: the request code's checks first, the handler only when they pass."""
        ...


class GuardedServer(RemotingServer):
    """A remoting server that checks every request before its handler runs."""

    def __init__(self, hook: Hook, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hook = hook

    def register(self, code: int, handler: Handler) -> None:
        super().register(code, self.hook.guard(code, handler))
