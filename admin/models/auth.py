"""RocketMQ 5 access control: users and the ACL policies of subjects as each broker holds them, what
``create``/``update`` write, and what a change touched. A view never holds a password: brokers do not
send them back, and :class:`UserSpec` keeps its own out of ``repr``."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "AclChange",
    "AclSpec",
    "AuthAcl",
    "AuthPolicy",
    "AuthPolicyEntry",
    "AuthUser",
    "BrokerAcls",
    "BrokerUsers",
    "CopyResult",
    "UserChange",
    "UserSpec",
]


@dataclass(frozen=True, slots=True)
class AuthUser:
    username: str
    user_type: str | None  # Super or Normal; None when the broker does not say
    user_status: str | None  # enable or disable


@dataclass(frozen=True, slots=True)
class BrokerUsers:
    """The users one broker holds (``get``: the one asked for, or none)."""

    broker: str
    address: str
    users: list[AuthUser]


@dataclass(frozen=True, slots=True)
class AuthPolicyEntry:
    resource: str  # Type:name (a trailing * matches a prefix) or * for everything
    actions: list[str]
    source_ips: list[str]  # addresses or CIDR ranges; empty: from anywhere
    decision: str  # Allow or Deny


@dataclass(frozen=True, slots=True)
class AuthPolicy:
    policy_type: str | None  # Custom or Default
    entries: list[AuthPolicyEntry]


@dataclass(frozen=True, slots=True)
class AuthAcl:
    subject: str  # User:name
    policies: list[AuthPolicy]


@dataclass(frozen=True, slots=True)
class BrokerAcls:
    """The ACLs one broker holds (``get``: the subject's, or none)."""

    broker: str
    address: str
    acls: list[AuthAcl]


@dataclass(frozen=True, slots=True)
class UserSpec:
    """A user as ``create``/``update`` send it; None leaves a field to the broker (its default, or
    what it holds)."""

    username: str
    password: str | None = field(default=None, repr=False)
    user_type: str | None = None
    user_status: str | None = None


@dataclass(frozen=True, slots=True)
class AclSpec:
    """One policy as ``create``/``update`` send it: an entry per resource, each with the same
    actions, source IPs and decision (as mqadmin's createAcl)."""

    subject: str
    resources: list[str]
    actions: list[str]
    decision: str
    source_ips: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class UserChange:
    username: str
    action: str  # created, updated or deleted
    targets: list[str]  # the broker addresses written to


@dataclass(frozen=True, slots=True)
class AclChange:
    subject: str
    action: str  # created, updated or deleted
    targets: list[str]  # the broker addresses written to
    resource: str | None = None  # delete: only this resource's entries


@dataclass(frozen=True, slots=True)
class CopyResult:
    """What ``copy`` wrote to ``target``: each name, and whether it was new there."""

    source: str
    target: str
    created: list[str]
    updated: list[str]
