"""The transport's failures: connecting, waiting for an answer, a closed connection."""

from __future__ import annotations

from broker.protocol.codes import name_of


class RemotingError(Exception):
    """Base of the transport's failures."""


class RemotingConnectError(RemotingError):
    def __init__(self, addr: str, reason: str) -> None:
        super().__init__(f"connect to {addr} failed: {reason}")
        self.addr = addr


class RemotingTimeoutError(RemotingError):
    def __init__(self, addr: str, code: int, timeout: float) -> None:
        super().__init__(f"no response from {addr} to request {name_of(code)} within {timeout:g} s")
        self.addr = addr
        self.code = code
        self.timeout = timeout


class RemotingClosedError(RemotingError):
    def __init__(self, addr: str) -> None:
        super().__init__(f"connection to {addr} is closed")
        self.addr = addr
