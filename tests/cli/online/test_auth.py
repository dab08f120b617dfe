"""``rmq auth user|acl``: RocketMQ 5 users and ACL policies against a real NameServer + broker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from tests.cli.online.conftest import Cluster, json_out

Rmq = Callable[..., Result]
PASSWORD = "pw-Auth-91xq"
OTHER_PASSWORD = "pw-Other-37kd"


def _failed(result: Result, code: int, *needles: str) -> None:
    """Exit ``code``, nothing on stdout, one line on stderr naming what is wrong."""
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("rmq: error: ") and all(n in line for n in needles), line


@pytest.fixture
def ns(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    monkeypatch.setenv("AUTH_TEST_PW", PASSWORD)
    return ("-n", cluster.namesrv)


def test_user_create_get_list_update_delete(cluster: Cluster, rmq: Rmq, ns: tuple[str, ...],
                                            tmp_path: Path) -> None:  # fmt: skip
    created = rmq("auth", "user", "create", "cli-alice", "--password-env", "AUTH_TEST_PW", *ns, "-o", "json")
    assert json_out(created) == {"username": "cli-alice", "action": "created", "targets": [cluster.broker]}
    secret = tmp_path / "pw.txt"
    secret.write_text(OTHER_PASSWORD + "\n")
    root = rmq("auth", "user", "create", "cli-root", "--password-file", secret, "--type", "super", *ns)
    assert root.exit_code == 0, root.output
    assert "cli-root" in root.stdout and "created on" in root.stdout

    got = json_out(rmq("auth", "user", "get", "cli-alice", *ns, "-o", "json"))
    alice = {"username": "cli-alice", "userType": "Normal", "userStatus": "enable"}
    assert got == [{"broker": "broker-a", "address": cluster.broker, "users": [alice]}]
    [view] = json_out(rmq("auth", "user", "list", "--filter", "cli-", *ns, "-o", "json"))
    assert {u["username"]: u["userType"] for u in view["users"]} == {
        "cli-alice": "Normal",
        "cli-root": "Super",
    }
    table = rmq("auth", "user", "list", *ns, "-o", "text")
    assert table.exit_code == 0 and "cli-root" in table.stdout and "Super" in table.stdout

    updated = rmq(
        "auth", "user", "update", "cli-alice", "--status", "DISABLE", "--password-file", secret, *ns
    )
    assert updated.exit_code == 0, updated.output
    [view] = json_out(rmq("auth", "user", "get", "cli-alice", *ns, "-o", "json"))
    assert view["users"][0]["userStatus"] == "disable"

    everything = "".join(
        r.output for r in (created, root, updated, table, rmq("auth", "user", "list", *ns, "-o", "json"))
    )
    assert PASSWORD not in everything and OTHER_PASSWORD not in everything

    deleted = json_out(rmq("auth", "user", "delete", "cli-alice", "--yes", *ns, "-o", "json"))
    assert deleted == {"username": "cli-alice", "action": "deleted", "targets": [cluster.broker]}
    _failed(rmq("auth", "user", "get", "cli-alice", *ns), 1, "cli-alice")
    _failed(rmq("auth", "user", "delete", "cli-alice", "--yes", *ns), 1, "cli-alice")
    assert rmq("auth", "user", "delete", "cli-root", "--yes", *ns).exit_code == 0


def test_user_bad_input(rmq: Rmq, ns: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    _failed(rmq("auth", "user", "create", "cli-nopw", *ns), 2, "--password-env")  # not on a terminal
    monkeypatch.delenv("AUTH_NOT_SET", raising=False)
    _failed(
        rmq("auth", "user", "create", "cli-nopw", "--password-env", "AUTH_NOT_SET", *ns), 2, "AUTH_NOT_SET"
    )
    bad_type = rmq(
        "auth", "user", "create", "cli-nopw", "--password-env", "AUTH_TEST_PW", "--type", "Root", *ns
    )
    _failed(bad_type, 2, "'Root'", "Super")
    _failed(rmq("auth", "user", "update", "cli-nopw", *ns), 2, "nothing to change")
    _failed(rmq("auth", "user", "update", "cli-nobody", "--status", "disable", *ns), 1, "cli-nobody")
    _failed(rmq("auth", "user", "get", "cli-nopw", *ns), 1, "cli-nopw")  # nothing was created

    twice = ("auth", "user", "create", "cli-twice", "--password-env", "AUTH_TEST_PW", *ns)
    assert rmq(*twice).exit_code == 0
    _failed(rmq(*twice), 1, "cli-twice", "exists")
    _failed(rmq("auth", "user", "delete", "cli-twice", *ns), 2, "--yes")
    assert rmq("auth", "user", "delete", "cli-twice", "--yes", *ns).exit_code == 0


def test_acl_create_get_list_update_delete(cluster: Cluster, rmq: Rmq, ns: tuple[str, ...]) -> None:
    assert rmq("auth", "user", "create", "cli-bob", "--password-env", "AUTH_TEST_PW", *ns).exit_code == 0
    created = rmq("auth", "acl", "create", "User:cli-bob", "-r", "topic:Orders,Group:orders-*", "-a", "pub",
                  "-a", "Sub", "-d", "allow", "-i", "10.0.0.0/8", *ns, "-o", "json")  # fmt: skip
    assert json_out(created) == {"subject": "User:cli-bob", "action": "created", "targets": [cluster.broker],
                              "resource": None}  # fmt: skip

    [view] = json_out(rmq("auth", "acl", "get", "cli-bob", *ns, "-o", "json"))  # a bare name is a user
    assert (view["broker"], view["address"]) == ("broker-a", cluster.broker)
    [acl] = view["acls"]
    assert acl["subject"] == "User:cli-bob"
    [policy] = acl["policies"]
    assert policy["policyType"] == "Custom"
    entries = {e["resource"]: e for e in policy["entries"]}
    assert entries["Topic:Orders"] == {"resource": "Topic:Orders", "actions": ["Pub", "Sub"],
                                       "sourceIps": ["10.0.0.0/8"], "decision": "Allow"}  # fmt: skip
    assert set(entries) == {"Topic:Orders", "Group:orders-*"}

    changed = rmq(
        "auth", "acl", "update", "User:cli-bob", "-r", "Topic:Orders", "-a", "Sub", "-d", "Deny", *ns
    )
    assert changed.exit_code == 0 and "updated on" in changed.stdout, changed.output
    [view] = json_out(rmq("auth", "acl", "get", "User:cli-bob", *ns, "-o", "json"))
    entries = {e["resource"]: e for p in view["acls"][0]["policies"] for e in p["entries"]}
    assert entries["Topic:Orders"]["actions"] == ["Sub"] and entries["Topic:Orders"]["decision"] == "Deny"
    assert entries["Topic:Orders"]["sourceIps"] == []
    assert entries["Group:orders-*"]["decision"] == "Allow"  # the other entry stays

    [listed] = json_out(rmq("auth", "acl", "list", "-s", "cli-bob", "-r", "Group", *ns, "-o", "json"))
    assert [e["resource"] for a in listed["acls"] for p in a["policies"] for e in p["entries"]] == [
        "Group:orders-*"
    ]
    text = rmq("auth", "acl", "list", *ns, "-o", "text")
    assert any(
        line.split() == ["broker-a", "User:cli-bob", "Custom", "Topic:Orders", "Sub", "any", "Deny"]
        for line in text.stdout.splitlines()
    ), text.stdout

    one = json_out(
        rmq("auth", "acl", "delete", "cli-bob", "-r", "group:orders-*", "--yes", *ns, "-o", "json")
    )
    assert one == {"subject": "User:cli-bob", "action": "deleted", "targets": [cluster.broker],
                   "resource": "Group:orders-*"}  # fmt: skip
    [view] = json_out(rmq("auth", "acl", "get", "cli-bob", *ns, "-o", "json"))
    assert [e["resource"] for p in view["acls"][0]["policies"] for e in p["entries"]] == ["Topic:Orders"]
    assert rmq("auth", "acl", "delete", "cli-bob", "--yes", *ns).exit_code == 0
    _failed(rmq("auth", "acl", "get", "cli-bob", *ns), 1, "cli-bob")
    _failed(rmq("auth", "acl", "delete", "cli-bob", "--yes", *ns), 1, "cli-bob")
    assert rmq("auth", "user", "delete", "cli-bob", "--yes", *ns).exit_code == 0


def test_acl_bad_input(rmq: Rmq, ns: tuple[str, ...]) -> None:
    def create(*args: str) -> Result:
        return rmq("auth", "acl", "create", "User:cli-carol", *args, *ns)

    _failed(create("-r", "Queue:x", "-a", "Pub", "-d", "Allow"), 2, "'Queue'")
    _failed(create("-r", "Topic:x", "-a", "Fly", "-d", "Allow"), 2, "'Fly'")
    _failed(create("-r", "Topic:x", "-a", "Pub", "-d", "Maybe"), 2, "'Maybe'")
    _failed(create("-r", "Topic:x", "-a", "Pub", "-d", "Allow", "-i", "10.0.0.300"), 2, "'10.0.0.300'")
    _failed(
        rmq("auth", "acl", "create", "Group:g", "-r", "Topic:x", "-a", "Pub", "-d", "Allow", *ns),
        2,
        "Group:g",
    )
    _failed(create("-r", "Topic:x", "-a", "Pub", "-d", "Allow"), 1, "cli-carol")  # no such user
    missing = create("-r", "Topic:x", "-a", "Pub")
    assert missing.exit_code == 2 and "--decision" in missing.stderr
    _failed(rmq("auth", "acl", "delete", "cli-carol", *ns), 2, "--yes")


def test_unreachable_broker(rmq: Rmq, ns: tuple[str, ...]) -> None:
    _failed(rmq("auth", "user", "list", "-b", "127.0.0.1:1", *ns), 3, "127.0.0.1:1")


def test_copy_onto_a_broker_that_has_them(cluster: Cluster, rmq: Rmq, ns: tuple[str, ...]) -> None:
    assert rmq("auth", "user", "create", "cli-dan", "--password-env", "AUTH_TEST_PW", *ns).exit_code == 0
    acl = ("auth", "acl", "create", "cli-dan", "-r", "Topic:Orders", "-a", "Get", "-d", "Allow", *ns)
    assert rmq(*acl).exit_code == 0
    where = ("--from", cluster.broker, "--to", cluster.broker, *ns, "-o", "json")
    users = json_out(rmq("auth", "user", "copy", "cli-dan", "cli-nobody", *where))
    assert users == {
        "source": cluster.broker,
        "target": cluster.broker,
        "created": [],
        "updated": ["cli-dan"],
    }
    acls = json_out(rmq("auth", "acl", "copy", "cli-dan", *where))
    assert acls == {
        "source": cluster.broker,
        "target": cluster.broker,
        "created": [],
        "updated": ["User:cli-dan"],
    }
    assert rmq("auth", "user", "delete", "cli-dan", "--yes", *ns).exit_code == 0
