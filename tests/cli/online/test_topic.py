"""``rmq topic`` against a real NameServer + broker."""

from __future__ import annotations

from collections.abc import Callable

from typer.testing import Result

from tests.cli.online.conftest import MESSAGES, TOPIC, Cluster, json_out

Rmq = Callable[..., Result]


def test_list_shows_normal_topics_and_all_with_kinds(cluster: Cluster, rmq: Rmq) -> None:
    doc = json_out(rmq("topic", "list", "-n", cluster.namesrv, "-o", "json"))
    topics = {t["name"]: t for t in doc["topics"]}
    assert topics[TOPIC] == {
        "name": TOPIC,
        "kind": "normal",
        "clusters": ["DefaultCluster"],
        "brokers": ["broker-a"],
        "readQueues": 4,
        "writeQueues": 4,
        "perm": 6,
        "order": False,
        "attributes": {},
    }
    assert {t["kind"] for t in topics.values()} == {"normal"}
    every = json_out(rmq("topic", "list", "-a", "-n", cluster.namesrv, "-o", "json"))
    kinds = {t["name"]: t["kind"] for t in every["topics"]}
    assert kinds["TBW102"] == "system" and kinds["%RETRY%orders-cg"] == "retry"
    assert kinds["DefaultCluster"] == "system" and kinds["broker-a"] == "system"
    text = rmq("topic", "list", "-n", cluster.namesrv, "-o", "text")
    assert text.exit_code == 0 and text.stdout.splitlines()[0].split()[:3] == ["TOPIC", "KIND", "CLUSTER"]


def test_describe_route_status(cluster: Cluster, rmq: Rmq) -> None:
    doc = json_out(rmq("topic", "describe", TOPIC, "-n", cluster.namesrv, "-o", "json"))
    assert sorted(doc) == ["attributes", "compaction", "groups", "kind", "route", "status", "topic"]
    assert "orders-cg" in doc["groups"]
    route = json_out(rmq("topic", "route", TOPIC, "-n", cluster.namesrv, "-o", "json"))
    assert route["brokers"] == [
        {"addresses": {"0": cluster.broker}, "brokerName": "broker-a", "cluster": "DefaultCluster"}
    ]
    assert route["queues"] == [
        {"brokerName": "broker-a", "perm": 6, "readQueues": 4, "topicSysFlag": 0, "writeQueues": 4}
    ]
    status = json_out(rmq("topic", "status", TOPIC, "-n", cluster.namesrv, "-o", "json"))
    queues = status["queues"]
    assert [q["queueId"] for q in queues] == [0, 1, 2, 3]
    assert set(queues[0]) == {"brokerName", "queueId", "minOffset", "maxOffset", "lastUpdated"}
    assert status["totalMessages"] >= MESSAGES
    table = rmq("topic", "status", TOPIC, "-n", cluster.namesrv)
    assert table.exit_code == 0 and "last updated" in table.stdout


def test_create_update_order_and_delete(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    created = json_out(rmq("topic", "create", "Ordered", "-r", "2", "-w", "2", "--order", *ns))
    assert created["addresses"] == [cluster.broker] and created["orderConf"] == "broker-a:2"
    again = rmq("topic", "create", "Ordered", *ns)
    assert again.exit_code == 1 and "already exists" in again.stderr
    kv = json_out(rmq("namesrv", "kv", "get", "ORDER_TOPIC_CONFIG", "Ordered", *ns))
    assert kv["entries"] == {"Ordered": "broker-a:2"}
    updated = json_out(rmq("topic", "update", "Ordered", "-w", "3", "--no-order", *ns))
    assert (updated["readQueues"], updated["writeQueues"], updated["order"]) == (2, 3, False)
    assert rmq("namesrv", "kv", "get", "ORDER_TOPIC_CONFIG", "Ordered", *ns).exit_code == 1
    refused = rmq("topic", "delete", "Ordered", *ns)
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    deleted = json_out(rmq("topic", "delete", "Ordered", "--yes", *ns))
    assert deleted == {"topic": "Ordered", "addresses": [cluster.broker], "namesrvs": [cluster.namesrv]}
    gone = rmq("topic", "describe", "Ordered", *ns)
    assert gone.exit_code == 1 and "topic Ordered not found" in gone.stderr


def test_errors(cluster: Cluster, rmq: Rmq) -> None:
    missing = rmq("topic", "status", "NoSuchTopic", "-n", cluster.namesrv)
    assert missing.exit_code == 1 and missing.stderr.startswith("rmq: error: topic NoSuchTopic not found")
    assert rmq("topic", "update", "NoSuchTopic", "-n", cluster.namesrv).exit_code == 1
    bad = rmq("topic", "create", "X", "--perm", "9", "-n", cluster.namesrv)
    assert bad.exit_code == 2 and "perm 9" in bad.stderr
    assert rmq("topic", "create", "-n", cluster.namesrv).exit_code == 2  # missing TOPIC
    assert rmq("topic", "list", "--bogus").exit_code == 2
    down = rmq("topic", "list", "-n", "127.0.0.1:1")
    assert down.exit_code == 3 and "127.0.0.1:1" in down.stderr
