"""The 5.x mqadmin access-control commands (createUser .. copyAcl) against real brokers, run in-process:
what they print, line for line as the Java tool, and that passwords never appear."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.server.config import BrokerConfig
from tests.cli.mqadmin.conftest import Cluster, Run
from tests.peers.conftest import LoopThread, small_store

Mqadmin = Callable[..., Run]
CLUSTER = "DefaultCluster"
PASSWORD = "pw-Mqadmin-58zt"


@pytest.fixture(scope="module")
def other_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second broker (with its own NameServer) to copy users and ACLs to."""
    tmp = tmp_path_factory.mktemp("auth-copy")
    plan = NodePlan(
        namesrv=NamesrvConfig(listen_port=0, kv_config_path=tmp / "kv.json"),
        broker=BrokerConfig(
            broker_name="broker-copy",
            listen_host="127.0.0.1",
            listen_port=0,
            http_port=0,
            ha_listen_port=0,
            grpc_port=-1,
        ),
        store=small_store(tmp / "store"),
    )
    loop, node = LoopThread(), Node(plan)
    loop.run(node.start())
    assert node.broker is not None
    try:
        yield node.broker.address
    finally:
        loop.run(node.stop(), timeout=60)
        loop.close()


def _row(*cells: str) -> str:
    return "{:<16}  {:<22}  {:<22}  {:<22}".format(*cells)


def _acl_row(*cells: str) -> str:
    return "{:<16}  {:<10}  {:<22}  {:<20}  {:<24}  {:<10}".format(*cells)


# Java's printf formats of GetUserSubCommand / GetAclSubCommand
USER_HEAD = _row("#UserName", "#Password", "#UserType", "#UserStatus")
ACL_HEAD = _acl_row("#Subject", "#PolicyType", "#Resource", "#Actions", "#SourceIp", "#Decision")


def _failed(run: Run, code: int, *needles: str) -> None:
    assert run.code == code, run
    [line] = run.err.splitlines()
    assert all(n in line for n in needles), line


def test_users(node: Cluster, mqadmin: Mqadmin) -> None:
    b = node.broker
    created = mqadmin("createUser", "-b", b, "-u", "mq-alice", "-p", PASSWORD)
    assert created == Run(0, f"create user to {b} success.\n", "")
    by_cluster = mqadmin("createUser", "-c", CLUSTER, "-u", "mq-root", "-p", PASSWORD, "-t", "Super")
    assert by_cluster.out == f"create user to {b} success.\n"

    got = mqadmin("getUser", "-b", b, "-u", "mq-alice")
    assert got.out.splitlines() == [USER_HEAD, _row("mq-alice", "", "Normal", "enable")]
    assert mqadmin("getUser", "-c", CLUSTER, "-u", "mq-nobody") == Run(0, "", "")  # nothing to print

    listed = mqadmin("listUser", "-c", CLUSTER, "-f", "mq-")
    assert listed.out.splitlines() == [
        USER_HEAD, _row("mq-alice", "", "Normal", "enable"), _row("mq-root", "", "Super", "enable"),
        f"get user from {b} success.",
    ]  # fmt: skip
    root = mqadmin("listUser", "-b", b, "-f", "mq-root")
    assert root.out.splitlines() == [USER_HEAD, _row("mq-root", "", "Super", "enable")]  # no "get user from"

    updated = mqadmin("updateUser", "-b", b, "-u", "mq-alice", "-s", "disable", "-p", "pw-New-11")
    assert updated.out == f"update user to {b} success.\n"
    alice = mqadmin("getUser", "-b", b, "-u", "mq-alice")
    assert alice.out.splitlines()[1] == _row("mq-alice", "", "Normal", "disable")
    shown = "".join(r.out + r.err for r in (created, by_cluster, got, listed, updated))
    assert PASSWORD not in shown and "pw-New-11" not in shown

    assert mqadmin("deleteUser", "-c", CLUSTER, "-u", "mq-alice").out == f"delete user to {b} success.\n"
    assert mqadmin("deleteUser", "-b", b, "-u", "mq-root").code == 0
    assert "mq-alice" not in mqadmin("listUser", "-b", b).out


def test_acls(node: Cluster, mqadmin: Mqadmin) -> None:
    b = node.broker
    assert mqadmin("createUser", "-b", b, "-u", "mq-bob", "-p", PASSWORD).code == 0
    created = mqadmin("createAcl", "-c", CLUSTER, "-s", "User:mq-bob", "-r", "Topic:Orders,Group:orders-cg",
                      "-a", "Pub,Sub", "-d", "Allow", "-i", "10.1.0.0/16")  # fmt: skip
    assert created == Run(0, f"create acl to {b} success.\n", "")
    got = mqadmin("getAcl", "-b", b, "-s", "User:mq-bob")
    assert got.out.splitlines() == [
        ACL_HEAD,
        _acl_row("User:mq-bob", "Custom", "Topic:Orders", "[Pub, Sub]", "[10.1.0.0/16]", "Allow"),
        _acl_row("User:mq-bob", "Custom", "Group:orders-cg", "[Pub, Sub]", "[10.1.0.0/16]", "Allow"),
    ]

    updated = mqadmin(
        "updateAcl", "-b", b, "-s", "User:mq-bob", "-r", "Topic:Orders", "-a", "Sub", "-d", "Deny"
    )
    assert updated.out == f"update acl to {b} success.\n"
    listed = mqadmin("listAcl", "-c", CLUSTER, "-s", "mq-bob")
    assert listed.out.splitlines() == [
        ACL_HEAD,
        _acl_row("User:mq-bob", "Custom", "Topic:Orders", "[Sub]", "null", "Deny"),
        _acl_row("User:mq-bob", "Custom", "Group:orders-cg", "[Pub, Sub]", "[10.1.0.0/16]", "Allow"),
    ]
    only_group = mqadmin("listAcl", "-b", b, "-s", "mq-bob", "-r", "Group")
    assert [line.split()[2] for line in only_group.out.splitlines()[1:]] == ["Group:orders-cg"]

    deleted = mqadmin("deleteAcl", "-b", b, "-s", "User:mq-bob", "-r", "Topic:Orders")
    assert deleted.out == f"delete acl to {b} success.\n"
    assert [
        line.split()[2] for line in mqadmin("getAcl", "-b", b, "-s", "User:mq-bob").out.splitlines()[1:]
    ] == ["Group:orders-cg"]
    assert mqadmin("deleteAcl", "-c", CLUSTER, "-s", "User:mq-bob").out == f"delete acl to {b} success.\n"
    assert mqadmin("getAcl", "-b", b, "-s", "User:mq-bob") == Run(0, "", "")
    assert mqadmin("deleteUser", "-b", b, "-u", "mq-bob").code == 0


