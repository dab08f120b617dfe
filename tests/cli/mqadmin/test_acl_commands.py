"""The 4.x mqadmin ACL commands (updateAclConfig, deleteAclConfig, clusterAclConfigVersion,
updateGlobalWhiteAddr, getAclConfig) against a NameServer + broker with ACL on, run in-process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.acl import config as acl_config
from tests.broker.acl.conftest import ACL_YAML, ADMIN, SECRETS, AclCluster, seed, start_node
from tests.cli.mqadmin.conftest import Run, captured

Mqadmin = Callable[..., Run]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    tmp = tmp_path_factory.mktemp("mqadmin-acl")
    acl_file = tmp / "plain_acl.yml"
    acl_file.write_text(ACL_YAML)
    loop, node = start_node(tmp, acl_file)
    try:
        yield seed(AclCluster(loop, node, acl_file))
    finally:
        loop.run(node.stop(), timeout=60)
        loop.close()


@pytest.fixture
def mqadmin(cluster: AclCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Mqadmin:
    """``mqadmin`` signed with the admin account (as tools.yml would give the Java tool)."""
    from cli.mqadmin import main

    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("NAMESRV_ADDR", cluster.namesrv)
    monkeypatch.setenv("RMQ_ACCESS_KEY", ADMIN.access_key)
    monkeypatch.setenv("RMQ_SECRET_KEY", ADMIN.secret_key)

    return lambda *args: captured(main, *args)


def _failed_with_one_line(run: Run, code: int, *needles: str) -> None:
    assert run.code == code, run
    lines = run.err.splitlines()
    assert len(lines) == 1, lines
    assert all(n in lines[0] for n in needles), lines[0]


def test_update_get_and_delete_an_account(cluster: AclCluster, mqadmin: Mqadmin) -> None:
    b = cluster.broker_addr
    created = mqadmin("updateAclConfig", "-b", b, "-a", "mq-app-01", "-s", "mq-secret-77",
                      "-t", "AclTopic=PUB,AclOther=SUB", "-u", "SUB", "-w", "10.0.0.*")  # fmt: skip
    assert created.code == 0, created
    first, config = created.out.split("\n", 1)
    assert first == f"create or update plain access config to {b} success."
    assert config.startswith("PlainAccessConfig{accessKey=mq-app-01, whiteRemoteAddress=10.0.0.*, ")
    assert "mq-secret-77" not in created.out
    account = acl_config.load(cluster.acl_file).accounts["mq-app-01"]
    assert account.topic_perms == {"AclTopic": "PUB", "AclOther": "SUB"}
    assert account.default_group_perm == "SUB" and account.white_remote_address == "10.0.0.*"

    shown = mqadmin("getAclConfig", "-b", b)
    assert shown.code == 0, shown
    assert shown.out.startswith("\nglobalWhiteRemoteAddresses: []\n\naccounts:\n")
    block = shown.out[shown.out.index("  accessKey         : mq-app-01\n") :].split("\n\n")[0]
    assert block.splitlines() == [  # Java's "%-1s %-18s: %s" of each field
        "  accessKey         : mq-app-01",
        "  secretKey         : ",
        "  whiteRemoteAddress: 10.0.0.*",
        "  admin             : false",
        "  defaultTopicPerm  : DENY",
        "  defaultGroupPerm  : SUB",
        "  topicPerms        : [AclTopic=PUB, AclOther=SUB]",
        "  groupPerms        : []",
    ]
    assert not any(secret in shown.out for secret in (*SECRETS, "mq-secret-77"))

    deleted = mqadmin("deleteAclConfig", "-c", "DefaultCluster", "-a", "mq-app-01")
    assert deleted.code == 0, deleted
    lines = f"delete plain access config account from {b} success.\naccount's accesskey is:mq-app-01"
    assert deleted.out == lines  # no newline at the end, as the Java tool
    assert "mq-app-01" not in acl_config.load(cluster.acl_file).accounts


def test_global_white_addresses_and_version(cluster: AclCluster, mqadmin: Mqadmin) -> None:
    b = cluster.broker_addr
    before = mqadmin("clusterAclConfigVersion", "-b", b)
    assert before.code == 0, before
    *rows, last = before.out.splitlines()
    assert last == "get broker's plain access config version success."
    [row] = rows
    cluster_name, broker_name, addr, path, counter, day, clock = row.split()
    assert (cluster_name, broker_name, addr) == ("DefaultCluster", "acl-broker", b)
    assert path == str(cluster.acl_file.resolve()) and len(f"{day} {clock}") == 19

    updated = mqadmin("updateGlobalWhiteAddr", "-c", "DefaultCluster", "-g", "10.10.103.*,192.168.0.{1,2}")
    assert updated.code == 0, updated
    assert updated.out == f"update global white remote addresses to {b} success.\n"
    assert acl_config.load(cluster.acl_file).global_white_addresses == ["10.10.103.*", "192.168.0.{1,2}"]
    shown = mqadmin("getAclConfig", "-c", "DefaultCluster")
    assert shown.out.startswith("\nglobalWhiteRemoteAddresses: [10.10.103.*, 192.168.0.{1,2}]\n")

    after = mqadmin("clusterAclConfigVersion", "-c", "DefaultCluster")
    header, row, last = after.out.splitlines()
    assert header.split() == ["#Cluster", "Name", "#Broker", "Name", "#Broker", "Addr", "#AclFilePath",
                              "#AclConfigVersionNum", "#AclLastUpdateTime"]  # fmt: skip
    assert int(row.split()[4]) == int(counter) + 1  # one more change written
    assert last == "get cluster's plain access config version success."

    cleared = mqadmin("updateGlobalWhiteAddr", "-b", b, "-g", "", "-p", cluster.acl_file)
    assert cleared.code == 0, cleared
    assert acl_config.load(cluster.acl_file).global_white_addresses == []


def test_bad_input(cluster: AclCluster, mqadmin: Mqadmin, tmp_path: Path) -> None:
    b = cluster.broker_addr
    text = cluster.acl_file.read_bytes()
    _failed_with_one_line(mqadmin("updateGlobalWhiteAddr", "-b", b, "-g", "10.0.0.300"), 2, "'10.0.0.300'")
    other = tmp_path / "other.yml"
    elsewhere = mqadmin("updateGlobalWhiteAddr", "-b", b, "-g", "10.0.0.1", "-p", other)
    _failed_with_one_line(elsewhere, 1, "aclFileFullPath", str(other))
    bad_perm = mqadmin("updateAclConfig", "-b", b, "-a", "mq-app-02", "-s", "mq-secret-77", "-i", "WRITE")
    _failed_with_one_line(bad_perm, 1, "'WRITE'")
    _failed_with_one_line(mqadmin("deleteAclConfig", "-b", b, "-a", "nobody-here"), 1, "nobody-here")
    assert cluster.acl_file.read_bytes() == text  # nothing was written
    _failed_with_one_line(mqadmin("getAclConfig", "-b", "127.0.0.1:1"), 3, "127.0.0.1:1")
    _failed_with_one_line(mqadmin("clusterAclConfigVersion", "-c", "NoSuchCluster"), 1, "NoSuchCluster")

    missing = mqadmin("updateAclConfig", "-b", b, "-a", "mq-app-02")
    assert missing.code == 2 and missing.err == "Missing required option: s\n"
    assert missing.out.startswith("usage: mqadmin updateAclConfig ")
    neither = mqadmin("updateGlobalWhiteAddr", "-g", "10.0.0.1")
    assert neither.code == 2 and neither.err.startswith("Missing required option: [-b ")


def test_help_lists_upstream_options(mqadmin: Mqadmin) -> None:
    shown = mqadmin("help", "updateGlobalWhiteAddr")
    assert shown.code == 0
    usage = "usage: mqadmin updateGlobalWhiteAddr (-b <arg> | -c <arg>) -g <arg> [-h] [-n <arg>] [-p <arg>]"
    assert shown.out.startswith(usage)
    assert " -p,--aclFileFullPath <arg>" in shown.out
    listing = mqadmin().out
    for name in ("updateAclConfig", "deleteAclConfig", "clusterAclConfigVersion", "updateGlobalWhiteAddr",
                 "getAclConfig"):  # fmt: skip
        assert name in listing
