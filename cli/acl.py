"""``rmq acl list|get|create|update|delete|white-list|version``: plain ACL accounts, the global white
list and the ACL data version on the brokers (over the wire, as 4.x mqadmin's getAclConfig,
updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr and clusterAclConfigVersion do) or in a local
ACL file (``-f``: the NameServer's file, or the first admin account before a broker runs). Changes go
to every broker of the cluster, slaves included.

Secrets are read from an environment variable, a file or a hidden prompt, never from the command
line, and never printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.connect import (
    ClusterOpt,
    Conn,
    TargetBrokerOpt,
    YesOpt,
    confirm,
    connected,
    connected_as,
    secret_or_prompt,
)
from cli.output import Fields, Section, Table, ms_time

if TYPE_CHECKING:
    from admin.service.acl import AccountChange, AclVersionView, AclView, AclWhiteList

app = typer.Typer(help="Plain ACL accounts (AccessKey, permissions, white lists).", no_args_is_help=True)

KeyArg = Annotated[
    str, typer.Argument(metavar="ACCESS_KEY", help="The account's AccessKey.", show_default=False)
]
FileOpt = Annotated[
    Path | None,
    typer.Option("-f", "--file", metavar="PATH", help="Edit this ACL file locally instead of the brokers."),
]
SecretEnvOpt = Annotated[
    str | None, typer.Option("--secret-key-env", metavar="VAR", help="Read the SecretKey from this variable.")
]
SecretFileOpt = Annotated[
    Path | None,
    typer.Option("--secret-key-file", metavar="PATH", help="Read the SecretKey from this file's first line."),
]
WhiteOpt = Annotated[
    str | None,
    typer.Option("--white-address", metavar="PATTERN", help="IP pattern that needs no signature."),
]
AdminOpt = Annotated[bool | None, typer.Option("--admin/--no-admin", help="May send admin requests.")]
TopicPermOpt = Annotated[
    str | None, typer.Option("--default-topic-perm", metavar="PERM", help="DENY, PUB, SUB or PUB|SUB.")
]
GroupPermOpt = Annotated[
    str | None, typer.Option("--default-group-perm", metavar="PERM", help="DENY, PUB, SUB or PUB|SUB.")
]
TopicPermsOpt = Annotated[
    list[str] | None,
    typer.Option("--topic-perm", metavar="TOPIC=PERM", help="A topic's permission (repeatable; replaces)."),
]
GroupPermsOpt = Annotated[
    list[str] | None,
    typer.Option("--group-perm", metavar="GROUP=PERM", help="A group's permission (repeatable; replaces)."),
]
SetWhiteOpt = Annotated[
    str | None,
    typer.Option("--set", metavar="PATTERNS", help='Replace the list (comma-separated; "" empties it).'),
]
AddWhiteOpt = Annotated[
    list[str] | None, typer.Option("--add", metavar="PATTERN", help="Add an address pattern (repeatable).")
]
RemoveWhiteOpt = Annotated[
    list[str] | None,
    typer.Option("--remove", metavar="PATTERN", help="Remove an address pattern (repeatable)."),
]


@dataclass(frozen=True, slots=True)
class AclChanged:
    access_key: str
    action: str
    targets: list[str]


def _upsert(
    conn: Conn,
    change: AccountChange,
    create: bool,
    file: Path | None,
    where: tuple[str | None, str | None],
) -> AclChanged:
    from admin.service.acl import file_upsert

    action = "created" if create else "updated"
    if file is not None:
        file_upsert(file, change, create=create)
        return AclChanged(change.access_key, action, [str(file)])
    cluster, broker = where
    targets = conn.run(lambda s: s.acl_upsert(change, create=create, cluster=cluster, broker=broker))
    return AclChanged(change.access_key, action, targets)


# == rmq acl ===================================================================================
@app.command("list")
@connected
def acl_list(
    conn: Conn,
    file: FileOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Accounts and global white addresses of each broker (or of a file); secrets are never shown."""
    _show(conn, None, file, broker, cluster)


