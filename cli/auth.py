"""``rmq auth user|acl``: RocketMQ 5 access control, the users brokers authenticate and the ACL
policies that say what a subject (``User:NAME``) may do, over the wire as 5.x mqadmin's createUser ..
copyAcl do. Reads ask one broker (``-b``) or the masters of the cluster; changes go to one broker or to
every broker of the cluster, slaves included.

Passwords are read from an environment variable, a file or a hidden prompt, never from the command
line, and never printed (brokers do not send them back).
"""

from __future__ import annotations

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
from cli.output import Fields, Section, Table

if TYPE_CHECKING:
    from admin.models.auth import AclChange, BrokerAcls, BrokerUsers, CopyResult, UserChange

app = typer.Typer(help="RocketMQ 5 access control: users and ACL policies.", no_args_is_help=True)
user_app = typer.Typer(help="Users: name, password, type (Super, Normal), status.", no_args_is_help=True)
acl_app = typer.Typer(help="ACL policies: what a subject may do with which resources.", no_args_is_help=True)
app.add_typer(user_app, name="user")
app.add_typer(acl_app, name="acl")

UserArg = Annotated[str, typer.Argument(metavar="USERNAME", help="The user's name.", show_default=False)]
SubjectArg = Annotated[
    str, typer.Argument(metavar="SUBJECT", help="User:NAME (a bare NAME is a user).", show_default=False)
]
PasswordEnvOpt = Annotated[
    str | None, typer.Option("--password-env", metavar="VAR", help="Read the password from this variable.")
]
PasswordFileOpt = Annotated[
    Path | None,
    typer.Option("--password-file", metavar="PATH", help="Read the password from this file's first line."),
]
UserTypeOpt = Annotated[str | None, typer.Option("--type", metavar="TYPE", help="Super or Normal.")]
UserStatusOpt = Annotated[str | None, typer.Option("--status", metavar="STATUS", help="enable or disable.")]
ResourcesOpt = Annotated[
    list[str],
    typer.Option(
        "-r", "--resource", metavar="RESOURCE",
        help="* or TYPE:NAME (Topic, Group, Cluster, Namespace; NAME*: prefix); repeatable, comma-separated.",
    ),
]  # fmt: skip
ActionsOpt = Annotated[
    list[str],
    typer.Option(
        "-a", "--action", metavar="ACTION",
        help="All, Pub, Sub, Create, Update, Delete, Get or List; repeatable or comma-separated.",
    ),
]  # fmt: skip
DecisionOpt = Annotated[str, typer.Option("-d", "--decision", metavar="DECISION", help="Allow or Deny.")]
SourceIpsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "-i", "--source-ip", metavar="IP",
        help="Only requests from this address or CIDR range; repeatable or comma-separated.",
    ),
]  # fmt: skip
FromOpt = Annotated[str, typer.Option("--from", metavar="ADDR", help="The broker to copy from.")]
ToOpt = Annotated[str, typer.Option("--to", metavar="ADDR", help="The broker to copy to.")]


def _read_password(env: str | None, path: Path | None, required: bool) -> str | None:
    from admin.errors import BadInput

    if env is not None and path is not None:
        raise BadInput("give --password-env or --password-file, not both")
    return secret_or_prompt(env, path, required, "password", "Password")


