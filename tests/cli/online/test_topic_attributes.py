"""``rmq topic`` and topic attributes: refused ones, shown ones; ``topic delete``'s JSON and its
ORDER_TOPIC_CONFIG clean-up."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from typer.testing import Result

from tests.cli.online.conftest import Cluster

Rmq = Callable[..., Result]


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _routed(rmq: Rmq, cluster: Cluster, topic: str) -> None:
    """The broker registers a new topic with the NameServer right after creating it: wait for that."""
    deadline = time.monotonic() + 15
    while rmq("topic", "route", topic, "-n", cluster.namesrv, "-o", "json").exit_code != 0:
        assert time.monotonic() < deadline, f"the NameServer does not route {topic}"
        time.sleep(0.2)


def test_an_unknown_message_type_is_refused_in_one_line(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv)
    refused = rmq("topic", "create", "BogusType", "-c", "DefaultCluster", "-a", "message.type=BOGUS", *ns)
    assert refused.exit_code == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert "message.type=BOGUS" in lines[0] and "value is not in set" in lines[0]
    unknown = rmq("topic", "create", "BogusKey", "-a", "colour=blue", *ns)
    assert unknown.exit_code == 1 and "unsupported key: colour" in unknown.stderr
    names = {t["name"] for t in _json(rmq("topic", "list", *ns, "-o", "json"))["topics"]}
    assert not names & {"BogusType", "BogusKey"}


def test_attributes_are_shown_by_create_update_describe_and_list(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    created = _json(rmq("topic", "create", "Typed", "-r", "2", "-w", "2", "-a", "message.type=FIFO", *ns))
    assert created["attributes"] == {"message.type": "FIFO"}
    _routed(rmq, cluster, "Typed")
    described = _json(rmq("topic", "describe", "Typed", *ns))
    assert described["attributes"] == {"message.type": "FIFO"}
    updated = _json(rmq("topic", "update", "Typed", "-a", "message.type=NORMAL", *ns))
    assert updated["attributes"] == {"message.type": "NORMAL"}
    fixed = rmq("topic", "update", "Typed", "-a", "queue.type=BatchCQ", *ns)
    assert fixed.exit_code == 1 and "unchangeable attribute" in fixed.stderr
    listed = {t["name"]: t for t in _json(rmq("topic", "list", *ns))["topics"]}
    assert listed["Typed"]["attributes"] == {"message.type": "NORMAL"}
    table = rmq("topic", "describe", "Typed", "-n", cluster.namesrv, "-o", "text")
    assert table.exit_code == 0 and "message.type=NORMAL" in table.stdout
    written = rmq("topic", "update", "Typed", "-w", "1", "-n", cluster.namesrv, "-o", "text")
    assert written.exit_code == 0 and "message.type=NORMAL" in written.stdout


def test_delete_names_what_create_names_and_drops_the_order_conf(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    created = _json(rmq("topic", "create", "OrderedGone", "--order", *ns))
    assert created["orderConf"] == "broker-a:8"
    _routed(rmq, cluster, "OrderedGone")
    assert _json(rmq("namesrv", "kv", "get", "ORDER_TOPIC_CONFIG", "OrderedGone", *ns))["entries"]
    deleted = _json(rmq("topic", "delete", "OrderedGone", "--yes", *ns))
    assert deleted == {
        "topic": "OrderedGone",
        "addresses": created["addresses"],
        "namesrvs": [cluster.namesrv],
    }
    assert rmq("namesrv", "kv", "get", "ORDER_TOPIC_CONFIG", "OrderedGone", *ns).exit_code == 1


def test_delete_from_one_cluster_keeps_other_brokers_order_entries(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    _json(rmq("topic", "create", "OrderedShared", "--order", *ns))
    _routed(rmq, cluster, "OrderedShared")
    _json(rmq("namesrv", "kv", "put", "ORDER_TOPIC_CONFIG", "OrderedShared", "broker-a:8;broker-z:4", *ns))
    _json(rmq("topic", "delete", "OrderedShared", "-c", "DefaultCluster", "--yes", *ns))
    kv = _json(rmq("namesrv", "kv", "get", "ORDER_TOPIC_CONFIG", "OrderedShared", *ns))
    assert kv["entries"] == {"OrderedShared": "broker-z:4"}
    text = rmq("topic", "delete", "Missing", "--yes", "-n", cluster.namesrv)
    assert text.exit_code == 1


def test_describe_shows_a_compaction_topics_progress(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    created = _json(
        rmq("topic", "create", "Kv", "-r", "1", "-w", "1", "-a", "cleanup.policy=COMPACTION", *ns)
    )
    assert created["attributes"] == {"cleanup.policy": "COMPACTION"}
    _routed(rmq, cluster, "Kv")
    keyless = rmq("message", "send", "Kv", "no key", "-n", cluster.namesrv)
    assert keyless.exit_code == 1 and "Required message key is missing" in keyless.stderr
    for value in ("1", "2", "3"):
        assert rmq("message", "send", "Kv", value, "-k", "price", *ns).exit_code == 0
    deadline = time.monotonic() + 15
    while True:  # the compaction thread copies new messages in every half second
        queues = _json(rmq("topic", "describe", "Kv", *ns))["compaction"]
        if queues and queues[0]["fedOffset"] == 3:
            break
        assert time.monotonic() < deadline, queues
        time.sleep(0.2)
    (queue,) = queues
    assert (queue["queueId"], queue["kept"], queue["compactedOffset"]) == (0, 3, -1)
    table = rmq("topic", "describe", "Kv", "-n", cluster.namesrv, "-o", "text")
    assert table.exit_code == 0 and "Compaction" in table.stdout