@app.command("get")
@connected
def acl_get(
    conn: Conn,
    access_key: KeyArg,
    file: FileOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """One account on each broker (or in a file)."""
    _show(conn, access_key, file, broker, cluster)


def _show(
    conn: Conn, access_key: str | None, file: Path | None, broker: str | None, cluster: str | None
) -> None:
    from admin.service.acl import file_view

    if file is not None:
        views = [file_view(file, access_key)]
    else:
        views = conn.run(lambda s: s.acl_list(cluster, broker, access_key))
    if access_key is None:
        conn.emit(views, _views_sections)
    else:
        conn.emit_found(views, lambda v: v.accounts, f"no ACL account {access_key}", _views_sections)


def _put_account(
    create: bool,
    conn: Conn,
    access_key: KeyArg,
    secret_key_env: SecretEnvOpt = None,
    secret_key_file: SecretFileOpt = None,
    white_address: WhiteOpt = None,
    admin: AdminOpt = None,
    default_topic_perm: TopicPermOpt = None,
    default_group_perm: GroupPermOpt = None,
    topic_perm: TopicPermsOpt = None,
    group_perm: GroupPermsOpt = None,
    file: FileOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    from admin.service.acl import AccountChange

    secret = secret_or_prompt(secret_key_env, secret_key_file, create, "secret-key", "SecretKey")
    change = AccountChange(access_key, secret, white_address, admin, default_topic_perm,
                           default_group_perm, topic_perm, group_perm)  # fmt: skip
    conn.emit(_upsert(conn, change, create, file, (cluster, broker)), _changed_sections)


app.command("create")(
    connected_as(
        _put_account,
        True,
        "Add an account (its SecretKey from --secret-key-env, --secret-key-file or a hidden prompt).",
    )
)
app.command("update")(
    connected_as(
        _put_account,
        False,
        "Change the given fields of an account (the others stay; --topic-perm replaces the list).",
    )
)


@app.command("delete")
@connected
def acl_delete(
    conn: Conn,
    access_key: KeyArg,
    yes: YesOpt = False,
    file: FileOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Remove an account."""
    from admin.service.acl import file_delete

    confirm(f"delete ACL account {access_key}", yes)
    if file is not None:
        file_delete(file, access_key)
        targets = [str(file)]
    else:
        targets = conn.run(lambda s: s.acl_delete(access_key, cluster, broker))
    conn.emit(AclChanged(access_key, "deleted", targets), _changed_sections)


@app.command("white-list")
@connected
def acl_white_list(
    conn: Conn,
    set_to: SetWhiteOpt = None,
    add: AddWhiteOpt = None,
    remove: RemoveWhiteOpt = None,
    file: FileOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """The global white list (addresses that need no signature): show it, or change it with --set,
    --add or --remove on every broker of the cluster (or in a file)."""
    from admin.service.acl import WhiteEdit, file_white_list, file_white_update
    from broker.acl.addresses import split_patterns

    changed = set_to is not None or bool(add) or bool(remove)
    edit = WhiteEdit(None if set_to is None else split_patterns(set_to), add or [], remove or [])
    lists: list[AclWhiteList]
    if file is not None:
        lists = [file_white_update(file, edit) if changed else file_white_list(file)]
    elif changed:
        lists = conn.run(lambda s: s.acl_white_update(edit, cluster, broker))
    else:
        lists = conn.run(lambda s: s.acl_white_lists(cluster, broker))
    conn.emit(lists, _white_sections)


@app.command("version")
@connected
def acl_version(
    conn: Conn,
    file: FileOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """The ACL data version of each broker (or of a file): how many changes were written, and when
    the last one was; brokers that show different versions hold different ACLs."""
    from admin.service.acl import file_version

    if file is not None:
        conn.emit([file_version(file)], _version_sections)
        return
    conn.emit(conn.run(lambda s: s.acl_versions(cluster, broker)), _version_sections)


# == rendering =================================================================================
_COLUMNS = [
    "access key",
    "admin",
    "white address",
    "default topic",
    "default group",
    "topic perms",
    "group perms",
]


def _views_sections(views: list[AclView]) -> list[Section]:
    sections: list[Section] = []
    for v in views:
        title = v.broker if v.address is None else f"{v.broker} {v.address}"
        rows = [
            (a.access_key, "yes" if a.admin else "no", a.white_remote_address, a.default_topic_perm,
             a.default_group_perm, _perms(a.topic_perms), _perms(a.group_perms))
            for a in v.accounts
        ]  # fmt: skip
        sections.append(Table(_COLUMNS, rows, title=title))
        version = (
            "-" if v.data_version is None else _version_text(v.data_version.counter, v.data_version.timestamp)
        )
        sections.append(Fields([
            ("global white addresses", ", ".join(v.global_white_addresses) or "-"), ("data version", version),
        ]))  # fmt: skip
    return sections


def _version_text(counter: int, timestamp: int) -> str:
    return f"{counter} (changed {ms_time(timestamp)})"


def _white_sections(lists: list[AclWhiteList]) -> list[Section]:
    rows = [(w.broker, w.address, ", ".join(w.global_white_addresses) or "-") for w in lists]
    return [Table(["broker", "address", "global white addresses"], rows)]


def _version_sections(rows: list[AclVersionView]) -> list[Section]:
    table = [(r.cluster, r.broker, r.address, r.acl_file, r.counter, ms_time(r.timestamp)) for r in rows]
    return [Table(["cluster", "broker", "address", "ACL file", "version", "last change"], table)]


def _perms(perms: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in perms.items()) or "-"


def _changed_sections(c: AclChanged) -> list[Section]:
    return [Fields([("access key", c.access_key), (c.action + " on", ", ".join(c.targets))])]