# == rmq auth user =============================================================================
@user_app.command("list")
@connected
def user_list(
    conn: Conn,
    name_filter: Annotated[
        str | None, typer.Option("--filter", metavar="TEXT", help="Only users whose name holds TEXT.")
    ] = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """The users of each broker (passwords are never shown)."""
    conn.emit(conn.run(lambda s: s.auth_users(cluster, broker, name_filter)), _users_sections)


@user_app.command("get")
@connected
def user_get(
    conn: Conn,
    username: UserArg,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """One user on each broker; exits 1 when no broker has it."""
    views = conn.run(lambda s: s.auth_user(username, cluster, broker))
    conn.emit_found(views, lambda v: v.users, f"no user {username}", _users_sections)


@user_app.command("create")
@connected
def user_create(
    conn: Conn,
    username: UserArg,
    password_env: PasswordEnvOpt = None,
    password_file: PasswordFileOpt = None,
    user_type: UserTypeOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Add a user (its password from --password-env, --password-file or a hidden prompt)."""
    _put_user(conn, True, username, (password_env, password_file), (user_type, None), (cluster, broker))


@user_app.command("update")
@connected
def user_update(
    conn: Conn,
    username: UserArg,
    password_env: PasswordEnvOpt = None,
    password_file: PasswordFileOpt = None,
    user_type: UserTypeOpt = None,
    user_status: UserStatusOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Change a user's password, type or status (what is not given stays)."""
    _put_user(
        conn, False, username, (password_env, password_file), (user_type, user_status), (cluster, broker)
    )


def _put_user(
    conn: Conn,
    create: bool,
    username: str,
    password_from: tuple[str | None, Path | None],
    type_status: tuple[str | None, str | None],
    where: tuple[str | None, str | None],
) -> None:
    from admin.service.auth import user_spec

    password = _read_password(*password_from, required=create)
    spec = user_spec(username, password, *type_status, create=create)
    cluster, broker = where
    conn.emit(conn.run(lambda s: s.auth_user_put(spec, cluster, broker, create=create)), _user_changed)


@user_app.command("delete")
@connected
def user_delete(
    conn: Conn,
    username: UserArg,
    yes: YesOpt = False,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Remove a user; exits 1 when no broker has it."""
    confirm(f"delete user {username}", yes)
    conn.emit(conn.run(lambda s: s.auth_user_delete(username, cluster, broker)), _user_changed)


@user_app.command("copy")
@connected
def user_copy(
    conn: Conn,
    source: FromOpt,
    target: ToOpt,
    usernames: Annotated[
        list[str] | None, typer.Argument(metavar="[USERNAME]...", help="Only these users [default: all].")
    ] = None,
) -> None:
    """Copy users from one broker to another: their type and status, updated where the target has
    them (a user new on the target needs a broker that sends passwords back)."""
    conn.emit(conn.run(lambda s: s.auth_users_copy(source, target, usernames or [])), _copied)


# == rmq auth acl ==============================================================================
@acl_app.command("list")
@connected
def acl_list(
    conn: Conn,
    subject: Annotated[
        str | None, typer.Option("-s", "--subject", metavar="TEXT", help="Only subjects that hold TEXT.")
    ] = None,
    resource: Annotated[
        str | None,
        typer.Option("-r", "--resource", metavar="TEXT", help="Only entries whose resource holds TEXT."),
    ] = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """The ACLs of each broker: subject, policy type, resource, actions, source IPs, decision."""
    conn.emit(conn.run(lambda s: s.auth_acls(cluster, broker, subject, resource)), _acls_sections)


@acl_app.command("get")
@connected
def acl_get(
    conn: Conn,
    subject: SubjectArg,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """A subject's ACL on each broker; exits 1 when no broker has one."""
    views = conn.run(lambda s: s.auth_acl(subject, cluster, broker))
    conn.emit_found(views, lambda v: v.acls, f"no ACL for {subject}", _acls_sections)


def _put_acl(
    create: bool,
    conn: Conn,
    subject: SubjectArg,
    resource: ResourcesOpt,
    action: ActionsOpt,
    decision: DecisionOpt,
    source_ip: SourceIpsOpt = None,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    from admin.service.auth import acl_spec, split_list

    spec = acl_spec(subject, split_list(resource), split_list(action), decision, split_list(source_ip))
    conn.emit(conn.run(lambda s: s.auth_acl_put(spec, cluster, broker, create=create)), _acl_changed)


acl_app.command("create")(
    connected_as(
        _put_acl,
        True,
        """Give a subject a policy: an entry per resource with these actions, source IPs and decision
    (entries of resources the subject has already are replaced).""",
    )
)
acl_app.command("update")(
    connected_as(
        _put_acl,
        False,
        "Change the entries of these resources in a subject's policy (the other entries stay).",
    )
)


@acl_app.command("delete")
@connected
def acl_delete(
    conn: Conn,
    subject: SubjectArg,
    resource: Annotated[
        str | None, typer.Option("-r", "--resource", metavar="RESOURCE", help="Only this resource's entries.")
    ] = None,
    yes: YesOpt = False,
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Remove a subject's ACL, or only its entries for one resource; exits 1 when no broker has one."""
    what = f"the {resource} entries of {subject}" if resource else f"the ACL of {subject}"
    confirm(f"delete {what}", yes)
    conn.emit(conn.run(lambda s: s.auth_acl_delete(subject, resource, cluster, broker)), _acl_changed)


@acl_app.command("copy")
@connected
def acl_copy(
    conn: Conn,
    source: FromOpt,
    target: ToOpt,
    subjects: Annotated[
        list[str] | None, typer.Argument(metavar="[SUBJECT]...", help="Only these subjects [default: all].")
    ] = None,
) -> None:
    """Copy ACLs from one broker to another (created, or merged into the target's)."""
    conn.emit(conn.run(lambda s: s.auth_acls_copy(source, target, subjects or [])), _copied)


# == rendering =================================================================================
def _users_sections(views: list[BrokerUsers]) -> list[Section]:
    rows = [
        (v.broker, v.address, u.username, u.user_type or "-", u.user_status or "-")
        for v in views
        for u in v.users
    ]
    return [Table(["broker", "address", "username", "type", "status"], rows)]


def _acls_sections(views: list[BrokerAcls]) -> list[Section]:
    rows: list[tuple[str, ...]] = []
    for v in views:
        for acl in v.acls:
            entries = [(p.policy_type or "-", e) for p in acl.policies for e in p.entries]
            if not entries:
                rows.append((v.broker, acl.subject, "-", "-", "-", "-", "-"))
            rows.extend(
                (v.broker, acl.subject, kind, e.resource, ",".join(e.actions),
                 ",".join(e.source_ips) or "any", e.decision)
                for kind, e in entries
            )  # fmt: skip
    return [Table(["broker", "subject", "policy", "resource", "actions", "source IPs", "decision"], rows)]


def _user_changed(c: UserChange) -> list[Section]:
    return [Fields([("username", c.username), (c.action + " on", ", ".join(c.targets))])]


def _acl_changed(c: AclChange) -> list[Section]:
    items: list[tuple[str, object]] = [("subject", c.subject)]
    if c.resource is not None:
        items.append(("resource", c.resource))
    items.append((c.action + " on", ", ".join(c.targets)))
    return [Fields(items)]


def _copied(c: CopyResult) -> list[Section]:
    return [Fields([("from", c.source), ("to", c.target), ("created", ", ".join(c.created) or "-"),
                    ("updated", ", ".join(c.updated) or "-")])]  # fmt: skip
