"""``rmq topic queue``: the ConsumeQueue units of one queue, as the broker stores them."""

from __future__ import annotations

import json
from collections.abc import Callable

from typer.testing import Result

from broker.protocol.javahash import java_hash
from broker.protocol.msgid import decode_offset_msg_id
from tests.cli.online.conftest import TOPIC, Cluster

Rmq = Callable[..., Result]


def test_units_point_at_the_messages_sent_to_the_queue(cluster: Cluster, rmq: Rmq) -> None:
    # the first three units (other tests of the session may add more to the queue)
    result = rmq("topic", "queue", TOPIC, 1, "--from", 0, "-l", 3, "-n", cluster.namesrv, "-o", "json")
    assert result.exit_code == 0, result.output
    page = json.loads(result.stdout)
    assert (page["brokerName"], page["queueId"], page["minOffset"]) == ("broker-a", 1, 0)
    assert page["maxOffset"] >= 3
    sent = [h for h in cluster.sent if h.queueId == 1]  # messages 1, 5 and 9: tag "odd"
    assert [u["index"] for u in page["units"]] == [h.queueOffset for h in sent] == [0, 1, 2]
    offsets = [decode_offset_msg_id(h.msgId).offset for h in sent]
    assert [u["commitlogOffset"] for u in page["units"]] == offsets
    assert {u["tagsCode"] for u in page["units"]} == {java_hash("odd")}
    assert all(u["size"] > 0 for u in page["units"])


def test_from_and_count_pick_a_window_and_the_table_names_its_columns(cluster: Cluster, rmq: Rmq) -> None:
    one = json.loads(
        rmq("topic", "queue", TOPIC, 2, "--from", 1, "-l", 1, "-n", cluster.namesrv, "-o", "json").stdout
    )
    assert [u["index"] for u in one["units"]] == [1]
    newest = json.loads(
        rmq("topic", "queue", TOPIC, 2, "--limit", 2, "-n", cluster.namesrv, "-o", "json").stdout
    )
    end = newest["maxOffset"]
    assert [u["index"] for u in newest["units"]] == [end - 2, end - 1]
    table = rmq("topic", "queue", TOPIC, 2, "-n", cluster.namesrv)
    assert table.exit_code == 0 and "commitlog offset" in table.stdout and "broker-a" in table.stdout


def test_a_queue_or_index_outside_the_topic_is_refused_in_one_line(cluster: Cluster, rmq: Rmq) -> None:
    no_queue = rmq("topic", "queue", TOPIC, 9, "-n", cluster.namesrv)
    assert no_queue.exit_code == 2
    assert no_queue.stderr.strip().splitlines() == [f"rmq: error: {TOPIC} has queues 0-3 on broker-a, not 9"]
    past_end = rmq("topic", "queue", TOPIC, 0, "--from", 10_000, "-n", cluster.namesrv)
    assert past_end.exit_code == 2 and "index 10000 is outside queue 0" in past_end.stderr
    elsewhere = rmq("topic", "queue", TOPIC, 0, "--broker-name", "broker-z", "-n", cluster.namesrv)
    assert elsewhere.exit_code != 0 and "broker-z" in elsewhere.stderr
