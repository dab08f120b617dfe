"""``rmq group`` against a real NameServer + broker."""

from __future__ import annotations

import json
from collections.abc import Callable

from typer.testing import Result

from tests.cli.online.conftest import GROUP, TOPIC, Cluster

Rmq = Callable[..., Result]


def _json(result: Result) -> dict[str, object]:
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def test_list_describe_connections(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    groups = {g["name"]: g for g in _json(rmq("group", "list", *ns))["groups"]}  # type: ignore[attr-defined]
    assert groups[GROUP]["online"] is True and groups[GROUP]["clients"] == 1
    assert set(groups[GROUP]) == {
        "name", "system", "brokers", "online", "clients", "consumeType", "messageModel",
        "consumeEnable", "orderly", "retryMaxTimes", "lag", "lagMs",
    }  # fmt: skip
    assert "TOOLS_CONSUMER" not in groups
    every = _json(rmq("group", "list", "--all", *ns))["groups"]
    assert any(g["name"] == "TOOLS_CONSUMER" and g["system"] for g in every)  # type: ignore[attr-defined]
    described = _json(rmq("group", "describe", GROUP, *ns))
    assert sorted(described) == ["brokers", "config", "connections", "group", "lag"]
    assert described["config"]["retryMaxTimes"] == 16  # type: ignore[index]
    conns = _json(rmq("group", "connections", GROUP, *ns))
    assert conns["clients"][0]["clientId"] == "10.0.0.9@test"  # type: ignore[index]
    assert conns["subscriptions"] == [{"topic": TOPIC, "expression": "*", "expressionType": "TAG"}]
    assert rmq("group", "describe", GROUP, "-n", cluster.namesrv).exit_code == 0


def test_lag(cluster: Cluster, rmq: Rmq) -> None:
    lag = _json(rmq("group", "lag", GROUP, "-t", TOPIC, "-n", cluster.namesrv, "-o", "json"))
    queues = lag["queues"]
    assert [q["queueId"] for q in queues] == [0, 1, 2, 3]  # type: ignore[attr-defined]
    q0 = queues[0]  # type: ignore[index]
    assert set(q0) == {
        "topic", "brokerName", "queueId", "brokerOffset", "consumerOffset", "diff", "inflight",
        "lastTimestamp", "lagMs",
    }  # fmt: skip
    assert q0["consumerOffset"] == 2 and q0["diff"] == q0["brokerOffset"] - 2
    assert lag["diffTotal"] == sum(q["diff"] for q in queues)  # type: ignore[attr-defined]
    assert set(lag) == {"group", "queues", "diffTotal", "inflightTotal", "consumeTps", "lagMs"}
    text = rmq("group", "lag", GROUP, "-n", cluster.namesrv, "-o", "text")
    assert "diff total" in text.stdout
    missing = rmq("group", "lag", "no-such-group", "-n", cluster.namesrv)
    assert missing.exit_code == 1 and "no-such-group not found" in missing.stderr


def test_create_update_clone_reset_delete(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    created = _json(rmq("group", "create", "cg-new", "--retry-max", "3", "--orderly", *ns))
    assert created["config"]["retryMaxTimes"] == 3 and created["config"]["consumeMessageOrderly"]  # type: ignore[index]
    assert rmq("group", "create", "cg-new", *ns).exit_code == 1
    updated = _json(rmq("group", "update", "cg-new", "--no-orderly", "--retry-queues", "2", *ns))
    assert updated["config"]["consumeMessageOrderly"] is False  # type: ignore[index]
    assert updated["config"]["retryMaxTimes"] == 3 and updated["config"]["retryQueueNums"] == 2  # type: ignore[index]
    cloned = _json(rmq("group", "clone-offsets", GROUP, "cg-new", "-t", TOPIC, *ns))
    assert cloned == {"source": GROUP, "destination": "cg-new", "topic": TOPIC, "addresses": [cluster.broker]}
    lag = _json(rmq("group", "lag", "cg-new", "-t", TOPIC, *ns))
    assert all(q["consumerOffset"] == 2 for q in lag["queues"])  # type: ignore[attr-defined]

    dry = _json(rmq("group", "reset-offset", "cg-new", "-t", TOPIC, "--to-earliest", "--dry-run", *ns))
    assert dry["dryRun"] is True and {q["target"] for q in dry["queues"]} == {0}  # type: ignore[attr-defined]
    assert all(q["current"] == 2 for q in dry["queues"])  # type: ignore[attr-defined]
    assert _json(rmq("group", "lag", "cg-new", "-t", TOPIC, *ns))["queues"][0]["consumerOffset"] == 2  # type: ignore[index]
    refused = rmq("group", "reset-offset", "cg-new", "-t", TOPIC, "--to-earliest", *ns)
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    done = _json(rmq("group", "reset-offset", "cg-new", "-t", TOPIC, "--to-offset", "1", "--yes", *ns))
    assert {q["target"] for q in done["queues"]} == {1}  # type: ignore[attr-defined]
    latest = _json(rmq("group", "reset-offset", "cg-new", "--to-latest", "--dry-run", *ns))
    status = _json(rmq("topic", "status", TOPIC, *ns))
    assert [q["target"] for q in latest["queues"]] == [q["maxOffset"] for q in status["queues"]]  # type: ignore[attr-defined]
    timed = _json(rmq("group", "reset-offset", "cg-new", "-t", TOPIC, "--to-time", "0", "--yes", *ns))
    assert {q["target"] for q in timed["queues"]} == {0}  # type: ignore[attr-defined]
    both = rmq("group", "reset-offset", "cg-new", "--to-latest", "--to-earliest", "--dry-run", *ns)
    assert both.exit_code == 2 and "exactly one" in both.stderr
    assert rmq("group", "reset-offset", "cg-new", "--to-time", "yesterday", "--dry-run", *ns).exit_code == 2
    when = ("--to-time", "2026-11-22T10:00:00", "--dry-run")
    shown = rmq("group", "reset-offset", "cg-new", "-t", TOPIC, *when, "-n", cluster.namesrv)
    assert "would move (dry run) to time 2026-11-22 10:00:00.000" in " ".join(shown.stdout.split())

    assert rmq("group", "delete", "cg-new", *ns).exit_code == 2
    deleted = _json(rmq("group", "delete", "cg-new", "--yes", *ns))
    assert deleted == {"group": "cg-new", "addresses": [cluster.broker]}
    assert rmq("group", "delete", "cg-new", "--yes", *ns).exit_code == 1
