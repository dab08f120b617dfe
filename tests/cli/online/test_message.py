"""``rmq message``, ``rmq dlq`` and ``rmq retry`` against a real NameServer + broker."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from typer.testing import Result

from tests.cli.online.conftest import TOPIC, Cluster

Rmq = Callable[..., Result]
MESSAGE_KEYS = {
    "topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "uniqKey", "tags", "keys", "flag",
    "sysFlag", "bornTimestamp", "bornHost", "storeTimestamp", "storeHost", "reconsumeTimes",
    "preparedTransactionOffset",
    "bodyCRC", "storeSize", "properties", "body", "bodyEncoding",
}  # fmt: skip


def _messages(result: Result) -> list[dict[str, object]]:
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert list(doc) == ["messages"]
    return list(doc["messages"])


def test_get_by_offset_id_and_by_unique_key(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    first = cluster.sent[0]
    [by_id] = _messages(rmq("message", "get", first.msgId, *ns))
    assert set(by_id) == MESSAGE_KEYS
    assert (by_id["msgId"], by_id["body"], by_id["uniqKey"]) == (first.msgId, "order 0", cluster.uniq_keys[0])
    [by_key] = _messages(rmq("message", "get", cluster.uniq_keys[5], "-t", TOPIC, *ns))
    assert by_key["body"] == "order 5" and by_key["msgId"] == cluster.sent[5].msgId
    no_topic = rmq("message", "get", "nothex", *ns)
    assert no_topic.exit_code == 2 and "needs the topic" in no_topic.stderr
    unknown = rmq("message", "get", "0" * 32, "-t", TOPIC, *ns)
    assert unknown.exit_code == 1
    text = rmq("message", "get", first.msgId, "-n", cluster.namesrv, "-o", "text")
    assert "body" in text.stdout and "order 0" in text.stdout


def test_query_by_key_and_unique_key(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    found = _messages(rmq("message", "query", TOPIC, "-k", "all", "--max", "5", *ns))
    assert len(found) == 5
    stamps = [m["storeTimestamp"] for m in found]
    assert stamps == sorted(stamps, reverse=True)  # type: ignore[type-var]
    [one] = _messages(rmq("message", "query", TOPIC, "-u", cluster.uniq_keys[3], *ns))
    assert one["body"] == "order 3"
    assert rmq("message", "query", TOPIC, "-k", "nope", *ns).exit_code == 1
    assert rmq("message", "query", TOPIC, *ns).exit_code == 2  # neither key nor unique key
    assert (
        rmq("message", "query", TOPIC, "-k", "all", "--begin", "-1d", "--end", "2999-01-01", *ns).exit_code
        == 0
    )


def test_print_ranges_and_tags(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    queue1 = _messages(rmq("message", "print", TOPIC, "-q", "1", "--to", "3", *ns))
    assert [m["body"] for m in queue1] == ["order 1", "order 5", "order 9"]
    window = _messages(rmq("message", "print", TOPIC, "-q", "1", "--from", "1", "--to", "2", *ns))
    assert [m["queueOffset"] for m in window] == [1]
    even = _messages(rmq("message", "print", TOPIC, "-s", "even", "--limit", "50", *ns))
    assert even and {m["tags"] for m in even} == {"even"}
    limited = _messages(rmq("message", "print", TOPIC, "-l", "2", *ns))
    assert len(limited) == 2
    later = _messages(rmq("message", "print", TOPIC, "--begin", "2999-01-01", *ns))
    assert later == []
    assert rmq("message", "print", TOPIC, "--broker-name", "nope", *ns).exit_code == 1


def test_send_and_consume(cluster: Cluster, rmq: Rmq, tmp_path: Path) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    sent = rmq(
        "message", "send", TOPIC, "hello", "--tags", "t1", "-k", "a", "-k", "b", "-p", "x=1", "-q", "2", *ns
    )
    receipt = json.loads(sent.stdout)
    assert set(receipt) == {"topic", "brokerName", "queueId", "queueOffset", "msgId", "uniqKey", "status"}
    assert receipt["status"] == "SEND_OK" and receipt["queueId"] == 2
    [back] = _messages(rmq("message", "get", receipt["msgId"], *ns))
    assert (back["tags"], back["keys"], back["properties"]["x"]) == ("t1", "a b", "1")  # type: ignore[index]
    body = tmp_path / "body.bin"
    body.write_bytes(b"\xff\x00")
    binary = json.loads(rmq("message", "send", TOPIC, "--file", body, *ns).stdout)
    [raw] = _messages(rmq("message", "get", binary["msgId"], *ns))
    assert (raw["body"], raw["bodyEncoding"]) == ("/wA=", "base64")
    assert rmq("message", "send", TOPIC, "-n", cluster.namesrv, input="from stdin").exit_code == 2
    stdin = rmq("message", "send", TOPIC, "-", *ns, input="from stdin")
    assert stdin.exit_code == 0, stdin.output

    first = _messages(rmq("message", "consume", TOPIC, "-c", "3", "-g", "cli-consumer", *ns))
    second = _messages(rmq("message", "consume", TOPIC, "-c", "3", "-g", "cli-consumer", *ns))
    assert len(first) == len(second) == 3
    assert {(m["queueId"], m["queueOffset"]) for m in first}.isdisjoint(
        (m["queueId"], m["queueOffset"]) for m in second
    )
    again = _messages(rmq("message", "consume", TOPIC, "-c", "3", *ns))
    assert again == first  # without a group nothing is committed: from the start each time
    assert rmq("message", "send", "NoSuchTopic", "x", *ns).exit_code == 1


def test_pop_acks_or_leaves_messages_to_come_back(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    assert rmq("topic", "create", "CliPopTopic", "-r", "2", "-w", "2", *ns).exit_code == 0
    for body in ("p0", "p1", "p2"):
        assert rmq("message", "send", "CliPopTopic", body, *ns).exit_code == 0
    kept = _messages(
        rmq("message", "pop", "CliPopTopic", "-g", "cli-pop", "-c", "2", "--no-ack", "--invisible", "1", *ns)
    )
    assert len(kept) == 2 and all(m["reconsumeTimes"] == 0 for m in kept)
    assert all("POP_CK" in m["properties"] for m in kept)  # type: ignore[operator]
    rest = _messages(rmq("message", "pop", "CliPopTopic", "-g", "cli-pop", "-c", "10", *ns))
    assert sorted(m["body"] for m in kept + rest) == ["p0", "p1", "p2"]  # type: ignore[type-var]
    back = _messages(rmq("message", "pop", "CliPopTopic", "-g", "cli-pop", "-c", "10", "--wait", "10", *ns))
    assert sorted(m["body"] for m in back) == sorted(m["body"] for m in kept)  # type: ignore[type-var]
    assert all(m["reconsumeTimes"] == 1 for m in back)
    assert _messages(rmq("message", "pop", "CliPopTopic", "-g", "cli-pop", *ns)) == []
    zero = rmq("message", "pop", "CliPopTopic", "-g", "cli-pop", "-c", "0", *ns)
    assert zero.exit_code == 2 and "the count must be positive" in zero.stderr
    hidden = rmq("message", "pop", "CliPopTopic", "-g", "cli-pop", "--invisible", "0", *ns)
    assert hidden.exit_code == 2 and "not within 1 ms..12 h" in hidden.stderr
    assert rmq("message", "pop", "NoSuchTopic", "-g", "cli-pop", *ns).exit_code == 1


def test_pop_drops_a_tag_whose_hash_collides(cluster: Cluster, rmq: Rmq) -> None:
    # "Aa" and "BB" share a Java hashCode: the broker's tag filter passes both, the consumer keeps "Aa"
    ns = ("-n", cluster.namesrv, "-o", "json")
    assert rmq("topic", "create", "CliPopTags", "-r", "1", "-w", "1", *ns).exit_code == 0
    for body, tag in (("a0", "Aa"), ("b0", "BB"), ("a1", "Aa")):
        assert rmq("message", "send", "CliPopTags", body, "--tags", tag, *ns).exit_code == 0
    got = _messages(rmq("message", "pop", "CliPopTags", "-g", "cli-pop-tags", "-s", "Aa", "-c", "10", *ns))
    assert sorted(m["body"] for m in got) == ["a0", "a1"]  # type: ignore[type-var]
    # the stray was acked, not left to come back to the group
    assert _messages(rmq("message", "pop", "CliPopTags", "-g", "cli-pop-tags", "--wait", "2", *ns)) == []


def test_dlq_and_retry(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    dlq = json.loads(rmq("dlq", "list", *ns).stdout)
    assert dlq == {"topics": []}
    retry = json.loads(rmq("retry", "list", *ns).stdout)["topics"]
    # other tests of the session add groups of their own: look ours up by name
    orders = next(r for r in retry if r["group"] == "orders-cg")
    assert set(orders) == {
        "group",
        "topic",
        "messages",
        "brokers",
        "lastUpdated",
    }
    assert _messages(rmq("retry", "browse", "orders-cg", *ns)) == []
    missing = rmq("dlq", "browse", "orders-cg", *ns)
    assert missing.exit_code == 1 and "%DLQ%orders-cg not found" in missing.stderr
