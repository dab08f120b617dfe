"""Server-side RPC hooks: a check that runs before every handler of a server, and the server that
applies it. Access control (``broker.acl.remoting_hook``) is the hook the servers install; the client
side's hook is a channel's ``rpc_hook`` (``broker.remoting.channel.RpcHook``), which signs requests.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from broker.protocol.codes import ResponseCode, name_of
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.remoting.server import RemotingServer

log = logging.getLogger(__name__)


class Refusal(Protocol):
    """Why a hook turned a request away; answered NO_PERMISSION with this message."""

    @property
    def message(self) -> str: ...


class Hook:
    """Runs a handler only when :meth:`refusal` finds nothing wrong with the request."""

    def refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        raise NotImplementedError

    def guard(self, handler: Handler) -> Handler:
        async def run(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand | None:
            refused = self.refusal(request, channel.remote_addr)
            if refused is None:
                return await handler(request, channel)
            log.warning("refused %s from %s: %s", name_of(request.code), channel.remote_addr, refused.message)
            return make_response(request, ResponseCode.NO_PERMISSION, refused.message)

        return run


class GuardedServer(RemotingServer):
    """A remoting server that checks every request before its handler runs."""

    def __init__(self, hook: Hook, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hook = hook

    def register(self, code: int, handler: Handler) -> None:
        super().register(code, self.hook.guard(handler))