def test_copy_users_and_acls(node: Cluster, mqadmin: Mqadmin, other_broker: str) -> None:
    b, other = node.broker, other_broker
    assert mqadmin("createUser", "-b", b, "-u", "mq-carol", "-p", PASSWORD, "-t", "Super").code == 0
    assert mqadmin("createAcl", "-b", b, "-s", "User:mq-carol", "-r", "Topic:Orders", "-a", "Pub",
                   "-d", "Allow").code == 0  # fmt: skip

    # passwords never leave a broker, so a user new on the target cannot be copied
    _failed(mqadmin("copyUser", "-f", b, "-t", other, "-u", "mq-carol"), 1, "mq-carol", "create it on")
    assert mqadmin("createUser", "-b", other, "-u", "mq-carol", "-p", "pw-Other-2").code == 0
    copied = mqadmin("copyUser", "-f", b, "-t", other, "-u", "mq-carol,mq-nobody")
    assert copied == Run(0, f"copy user of mq-carol from {b} to {other} success.\n", "")
    assert mqadmin("getUser", "-b", other, "-u", "mq-carol").out.splitlines()[1].split() == [
        "mq-carol", "Super", "enable"
    ]  # fmt: skip

    acls = mqadmin("copyAcl", "-f", b, "-t", other, "-s", "User:mq-carol")
    assert acls == Run(0, f"copy acl of User:mq-carol from {b} to {other} success.\n", "")
    assert mqadmin("getAcl", "-b", other, "-s", "User:mq-carol").out.splitlines()[1:] == [
        _acl_row("User:mq-carol", "Custom", "Topic:Orders", "[Pub]", "null", "Allow")
    ]
    for broker in (b, other):
        assert mqadmin("deleteUser", "-b", broker, "-u", "mq-carol").code == 0


def test_bad_input(node: Cluster, mqadmin: Mqadmin) -> None:
    b = node.broker
    _failed(mqadmin("createUser", "-b", b, "-u", "mq-dave", "-p", PASSWORD, "-t", "Root"), 2, "'Root'")
    _failed(mqadmin("updateUser", "-b", b, "-u", "mq-dave"), 2, "-p password", "-s userStatus")
    _failed(mqadmin("updateUser", "-b", b, "-u", "mq-nobody", "-s", "disable"), 1, "mq-nobody")
    acl = ("createAcl", "-b", b, "-s", "User:mq-dave")
    _failed(mqadmin(*acl, "-r", "Topic:T", "-a", "Publish", "-d", "Allow"), 2, "'Publish'")
    _failed(mqadmin(*acl, "-r", "Topic:T", "-a", "Pub", "-d", "Allow", "-i", "300.1.1.1"), 2, "'300.1.1.1'")
    _failed(mqadmin(*acl, "-r", "Topic:T", "-a", "Pub", "-d", "Allow"), 1, "mq-dave")  # no such user
    assert "mq-dave" not in mqadmin("listUser", "-b", b).out

    missing = mqadmin("createUser", "-b", b, "-u", "mq-dave")
    assert missing.code == 2 and missing.err == "Missing required option: p\n"
    assert missing.out.startswith("usage: mqadmin createUser (-b <arg> | -c <arg>) ")
    neither = mqadmin("createAcl", "-s", "User:x", "-r", "Topic:T", "-a", "Pub", "-d", "Allow")
    assert neither.code == 2 and neither.err.startswith("Missing required option: [-c ")
    _failed(mqadmin("listUser", "-b", "127.0.0.1:1"), 3, "127.0.0.1:1")


def test_help_and_listing(mqadmin: Mqadmin) -> None:
    shown = mqadmin("help", "createAcl")
    usage = (
        "usage: mqadmin createAcl -a <arg> (-b <arg> | -c <arg>) -d <arg> [-h] [-i <arg>] [-n <arg>] -r <arg>"
    )
    assert shown.code == 0 and shown.out.startswith(usage), shown.out
    assert " -i,--sourceIp <arg>" in shown.out
    listing = mqadmin().out
    for name in ("createUser", "updateUser", "deleteUser", "getUser", "listUser", "copyUser",
                 "createAcl", "updateAcl", "deleteAcl", "getAcl", "listAcl", "copyAcl"):  # fmt: skip
        assert name in listing
