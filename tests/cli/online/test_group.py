"""``rmq group`` against a real NameServer + broker."""

from __future__ import annotations

from collections.abc import Callable

from typer.testing import Result

from tests.cli.online.conftest import GROUP, TOPIC, Cluster, json_out

Rmq = Callable[..., Result]


def test_list_describe_connections(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    groups = {g["name"]: g for g in json_out(rmq("group", "list", *ns))["groups"]}
    assert groups[GROUP]["online"] is True and groups[GROUP]["clients"] == 1
    assert set(groups[GROUP]) == {
        "name", "system", "brokers", "online", "clients", "consumeType", "messageModel",
        "consumeEnable", "orderly", "retryMaxTimes", "lag", "lagMs",
    }  # fmt: skip
    assert "TOOLS_CONSUMER" not in groups
    every = json_out(rmq("group", "list", "--all", *ns))["groups"]
    assert any(g["name"] == "TOOLS_CONSUMER" and g["system"] for g in every)
    described = json_out(rmq("group", "describe", GROUP, *ns))
    assert sorted(described) == ["brokers", "config", "connections", "group", "lag"]
    assert described["config"]["retryMaxTimes"] == 16
    conns = json_out(rmq("group", "connections", GROUP, *ns))
    assert conns["clients"][0]["clientId"] == "10.0.0.9@test"
    assert conns["subscriptions"] == [{"topic": TOPIC, "expression": "*", "expressionType": "TAG"}]
    assert rmq("group", "describe", GROUP, "-n", cluster.namesrv).exit_code == 0


def test_lag(cluster: Cluster, rmq: Rmq) -> None:
    lag = json_out(rmq("group", "lag", GROUP, "-t", TOPIC, "-n", cluster.namesrv, "-o", "json"))
    queues = lag["queues"]
    assert [q["queueId"] for q in queues] == [0, 1, 2, 3]
    q0 = queues[0]
    assert set(q0) == {
        "topic", "brokerName", "queueId", "brokerOffset", "consumerOffset", "diff", "inflight",
        "lastTimestamp", "lagMs",
    }  # fmt: skip
    assert q0["consumerOffset"] == 2 and q0["diff"] == q0["brokerOffset"] - 2
    assert lag["diffTotal"] == sum(q["diff"] for q in queues)
    assert set(lag) == {"group", "queues", "diffTotal", "inflightTotal", "consumeTps", "lagMs"}
    text = rmq("group", "lag", GROUP, "-n", cluster.namesrv, "-o", "text")
    assert "diff total" in text.stdout
    missing = rmq("group", "lag", "no-such-group", "-n", cluster.namesrv)
    assert missing.exit_code == 1 and "no-such-group not found" in missing.stderr


def test_create_update_clone_reset_delete(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    created = json_out(rmq("group", "create", "cg-new", "--retry-max", "3", "--orderly", *ns))
    assert created["config"]["retryMaxTimes"] == 3 and created["config"]["consumeMessageOrderly"]
    assert rmq("group", "create", "cg-new", *ns).exit_code == 1
    updated = json_out(rmq("group", "update", "cg-new", "--no-orderly", "--retry-queues", "2", *ns))
    assert updated["config"]["consumeMessageOrderly"] is False
    assert updated["config"]["retryMaxTimes"] == 3 and updated["config"]["retryQueueNums"] == 2
    cloned = json_out(rmq("group", "clone-offsets", GROUP, "cg-new", "-t", TOPIC, *ns))
    assert cloned == {"source": GROUP, "destination": "cg-new", "topic": TOPIC, "addresses": [cluster.broker]}
    lag = json_out(rmq("group", "lag", "cg-new", "-t", TOPIC, *ns))
    assert all(q["consumerOffset"] == 2 for q in lag["queues"])

    dry = json_out(rmq("group", "reset-offset", "cg-new", "-t", TOPIC, "--to-earliest", "--dry-run", *ns))
    assert dry["dryRun"] is True and {q["target"] for q in dry["queues"]} == {0}
    assert all(q["current"] == 2 for q in dry["queues"])
    assert json_out(rmq("group", "lag", "cg-new", "-t", TOPIC, *ns))["queues"][0]["consumerOffset"] == 2
    refused = rmq("group", "reset-offset", "cg-new", "-t", TOPIC, "--to-earliest", *ns)
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    done = json_out(rmq("group", "reset-offset", "cg-new", "-t", TOPIC, "--to-offset", "1", "--yes", *ns))
    assert {q["target"] for q in done["queues"]} == {1}
    latest = json_out(rmq("group", "reset-offset", "cg-new", "--to-latest", "--dry-run", *ns))
    status = json_out(rmq("topic", "status", TOPIC, *ns))
    assert [q["target"] for q in latest["queues"]] == [q["maxOffset"] for q in status["queues"]]
    timed = json_out(rmq("group", "reset-offset", "cg-new", "-t", TOPIC, "--to-time", "0", "--yes", *ns))
    assert {q["target"] for q in timed["queues"]} == {0}
    both = rmq("group", "reset-offset", "cg-new", "--to-latest", "--to-earliest", "--dry-run", *ns)
    assert both.exit_code == 2 and "exactly one" in both.stderr
    assert rmq("group", "reset-offset", "cg-new", "--to-time", "yesterday", "--dry-run", *ns).exit_code == 2
    when = ("--to-time", "2026-11-22T10:00:00", "--dry-run")
    shown = rmq("group", "reset-offset", "cg-new", "-t", TOPIC, *when, "-n", cluster.namesrv)
    assert "would move (dry run) to time 2026-11-22 10:00:00.000" in " ".join(shown.stdout.split())

    assert rmq("group", "delete", "cg-new", *ns).exit_code == 2
    deleted = json_out(rmq("group", "delete", "cg-new", "--yes", *ns))
    assert deleted == {"group": "cg-new", "addresses": [cluster.broker]}
    assert rmq("group", "delete", "cg-new", "--yes", *ns).exit_code == 1
