"""What the 4.x mqadmin ACL commands print (updateAclConfig, deleteAclConfig, clusterAclConfigVersion,
updateGlobalWhiteAddr, getAclConfig), line for line as RocketMQ's tools do. Secrets are never printed:
where the Java tool would show a secret key, these show nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cli.mqadmin.render import jstr, plain_time

if TYPE_CHECKING:
    from admin.service.acl import (
        AccountChange,
        AclAccountView,
        AclTarget,
        AclVersionView,
        AclView,
        AclWhiteList,
    )

_VERSION_ROW = "{:<16}  {:<22}  {:<22}  {:<20}  {:<22}  {:<22}\n"


def _java_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"


def account_updated(targets: Sequence[AclTarget], change: AccountChange) -> str:
    """A success line per broker, then the account as sent (the Java tool prints the object here,
    without a newline)."""
    lines = "".join(f"create or update plain access config to {t.address} success.\n" for t in targets)
    fields = [
        ("accessKey", change.access_key),
        ("whiteRemoteAddress", change.white_remote_address),
        ("admin", bool(change.admin)),
        ("defaultTopicPerm", change.default_topic_perm),
        ("defaultGroupPerm", change.default_group_perm),
        ("topicPerms", None if change.topic_perms is None else _java_list(change.topic_perms)),
        ("groupPerms", None if change.group_perms is None else _java_list(change.group_perms)),
    ]
    return lines + "PlainAccessConfig{" + ", ".join(f"{k}={jstr(v)}" for k, v in fields) + "}"


def account_deleted(targets: Sequence[AclTarget], access_key: str) -> str:
    lines = "".join(f"delete plain access config account from {t.address} success.\n" for t in targets)
    return lines + f"account's accesskey is:{access_key}"


def global_white_updated(written: Sequence[AclWhiteList]) -> str:
    return "".join(f"update global white remote addresses to {w.address} success.\n" for w in written)


def acl_versions(rows: Sequence[AclVersionView], by_cluster: bool) -> str:
    """clusterAclConfigVersion: a header only for a cluster, one row per ACL file of each broker."""
    out = []
    if by_cluster:
        out.append(_VERSION_ROW.format("#Cluster Name", "#Broker Name", "#Broker Addr", "#AclFilePath",
                                       "#AclConfigVersionNum", "#AclLastUpdateTime"))  # fmt: skip
    for r in rows:
        out.append(_VERSION_ROW.format(jstr(r.cluster), r.broker, jstr(r.address), jstr(r.acl_file),
                                       str(r.counter), plain_time(r.timestamp)))  # fmt: skip
    what = "cluster" if by_cluster else "broker"
    out.append(f"get {what}'s plain access config version success.\n")
    return "".join(out)


def acl_config(views: Sequence[AclView]) -> str:
    """getAclConfig: each broker's global white list, then its accounts field by field."""
    out = []
    for view in views:
        out.append(f"\n{'globalWhiteRemoteAddresses':<20}: {_java_list(view.global_white_addresses)}\n")
        out.append("\naccounts:\n")
        for account in view.accounts:
            out.extend(f"  {name:<18}: {value}\n" for name, value in _account_fields(account))
            out.append("\n")
    return "".join(out)


def _account_fields(a: AclAccountView) -> list[tuple[str, str]]:
    def perms(values: dict[str, str]) -> str:
        return _java_list([f"{k}={v}" for k, v in values.items()])

    return [
        ("accessKey", a.access_key),
        ("secretKey", ""),  # never sent by the broker
        ("whiteRemoteAddress", a.white_remote_address or ""),
        ("admin", jstr(a.admin)),
        ("defaultTopicPerm", a.default_topic_perm),
        ("defaultGroupPerm", a.default_group_perm),
        ("topicPerms", perms(a.topic_perms)),
        ("groupPerms", perms(a.group_perms)),
    ]
