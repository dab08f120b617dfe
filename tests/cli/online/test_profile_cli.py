"""``rmq profile`` and how commands pick their settings from profiles and the environment."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from tests.cli.online.conftest import CLOSED_ADDR, Cluster

Rmq = Callable[..., Result]


def test_profile_commands(rmq: Rmq, config_file: Path) -> None:
    created = rmq("profile", "create", "prod", "-n", "p:1", "--default-output", "json", "-o", "json")
    doc = json.loads(created.stdout)
    assert doc["current"] == "prod" and doc["path"] == str(config_file)
    (profile,) = doc["profiles"]
    assert {k: profile[k] for k in ("name", "namesrv", "output", "timeout")} == {
        "name": "prod",
        "namesrv": "p:1",
        "output": "json",
        "timeout": None,
    }
    # credentials are configured by reference only: no key in the output holds a secret
    assert profile["accessKey"] is None and "secretKey" not in profile
    assert rmq("profile", "create", "dev", "-n", "d:1", "--default-timeout", "2").exit_code == 0
    assert json.loads(rmq("profile", "use", "dev", "-o", "json").stdout)["current"] == "dev"
    listing = rmq("profile", "list", "-o", "text").stdout.splitlines()
    assert listing[0].split()[:5] == ["CURRENT", "NAME", "NAMESRV", "OUTPUT", "TIMEOUT"]
    assert listing[1].split()[:2] == ["*", "dev"]
    assert rmq("profile", "delete", "dev").exit_code == 2  # needs --yes off a terminal
    assert json.loads(rmq("profile", "delete", "dev", "--yes", "-o", "json").stdout)["current"] is None
    assert rmq("profile", "use", "dev").exit_code == 1
    assert rmq("profile", "create", "bad name").exit_code == 2
    # credentials: an AccessKey needs exactly one place the SecretKey comes from
    no_secret = rmq("profile", "create", "ci", "--access-key", "ak")
    assert no_secret.exit_code == 2 and "needs secret_key_env or secret_key_file" in no_secret.stderr
    both = rmq(
        "profile", "create", "ci", "--access-key", "ak", "--secret-key-env", "S", "--secret-key-file", "f"
    )
    assert both.exit_code == 2 and "not both" in both.stderr
    conflict = rmq("profile", "create", "ci", "--no-tls", "--tls-ca-file", "ca.pem")
    assert conflict.exit_code == 2 and "tls is false" in conflict.stderr


def test_commands_use_profile_env_and_flags(
    cluster: Cluster, rmq: Rmq, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rmq("profile", "create", "good", "-n", cluster.namesrv, "--default-output", "json").exit_code == 0
    assert rmq("profile", "create", "down", "-n", CLOSED_ADDR).exit_code == 0
    # the current profile ("good", the first) supplies the address and the JSON output
    assert json.loads(rmq("cluster", "list").stdout)["brokers"][0]["address"] == cluster.broker
    # --profile beats the current one
    down = rmq("cluster", "list", "--profile", "down")
    assert down.exit_code == 3 and CLOSED_ADDR in down.stderr
    # RMQ_PROFILE beats the current one; -n beats the profile
    monkeypatch.setenv("RMQ_PROFILE", "down")
    assert rmq("cluster", "list").exit_code == 3
    assert rmq("cluster", "list", "-n", cluster.namesrv).exit_code == 0
    # NAMESRV_ADDR beats the profile, -n beats NAMESRV_ADDR
    monkeypatch.setenv("NAMESRV_ADDR", cluster.namesrv)
    assert rmq("cluster", "list").exit_code == 0
    assert rmq("cluster", "list", "-n", CLOSED_ADDR).exit_code == 3
    # -o beats the profile's output
    monkeypatch.delenv("RMQ_PROFILE")
    assert rmq("cluster", "list", "-o", "text").stdout.startswith("CLUSTER")
    assert rmq("cluster", "list", "--profile", "missing").exit_code == 2
