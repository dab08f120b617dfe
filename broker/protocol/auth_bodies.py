"""The RocketMQ 5 access-control codes (AUTH_CREATE_USER 3001 ... AUTH_LIST_ACL 3010): their request
headers and JSON bodies, with RocketMQ's field names so mqadmin and the Java tools read them unchanged.

A user has a password (its SecretKey: requests are signed as with plain ACL, with the username as
AccessKey), a type (``Super`` users pass every authorization, ``Normal`` ones need policies) and a status
(``enable``/``disable``). An ACL belongs to a subject (``User:name``) and holds policies; each policy entry
names a resource (``Topic:Orders``, ``Group:g``, ``Topic:order-*``, ``*``), its actions (Pub, Sub,
Create, Update, Delete, Get, List, All), the source IPs it applies to and a decision (Allow or Deny).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.protocol.bodies import JsonBody
from broker.protocol.headers import CommandHeader


@dataclass(slots=True)
class UserInfo(JsonBody):
    """AUTH_CREATE_USER / AUTH_UPDATE_USER body; AUTH_GET_USER answers one, AUTH_LIST_USER a JSON list
    (passwords are never sent back)."""

    username: str | None = None
    password: str | None = None
    userType: str | None = None  # Super or Normal
    userStatus: str | None = None  # enable or disable


@dataclass(slots=True)
class PolicyEntryInfo(JsonBody):
    resource: str | None = None  # ResourceType:name, a trailing * matches a prefix; * alone: everything
    actions: list[str] | None = None
    sourceIps: list[str] | None = None  # addresses or CIDR ranges; none: from anywhere
    decision: str | None = None  # Allow or Deny


@dataclass(slots=True)
class PolicyInfo(JsonBody):
    policyType: str | None = None  # Custom (what users write) or Default
    entries: list[PolicyEntryInfo] | None = None


@dataclass(slots=True)
class AclInfo(JsonBody):
    """AUTH_CREATE_ACL / AUTH_UPDATE_ACL body; AUTH_GET_ACL answers one, AUTH_LIST_ACL a JSON list."""

    subject: str | None = None  # User:name
    policies: list[PolicyInfo] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class UserRequestHeader(CommandHeader):
    """AUTH_CREATE_USER, AUTH_UPDATE_USER, AUTH_DELETE_USER and AUTH_GET_USER."""

    username: str


@dataclass(kw_only=True, slots=True)
class ListUsersRequestHeader(CommandHeader):
    filter: str | None = None  # a part of the username


@dataclass(kw_only=True, slots=True)
class AclRequestHeader(CommandHeader):
    """AUTH_CREATE_ACL, AUTH_UPDATE_ACL and AUTH_GET_ACL."""

    subject: str


@dataclass(kw_only=True, slots=True)
class DeleteAclRequestHeader(CommandHeader):
    """Without ``resource`` the subject's whole ACL goes, else the entries of that resource."""

    subject: str
    policyType: str | None = None
    resource: str | None = None


@dataclass(kw_only=True, slots=True)
class ListAclsRequestHeader(CommandHeader):
    subjectFilter: str | None = None
    resourceFilter: str | None = None
