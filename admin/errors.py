"""Typed failures of the admin service.

Every admin function raises one of these (never a bare store, socket or protocol error), so each
front end maps failures to its own convention in one place: the CLI to exit codes, the TUI to a
status line. Messages are complete sentences for an operator: they name the thing concerned and,
where there is one, the fix.
"""

from __future__ import annotations


class AdminError(Exception):
    """Base class: an admin operation could not do what was asked."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class BadInput(AdminError):
    """The request itself is wrong (malformed id, missing or conflicting arguments)."""


class NotFound(AdminError):
    """What was asked for does not exist (topic, queue, message, store folder)."""


class OperationFailed(AdminError):
    """The operation ran and failed: a server error response, or problems found in a store."""


class ConnectFailed(AdminError):
    """A server could not be reached; ``address`` is the one that was tried, ``reason`` why."""

    def __init__(self, address: str, reason: str = "connection refused") -> None:
        super().__init__(f"cannot connect to {address}: {reason}")
        self.address = address
        self.reason = reason


class Timeout(AdminError):
    """A server did not answer in time."""
