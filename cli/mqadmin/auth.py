"""The 5.x mqadmin access-control commands: createUser, updateUser, deleteUser, getUser, listUser,
copyUser, createAcl, updateAcl, deleteAcl, getAcl, listAcl and copyAcl, with RocketMQ's option letters and
descriptions. Changes with ``-c`` go to every broker of the cluster, slaves included; reads ask its
masters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import BadInput
from cli.mqadmin import render_auth
from cli.mqadmin.args import (
    BROKER_OR_CLUSTER,
    Command,
    Values,
    broker_or_cluster,
    cluster_or_broker,
    o,
    opt,
    req,
    targets,
)

if TYPE_CHECKING:
    from admin.service import AdminService


def _list(v: Values, name: str) -> list[str]:
    from admin.service.auth import split_list

    value = opt(v, name)
    return [] if value is None else split_list([value])


async def create_user(s: AdminService, v: Values) -> str:
    from admin.service.auth import user_spec

    spec = user_spec(req(v, "username"), req(v, "password"), opt(v, "userType"), create=True)
    change = await s.auth_user_put(spec, *targets(v), create=True)
    return render_auth.written("user", "create", change.targets)


async def update_user(s: AdminService, v: Values) -> str:
    from admin.service.auth import user_spec

    password, user_type, user_status = opt(v, "password"), opt(v, "userType"), opt(v, "userStatus")
    if password is None and user_type is None and user_status is None:  # upstream's second option group
        raise BadInput("Missing required option: [-p password, -t userType, -s userStatus]")
    spec = user_spec(req(v, "username"), password, user_type, user_status, create=False)
    change = await s.auth_user_put(spec, *targets(v), create=False)
    return render_auth.written("user", "update", change.targets)


async def delete_user(s: AdminService, v: Values) -> str:
    change = await s.auth_user_delete(req(v, "username"), *targets(v))
    return render_auth.written("user", "delete", change.targets)


async def get_user(s: AdminService, v: Values) -> str:
    return render_auth.user(await s.auth_user(req(v, "username"), *targets(v)))


async def list_user(s: AdminService, v: Values) -> str:
    cluster, broker = targets(v)
    return render_auth.users(await s.auth_users(cluster, broker, opt(v, "filter")), by_cluster=broker is None)


async def copy_user(s: AdminService, v: Values) -> str:
    result = await s.auth_users_copy(req(v, "fromBroker"), req(v, "toBroker"), _list(v, "usernames"))
    return render_auth.copied("user", result)


async def _put_acl(s: AdminService, v: Values, create: bool) -> str:
    from admin.service.auth import acl_spec

    spec = acl_spec(req(v, "subject"), _list(v, "resources"), _list(v, "actions"), req(v, "decision"),
                    _list(v, "sourceIp"))  # fmt: skip
    change = await s.auth_acl_put(spec, *targets(v), create=create)
    return render_auth.written("acl", "create" if create else "update", change.targets)


async def create_acl(s: AdminService, v: Values) -> str:
    return await _put_acl(s, v, True)


async def update_acl(s: AdminService, v: Values) -> str:
    return await _put_acl(s, v, False)


async def delete_acl(s: AdminService, v: Values) -> str:
    change = await s.auth_acl_delete(req(v, "subject"), opt(v, "resources"), *targets(v))
    return render_auth.written("acl", "delete", change.targets)


async def get_acl(s: AdminService, v: Values) -> str:
    return render_auth.acls(await s.auth_acl(req(v, "subject"), *targets(v)), per_acl_header=True)


async def list_acl(s: AdminService, v: Values) -> str:
    views = await s.auth_acls(*targets(v), opt(v, "subject"), opt(v, "resource"))
    return render_auth.acls(views, per_acl_header=False)


async def copy_acl(s: AdminService, v: Values) -> str:
    result = await s.auth_acls_copy(req(v, "fromBroker"), req(v, "toBroker"), _list(v, "subjects"))
    return render_auth.copied("acl", result)


COMMANDS: tuple[Command, ...] = (
    Command("createUser", "Create user to cluster.", (
        *cluster_or_broker("create user to which cluster", "create user to which broker"),
        o("u", "username", "the username of user to create.", True),
        o("p", "password", "the password of user to create", True),
        o("t", "userType", "the userType of user to create"),
    ), create_user, one_of=BROKER_OR_CLUSTER),
    Command("updateUser", "Update user to cluster.", (
        *cluster_or_broker("update user to which cluster", "update user to which broker"),
        o("u", "username", "the username of user to update.", True),
        o("p", "password", "the password of user to update"),
        o("t", "userType", "the userType of user to update"),
        o("s", "userStatus", "the userStatus of user to update"),
    ), update_user, one_of=BROKER_OR_CLUSTER),
    Command("deleteUser", "Delete user from cluster.", (
        *cluster_or_broker("delete acl from which cluster", "delete user from which broker"),
        o("u", "username", "the username of user to delete.", True),
    ), delete_user, one_of=BROKER_OR_CLUSTER),
    Command("getUser", "Get user from cluster.", (
        *broker_or_cluster("get user for which broker", "get user for specified cluster"),
        o("u", "username", "the username of user to get"),
    ), get_user, one_of=BROKER_OR_CLUSTER),
    Command("listUser", "List user from cluster.", (
        *broker_or_cluster("list user for which broker", "list user for specified cluster"),
        o("f", "filter", "the filter to list users"),
    ), list_user, one_of=BROKER_OR_CLUSTER),
    Command("copyUser", "Copy user to cluster.", (
        o("f", "fromBroker", "the source broker that the users copy from", True),
        o("t", "toBroker", "the target broker that the users copy to", True),
        o("u", "usernames", "the username list of user to copy."),
    ), copy_user),
    Command("createAcl", "Create acl to cluster.", (
        *cluster_or_broker("create acl to which cluster", "create acl to which broker"),
        o("s", "subject", "the subject of acl to create.", True),
        o("r", "resources", "the resources of acl to create", True),
        o("a", "actions", "the actions of acl to create", True),
        o("i", "sourceIp", "the sourceIps of acl to create"),
        o("d", "decision", "the decision of acl to create", True),
    ), create_acl, one_of=BROKER_OR_CLUSTER),
    Command("updateAcl", "Update acl to cluster.", (
        *cluster_or_broker("update acl to which cluster", "update acl to which broker"),
        o("s", "subject", "the subject of acl to update.", True),
        o("r", "resources", "the resources of acl to update", True),
        o("a", "actions", "the actions of acl to update", True),
        o("d", "decision", "the decision of acl to update", True),
        o("i", "sourceIp", "the sourceIps of acl to update"),
    ), update_acl, one_of=BROKER_OR_CLUSTER),
    Command("deleteAcl", "Delete acl from cluster.", (
        *cluster_or_broker("delete acl from which cluster", "delete acl from which broker"),
        o("s", "subject", "the subject of acl to delete.", True),
        o("r", "resources", "the resources of acl to delete"),
    ), delete_acl, one_of=BROKER_OR_CLUSTER),
    Command("getAcl", "Get acl from cluster.", (
        *broker_or_cluster("get acl for which broker", "get acl for specified cluster"),
        o("s", "subject", "the subject of acl to get"),
    ), get_acl, one_of=BROKER_OR_CLUSTER),
    Command("listAcl", "List acl from cluster.", (
        *broker_or_cluster("list acl for which broker.", "list acl for specified cluster."),
        o("s", "subject", "the subject of acl to filter."),
        o("r", "resource", "the resource of acl to filter."),
    ), list_acl, one_of=BROKER_OR_CLUSTER),
    Command("copyAcl", "Copy acl to cluster.", (
        o("f", "fromBroker", "the source broker that the acls copy from", True),
        o("t", "toBroker", "the target broker that the acls copy to", True),
        o("s", "subjects", "the subject list of acl to copy."),
    ), copy_acl),
)  # fmt: skip
