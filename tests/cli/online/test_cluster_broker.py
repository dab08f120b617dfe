"""``rmq cluster``, ``rmq broker``, ``rmq namesrv`` and ``rmq wait`` against a real node."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from typer.testing import Result

from tests.cli.online.conftest import CLOSED_ADDR, Cluster, interrupt_watch_after

Rmq = Callable[..., Result]
BROKER_KEYS = {
    "cluster", "brokerName", "brokerId", "address", "role", "reachable", "error", "version", "putTps",
    "getTps", "diskRatio", "commitlogMinOffset", "commitlogMaxOffset", "runtime", "ha",
}  # fmt: skip


def _json(result: Result) -> dict[str, object]:
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def test_cluster_list_and_status(cluster: Cluster, rmq: Rmq) -> None:
    doc = _json(rmq("cluster", "list", "-n", cluster.namesrv, "-o", "json"))
    [broker] = doc["brokers"]  # type: ignore[misc]
    assert set(broker) == BROKER_KEYS
    assert (broker["brokerName"], broker["role"], broker["address"], broker["reachable"]) == (
        "broker-a", "MASTER", cluster.broker, True,
    )  # fmt: skip
    status = _json(rmq("cluster", "status", "-n", f"{cluster.namesrv};{CLOSED_ADDR}", "-o", "json"))
    states = {n["address"]: n["reachable"] for n in status["namesrvs"]}  # type: ignore[attr-defined]
    assert states == {cluster.namesrv: True, CLOSED_ADDR: False}
    assert status["clusters"][0]["masters"] == 1  # type: ignore[index]
    assert rmq("cluster", "list", "-c", "nope", "-n", cluster.namesrv).exit_code == 1
    assert "DefaultCluster" in rmq("cluster", "list", "-n", cluster.namesrv).stdout


def test_watch_repeats_until_interrupted(cluster: Cluster, rmq: Rmq, monkeypatch: pytest.MonkeyPatch) -> None:
    interrupt_watch_after(monkeypatch, 2)
    result = rmq("cluster", "status", "--watch", "1", "-n", cluster.namesrv, "-o", "text")
    assert result.exit_code == 0 and result.stdout.count("NAMESERVER") == 2


def test_broker_status_runtime_config(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    status = _json(rmq("broker", "status", *ns))
    assert set(status) == BROKER_KEYS and status["address"] == cluster.broker
    runtime = _json(rmq("broker", "runtime", "-b", cluster.broker, *ns))
    assert runtime["address"] == cluster.broker and runtime["values"]["brokerActive"] == "true"  # type: ignore[index]
    config = _json(rmq("broker", "config", "get", "brokerName", "httpPort", *ns))
    assert config == {"address": cluster.broker, "values": {"brokerName": "broker-a", "httpPort": "0"}}
    changed = _json(rmq("broker", "config", "set", "defaultTopicQueueNums=6", *ns))
    assert changed == {"addresses": [cluster.broker], "values": {"defaultTopicQueueNums": "6"}}
    assert _json(rmq("broker", "config", "get", "defaultTopicQueueNums", *ns))["values"] == {
        "defaultTopicQueueNums": "6"
    }
    refused = rmq("broker", "config", "set", "storePathRootDir=/tmp", *ns)
    assert refused.exit_code == 1 and "not changeable at runtime" in refused.stderr
    assert rmq("broker", "config", "set", "novalue", *ns).exit_code == 2
    assert rmq("broker", "config", "get", "noSuchKey", *ns).exit_code == 2
    down = rmq("broker", "status", "-b", CLOSED_ADDR, *ns)
    assert down.exit_code == 3 and CLOSED_ADDR in down.stderr


def test_broker_and_namesrv_still_run_servers(rmq: Rmq, monkeypatch: pytest.MonkeyPatch) -> None:
    from cli import run

    seen: list[tuple[str, object]] = []
    monkeypatch.setattr(run, "_run", lambda plan, banner: seen.append((banner[0], plan)))
    assert rmq("broker", "--port", "0", "--no-http").exit_code == 0
    assert rmq("namesrv", "--port", "0").exit_code == 0
    assert [b for b, _ in seen] == ["rmqkit broker is up", "rmqkit NameServer is up"]
    mixed = rmq("broker", "--port", "5", "status")
    assert mixed.exit_code == 2 and "--port" in mixed.stderr
    help_ = rmq("broker", "--help")
    assert help_.exit_code == 0 and "--config" in help_.stdout and "status" in help_.stdout


def test_namesrv_kv_and_config(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    put = _json(rmq("namesrv", "kv", "put", "team", "owner", "ops", *ns))
    assert put == {"namespace": "team", "key": "owner", "value": "ops", "namesrvs": [cluster.namesrv]}
    assert _json(rmq("namesrv", "kv", "get", "team", *ns)) == {
        "namespace": "team",
        "entries": {"owner": "ops"},
    }
    assert rmq("namesrv", "kv", "delete", "team", "owner", *ns).exit_code == 2
    assert _json(rmq("namesrv", "kv", "delete", "team", "owner", "-y", *ns))["value"] is None
    assert rmq("namesrv", "kv", "get", "team", "owner", *ns).exit_code == 1
    configs = _json(rmq("namesrv", "config", "get", *ns))
    assert configs["servers"][0]["address"] == cluster.namesrv  # type: ignore[index]
    changed = _json(rmq("namesrv", "config", "set", "scanNotActiveBrokerInterval=6000", *ns))
    assert changed["values"] == {"scanNotActiveBrokerInterval": "6000"}


def test_wait_ready(cluster: Cluster, rmq: Rmq) -> None:
    remoting = _json(rmq("wait", "ready", "--timeout", "5", "-n", cluster.namesrv, "-o", "json"))
    assert remoting["ready"] is True and remoting["method"] == "remoting"
    http = _json(rmq("wait", "ready", "--http", cluster.http, "-o", "json"))
    assert http["method"] == "http" and http["target"] == cluster.http
    late = rmq("wait", "ready", "--timeout", "0.3", "-n", CLOSED_ADDR)
    assert late.exit_code == 4 and CLOSED_ADDR in late.stderr
    too_many = rmq("wait", "ready", "--timeout", "0.3", "--brokers", "2", "-n", cluster.namesrv)
    assert too_many.exit_code == 4 and "1 of 2 broker(s)" in too_many.stderr
