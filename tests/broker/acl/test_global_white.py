"""The global white list over the wire (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, 53) and through
``rmq acl white-list``, and the ACL data version (``rmq acl version``, ``acl list``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from broker.acl import config as acl_config
from broker.acl.client import secure
from broker.acl.permissions import AclCode
from broker.acl.signer import Credentials
from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import ResponseCode
from broker.protocol.remoting import make_request
from tests.broker.acl.conftest import ADMIN, APP, TOPIC, AclCluster, security
from tests.broker.acl.test_remoting import _send

Rmq = Callable[..., Result]


@pytest.fixture
def rmq(acl_cluster: AclCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Rmq:
    """``rmq`` in-process, signed with the admin account, against the ACL cluster."""
    from cli.main import app

    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("NAMESRV_ADDR", acl_cluster.namesrv)
    monkeypatch.setenv("RMQ_ACCESS_KEY", ADMIN.access_key)
    monkeypatch.setenv("RMQ_SECRET_KEY", ADMIN.secret_key)
    for var in ("RMQ_PROFILE", "RMQ_OUTPUT", "RMQ_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _one_error_line(result: Result, code: int, *needles: str) -> None:
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and all(n in lines[0] for n in needles), lines


async def _white_request(c: AclCluster, who: Credentials, **fields: str) -> tuple[int, str]:
    client = RemotingClient()
    secure(client, security(who))
    request = make_request(AclCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext_fields=fields)
    try:
        response = await client.invoke(c.broker_addr, request)
    finally:
        await client.close()
    return response.code, response.remark or ""


def test_white_listed_addresses_need_no_signature(acl_cluster: AclCluster, rmq: Rmq) -> None:
    c = acl_cluster
    assert c.loop.run(_send(c, None, TOPIC))[0] == ResponseCode.NO_PERMISSION
    [before] = _json(rmq("acl", "version", "-o", "json"))
    [written] = _json(rmq("acl", "white-list", "--add", "127.0.0.1", "--add", "10.1.*.*", "-o", "json"))
    assert written == {"broker": "acl-broker", "address": c.broker_addr,
                       "globalWhiteAddresses": ["127.0.0.1", "10.1.*.*"]}  # fmt: skip
    assert acl_config.load(c.acl_file).global_white_addresses == ["127.0.0.1", "10.1.*.*"]
    assert c.loop.run(_send(c, None, TOPIC))[0] == ResponseCode.SUCCESS  # in force at once

    [after] = _json(rmq("acl", "version", "-o", "json"))
    assert after["counter"] == before["counter"] + 1 and after["timestamp"] >= before["timestamp"]
    assert after["cluster"] == "DefaultCluster" and after["aclFile"] == str(c.acl_file.resolve())
    [view] = _json(rmq("acl", "list", "-o", "json"))
    assert view["dataVersion"] == {"counter": after["counter"], "timestamp": after["timestamp"]}

    [removed] = _json(rmq("acl", "white-list", "--remove", "127.0.0.1", "-o", "json"))
    assert removed["globalWhiteAddresses"] == ["10.1.*.*"]
    assert c.loop.run(_send(c, None, TOPIC))[0] == ResponseCode.NO_PERMISSION
    shown = rmq("acl", "white-list", "-b", c.broker_addr)
    assert shown.exit_code == 0 and "10.1.*.*" in shown.stdout
    cleared = _json(rmq("acl", "white-list", "--set", "", "-c", "DefaultCluster", "-o", "json"))
    assert cleared[0]["globalWhiteAddresses"] == []


def test_the_broker_refuses_bad_requests_and_writes_nothing(acl_cluster: AclCluster) -> None:
    c = acl_cluster
    text = c.acl_file.read_bytes()
    code, remark = c.loop.run(_white_request(c, ADMIN, globalWhiteAddrs="10.0.0.1,10.0.300.*"))
    assert code == ResponseCode.INVALID_PARAMETER and "'10.0.300.*'" in remark
    code, remark = c.loop.run(_white_request(c, ADMIN))
    assert code == ResponseCode.INVALID_PARAMETER and "globalWhiteAddrs" in remark
    code, remark = c.loop.run(
        _white_request(c, ADMIN, globalWhiteAddrs="10.0.0.1", aclFileFullPath="/etc/x.yml")
    )
    assert code == ResponseCode.INVALID_PARAMETER and "/etc/x.yml" in remark
    code, remark = c.loop.run(_white_request(c, APP, globalWhiteAddrs="*"))  # not an admin account
    assert code == ResponseCode.NO_PERMISSION and "admin" in remark
    assert c.acl_file.read_bytes() == text


def test_white_list_bad_input(acl_cluster: AclCluster, rmq: Rmq) -> None:
    text = acl_cluster.acl_file.read_bytes()
    _one_error_line(rmq("acl", "white-list", "--set", "10.0.0.1,300.1.1.1"), 2, "'300.1.1.1'")
    _one_error_line(rmq("acl", "white-list", "--set", "10.0.0.1", "--add", "10.0.0.2"), 2, "not both")
    _one_error_line(rmq("acl", "white-list", "-b", "127.0.0.1:1"), 3, "127.0.0.1:1")
    _one_error_line(rmq("acl", "version", "-c", "NoSuchCluster"), 1, "NoSuchCluster")
    assert acl_cluster.acl_file.read_bytes() == text


def test_white_list_and_version_of_a_local_file(rmq: Rmq, tmp_path: Path) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    _one_error_line(rmq("acl", "version", "-f", acl_file), 1, str(acl_file))
    [written] = _json(
        rmq("acl", "white-list", "-f", acl_file, "--set", "192.168.1.{5,6}, 10.*.*.*", "-o", "json")
    )
    assert written == {"broker": str(acl_file), "address": None,
                       "globalWhiteAddresses": ["192.168.1.{5,6}", "10.*.*.*"]}  # fmt: skip
    assert "dataVersion:" in acl_file.read_text()  # kept in the file, as RocketMQ's broker does
    [version] = _json(rmq("acl", "version", "-f", acl_file, "-o", "json"))
    assert version["counter"] == 1 and version["aclFile"] == str(acl_file) and version["address"] is None
    _json(rmq("acl", "white-list", "-f", acl_file, "--remove", "10.*.*.*", "-o", "json"))
    assert acl_config.load(acl_file).global_white_addresses == ["192.168.1.{5,6}"]
    [again] = _json(rmq("acl", "version", "-f", acl_file, "-o", "json"))
    assert again["counter"] == 2
    table = rmq("acl", "version", "-f", acl_file)
    assert table.exit_code == 0 and "last change" in table.stdout
