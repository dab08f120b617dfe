"""The 4.x mqadmin plain ACL commands: updateAclConfig, deleteAclConfig, clusterAclConfigVersion,
updateGlobalWhiteAddr and getAclConfig, with RocketMQ 4.9's option letters and descriptions. Changes
with ``-c`` go to every broker of the cluster, slaves included; reads ask its masters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cli.mqadmin import render_acl
from cli.mqadmin.args import BROKER_OR_CLUSTER, Command, Values, broker_or_cluster, o, opt, req, targets

if TYPE_CHECKING:
    from admin.service import AdminService


def _list(v: Values, name: str) -> list[str] | None:
    value = opt(v, name)
    return None if value is None else value.split(",")


async def update_acl_config(s: AdminService, v: Values) -> str:
    from admin.service.acl import AccountChange

    admin = opt(v, "admin")
    change = AccountChange(
        access_key=req(v, "accessKey"),
        secret_key=req(v, "secretKey"),
        white_remote_address=opt(v, "whiteRemoteAddress"),
        admin=None if admin is None else admin.lower() == "true",  # Boolean.parseBoolean
        default_topic_perm=opt(v, "defaultTopicPerm"),
        default_group_perm=opt(v, "defaultGroupPerm"),
        topic_perms=_list(v, "topicPerms"),
        group_perms=_list(v, "groupPerms"),
    )
    return render_acl.account_updated(await s.acl_put(change, *targets(v)), change)


async def delete_acl_config(s: AdminService, v: Values) -> str:
    access_key = req(v, "accessKey")
    return render_acl.account_deleted(await s.acl_remove(access_key, *targets(v)), access_key)


async def cluster_acl_config_version(s: AdminService, v: Values) -> str:
    cluster, broker = targets(v)
    return render_acl.acl_versions(await s.acl_versions(cluster, broker), by_cluster=broker is None)


async def update_global_white_addr(s: AdminService, v: Values) -> str:
    from admin.service.acl import WhiteEdit
    from broker.acl.addresses import split_patterns

    edit = WhiteEdit(replace=split_patterns(req(v, "globalWhiteRemoteAddresses")))
    written = await s.acl_white_update(edit, *targets(v), acl_file=opt(v, "aclFileFullPath"))
    return render_acl.global_white_updated(written)


async def get_acl_config(s: AdminService, v: Values) -> str:
    return render_acl.acl_config(await s.acl_list(*targets(v)))


COMMANDS: tuple[Command, ...] = (
    Command("updateAclConfig", "Update acl config yaml file in broker", (
        *broker_or_cluster("update acl config file to which broker",
                           "update acl config file to which cluster"),
        o("a", "accessKey", "set accessKey in acl config file", True),
        o("s", "secretKey", "set secretKey in acl config file", True),
        o("w", "whiteRemoteAddress", "set white ip Address for account in acl config file"),
        o("i", "defaultTopicPerm", "set default topicPerm in acl config file"),
        o("u", "defaultGroupPerm", "set default GroupPerm in acl config file"),
        o("t", "topicPerms", "set topicPerms list,eg: topicA=DENY,topicD=SUB"),
        o("g", "groupPerms", "set groupPerms list,eg: groupD=DENY,groupD=SUB"),
        o("m", "admin", "set admin flag in acl config file"),
    ), update_acl_config, one_of=BROKER_OR_CLUSTER),
    Command("deleteAclConfig", "Delete Acl Config Account in broker", (
        *broker_or_cluster("delete acl config account from which broker",
                           "delete acl config account from which cluster"),
        o("a", "accessKey", "set accessKey in acl config file for deleting which account", True),
    ), delete_acl_config, one_of=BROKER_OR_CLUSTER),
    Command("clusterAclConfigVersion", "List all of acl config version information in cluster", (
        *broker_or_cluster("query acl config version for which broker",
                           "query acl config version for specified cluster"),
    ), cluster_acl_config_version, one_of=BROKER_OR_CLUSTER),
    Command("updateGlobalWhiteAddr", "Update global white address for acl Config File in broker", (
        *broker_or_cluster("update global white address to which broker",
                           "update global white address to which cluster"),
        o("g", "globalWhiteRemoteAddresses",
          "set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*", True),
        o("p", "aclFileFullPath",
          "update global white address of specified acl file,eg: /xxx/plain_test.yml"),
    ), update_global_white_addr, one_of=BROKER_OR_CLUSTER),
    Command("getAclConfig", "List all of acl config information in cluster", (
        *broker_or_cluster("query acl config version for which broker",
                           "query acl config version for specified cluster"),
    ), get_acl_config, one_of=BROKER_OR_CLUSTER),
)  # fmt: skip
