"""``rmq group consume-mode`` and ``rmq broker read-ahead`` against the session's NameServer + broker:
what is shown before and after a change, JSON for scripts, and bad input."""

from __future__ import annotations

import json
from collections.abc import Callable

from typer.testing import Result

from tests.cli.online.conftest import Cluster

Rmq = Callable[..., Result]
TOPIC, GROUP = "ModeOnline", "mode-online-cg"


def test_consume_mode_shows_and_sets_the_mode(rmq: Rmq, cluster: Cluster) -> None:
    n = ("-n", cluster.namesrv)
    assert rmq("topic", "create", TOPIC, *n).exit_code == 0
    assert rmq("group", "create", GROUP, *n).exit_code == 0

    shown = rmq("group", "consume-mode", GROUP, "-t", TOPIC, *n, "-o", "json")
    assert shown.exit_code == 0, shown.output
    (before,) = json.loads(shown.stdout)["brokers"]
    assert (before["mode"], before["stored"], before["address"]) == ("PULL", False, cluster.broker)

    changed = rmq("group", "consume-mode", GROUP, "-t", TOPIC, "--set", "pop", "--pop-share-queues", "1", *n)
    assert changed.exit_code == 0, changed.output
    assert "pop" in changed.stdout and cluster.broker in changed.stdout

    text = rmq("group", "consume-mode", GROUP, "-t", TOPIC, *n, "-o", "text")
    assert text.exit_code == 0
    row = next(line.split() for line in text.stdout.splitlines() if cluster.broker in line)
    assert row[1:] == [cluster.broker, "pop", "1", "set"]


def test_consume_mode_bad_input(rmq: Rmq, cluster: Cluster) -> None:
    n = ("-n", cluster.namesrv)
    bad_mode = rmq("group", "consume-mode", "orders-cg", "-t", "Orders", "--set", "push", *n)
    assert bad_mode.exit_code == 2
    for args in (
        ("group", "consume-mode", "orders-cg", "-t", "NoSuchTopic", "--set", "pop", *n),
        ("group", "consume-mode", "no-such-group", "-t", "Orders", "--set", "pop", *n),
        ("group", "consume-mode", "orders-cg", "-t", "NoSuchTopic", *n),
    ):
        result = rmq(*args)
        assert result.exit_code == 1, args
        assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr


def test_read_ahead(rmq: Rmq, cluster: Cluster) -> None:
    n = ("-n", cluster.namesrv)
    off = rmq("broker", "read-ahead", "random", "-b", cluster.broker, *n, "-o", "json")
    assert off.exit_code == 0, off.output
    doc = json.loads(off.stdout)
    assert doc["random"] is True
    assert doc["brokers"] == [
        {"address": cluster.broker, "master": None, "remark": "set commitlog readahead mode success, mode: 1"}
    ]
    broker = cluster.node.broker
    assert broker is not None and not broker.store_config.data_read_ahead_enable

    on = rmq("broker", "read-ahead", "NORMAL", *n)  # every broker of the only cluster
    assert on.exit_code == 0 and "mode: 0" in on.stdout
    assert broker.store_config.data_read_ahead_enable

    assert rmq("broker", "read-ahead", "sometimes", *n).exit_code == 2
    missing = rmq("broker", "read-ahead", "random", "-c", "NoSuchCluster", *n)
    assert missing.exit_code == 1 and "NoSuchCluster" in missing.stderr
