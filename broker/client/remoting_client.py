"""The SDK's names for the transport, which lives in ``broker.remoting``: the connection pool and
the errors a client call raises (``except RemotingError`` around any SDK call)."""

from broker.remoting.channel import Handler, RemotingChannel, RequestDispatcher
from broker.remoting.client import RemotingClient
from broker.remoting.errors import (
    RemotingClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
)

__all__ = [
    "Handler",
    "RemotingChannel",
    "RemotingClient",
    "RemotingClosedError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RequestDispatcher",
]
