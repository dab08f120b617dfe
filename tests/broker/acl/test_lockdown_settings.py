"""Locking a node down: authorization without authentication is refused at start, ``rmq up`` with access
control but nothing to sign its registrations with says so, and ``listenHost=127.0.0.1`` binds every
listener of ``rmq up`` (remoting, gRPC, HA, HTTP, NameServer) to loopback."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from typer.testing import CliRunner

from broker.node import Node
from cli.main import app
from cli.run import up_plan
from tests.peers.conftest import LoopThread


def test_authorization_without_authentication_is_refused_at_start(tmp_path: Path) -> None:
    for command in (["broker"], ["up"], ["namesrv", "--dir", str(tmp_path / "ns")]):
        args = [*command, "--set", "authorizationEnabled=true"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "authorizationEnabled: true needs authenticationEnabled" in lines[0]


def test_rmq_up_with_acl_needs_an_account_to_sign_with(tmp_path: Path) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text("accounts:\n  - accessKey: app-key-01\n    secretKey: app-secret-01\n    admin: false\n")
    args = ["up", "--store", str(tmp_path / "s"), "--namesrv-port", "0", "--broker-port", "0", "--no-http"]
    args += ["--set", "aclEnable=true", "--set", f"aclFile={acl}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "set innerClientAuthenticationCredentials" in result.output
    assert "app-secret-01" not in result.output


def _listening_hosts(port: int) -> set[str]:
    """The addresses this machine listens on at ``port`` (from /proc/net/tcp and tcp6)."""
    hosts = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in list(f)[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, _, port_hex = local.partition(":")
                if state == "0A" and int(port_hex, 16) == port:  # LISTEN
                    raw = bytes.fromhex(addr)
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # host order
                    hosts.add(str(ipaddress.ip_address(words)))
    return hosts


@pytest.mark.servers
def test_listen_host_binds_every_listener_of_rmq_up(tmp_path: Path) -> None:
    overrides = ["listenHost=127.0.0.1", "grpcPort=0", "mappedFileSizeCommitLog=1048576"]
    plan = up_plan(None, overrides, tmp_path / "store", 0, 0, {})
    plan.http_port = 0
    loop = LoopThread()
    node = Node(plan)
    loop.run(node.start())
    try:
        broker, namesrv, http = node.broker, node.namesrv, node.http
        assert broker is not None and namesrv is not None and http is not None
        ports = [broker.port, broker.grpc_port, broker.ha_service.port, http.port, namesrv.port]
        assert all(ports)
        assert {p: _listening_hosts(p) for p in ports} == {p: {"127.0.0.1"} for p in ports}
    finally:
        loop.run(node.stop(), timeout=60)
        loop.close()
