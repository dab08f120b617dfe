"""What the 5.x mqadmin access-control commands print (createUser, updateUser, deleteUser, getUser,
listUser, copyUser, createAcl, updateAcl, deleteAcl, getAcl, listAcl, copyAcl), line for line as
RocketMQ's tools do. Passwords are never printed: the password column stays empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cli.mqadmin.render import jstr

if TYPE_CHECKING:
    from admin.models.auth import AuthAcl, AuthUser, BrokerAcls, BrokerUsers, CopyResult

_USER_ROW = "{:<16}  {:<22}  {:<22}  {:<22}\n"
_ACL_ROW = "{:<16}  {:<10}  {:<22}  {:<20}  {:<24}  {:<10}\n"


def written(what: str, verb: str, addresses: Sequence[str]) -> str:
    """``create user to ADDR success.`` (or acl; update, delete) for each broker written to."""
    return "".join(f"{verb} {what} to {addr} success.\n" for addr in addresses)


def copied(what: str, result: CopyResult) -> str:
    names = [*result.created, *result.updated]
    return "".join(f"copy {what} of {n} from {result.source} to {result.target} success.\n" for n in names)


def _users(users: Sequence[AuthUser]) -> str:
    rows = [_USER_ROW.format(u.username, "", jstr(u.user_type), jstr(u.user_status)) for u in users]
    return _USER_ROW.format("#UserName", "#Password", "#UserType", "#UserStatus") + "".join(rows)


def user(views: Sequence[BrokerUsers]) -> str:
    """getUser: the user as the first broker that has it holds it; nothing when none has it."""
    found = next((v.users for v in views if v.users), None)
    return "" if found is None else _users(found)


def users(views: Sequence[BrokerUsers], by_cluster: bool) -> str:
    """listUser: with ``-b`` the broker's users; with ``-c`` those of the first master that has any,
    then where they came from."""
    view = next((v for v in views if v.users), None)
    if view is None:
        return ""
    return _users(view.users) + (f"get user from {view.address} success.\n" if by_cluster else "")


def _java_list(items: Sequence[str]) -> str:
    """A List's toString; ``null`` for none (the brokers leave an unset list out)."""
    return "[" + ", ".join(items) + "]" if items else "null"


def _acl_rows(acl: AuthAcl) -> list[str]:
    rows = [] if acl.policies else [_ACL_ROW.format(acl.subject, "", "", "", "", "")]
    for policy in acl.policies:
        rows.extend(
            _ACL_ROW.format(acl.subject, jstr(policy.policy_type), e.resource, _java_list(e.actions),
                            _java_list(e.source_ips), e.decision)
            for e in policy.entries
        )  # fmt: skip
    return rows


def acls(views: Sequence[BrokerAcls], per_acl_header: bool) -> str:
    """getAcl (``per_acl_header``: a header above each broker's ACL) and listAcl (a header above each
    broker's list), for each broker that has something."""
    header = _ACL_ROW.format("#Subject", "#PolicyType", "#Resource", "#Actions", "#SourceIp", "#Decision")
    out: list[str] = []
    for view in views:
        if not view.acls:
            continue
        if per_acl_header:
            for acl in view.acls:
                out.extend([header, *_acl_rows(acl)])
        else:
            out.append(header)
            out.extend(row for acl in view.acls for row in _acl_rows(acl))
    return "".join(out)
