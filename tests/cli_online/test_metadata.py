"""``rmq metadata export|apply`` against a real NameServer + broker."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import Result

from admin.errors import BadInput
from admin.metadata_file import load_metadata
from tests.cli_online.conftest import TOPIC, Cluster

Rmq = Callable[..., Result]

SETUP = """
[topicConfigTable.MetaOrders]
readQueueNums = 2
writeQueueNums = 2
order = true

[topicConfigTable.MetaFifo]
attributes = { "message.type" = "FIFO" }

[subscriptionGroupTable.meta-cg]
retryMaxTimes = 3
consumeMessageOrderly = true
"""


def _plan(result: Result) -> dict[str, object]:
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def _actions(doc: dict[str, object]) -> dict[str, str]:
    return {f"{i['kind']}:{i['name']}": i["action"] for i in doc["items"]}  # type: ignore[attr-defined]


def test_apply_creates_then_is_idempotent_and_check_reports_drift(
    cluster: Cluster, rmq: Rmq, tmp_path: Path
) -> None:
    file = tmp_path / "setup.toml"
    file.write_text(SETUP)
    checked = rmq("metadata", "apply", file, "-n", cluster.namesrv, "--check", "-o", "json")
    assert checked.exit_code == 1
    assert "3 topic(s) or group(s) differ" in checked.stderr
    assert _actions(_plan(checked)) == {
        "topic:MetaOrders": "create",
        "topic:MetaFifo": "create",
        "group:meta-cg": "create",
    }

    applied = rmq("metadata", "apply", file, "-n", cluster.namesrv, "-o", "json")
    assert applied.exit_code == 0, applied.output
    assert _plan(applied)["applied"] is True
    topics = json.loads(rmq("topic", "list", "-n", cluster.namesrv, "-o", "json").stdout)["topics"]
    by_name = {t["name"]: t for t in topics}
    assert (by_name["MetaOrders"]["readQueues"], by_name["MetaOrders"]["order"]) == (2, True)
    assert by_name["MetaFifo"]["attributes"] == {"message.type": "FIFO"}
    group = json.loads(rmq("group", "describe", "meta-cg", "-n", cluster.namesrv, "-o", "json").stdout)
    assert group["config"]["retryMaxTimes"] == 3 and group["config"]["consumeMessageOrderly"] is True

    again = rmq("metadata", "apply", file, "-n", cluster.namesrv, "--check", "-o", "json")
    assert again.exit_code == 0, again.output
    assert set(_actions(_plan(again)).values()) == {"unchanged"}

    file.write_text(SETUP.replace("readQueueNums = 2", "readQueueNums = 3"))
    drift = rmq("metadata", "apply", file, "-n", cluster.namesrv, "--dry-run", "-o", "json")
    assert drift.exit_code == 0
    changes = {i["name"]: i["changes"] for i in _plan(drift)["items"]}  # type: ignore[attr-defined]
    assert changes["MetaOrders"] == [{"field": "readQueueNums", "current": 2, "wanted": 3}]
    listed = json.loads(rmq("topic", "list", "-n", cluster.namesrv, "-o", "json").stdout)["topics"]
    assert {t["name"]: t["readQueues"] for t in listed}["MetaOrders"] == 2  # a dry run writes nothing


def test_export_round_trips_through_apply(cluster: Cluster, rmq: Rmq, tmp_path: Path) -> None:
    out = tmp_path / "metadata.json"
    exported = rmq("metadata", "export", "-n", cluster.namesrv, "-f", out)
    assert exported.exit_code == 0, exported.output
    doc = json.loads(out.read_text())
    assert doc["topicConfigTable"][TOPIC]["readQueueNums"] == 4
    assert "TBW102" not in doc["topicConfigTable"]  # system topics stay out
    assert not any(name.startswith("%RETRY%") for name in doc["topicConfigTable"])
    assert "orders-cg" in doc["subscriptionGroupTable"]
    assert not any(name.startswith("CID_RMQ_SYS_") for name in doc["subscriptionGroupTable"])
    check = rmq("metadata", "apply", out, "-n", cluster.namesrv, "--check", "-o", "json")
    assert check.exit_code == 0, check.output
    special = json.loads(rmq("metadata", "export", "-n", cluster.namesrv, "--special").stdout)
    assert "%RETRY%orders-cg" in special["topicConfigTable"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"topicConfigTable": {"X": {"readQueueNums": "abc"}}}',
            "topicConfigTable.X.readQueueNums: expected",
        ),
        ('{"topicConfigTable": {"X": {"readQueues": 3}}}', "unknown field 'readQueues'"),
        ('{"topicConfigTable": [1]}', "topicConfigTable must map names to objects"),
        ('{"topicConfigTable": {', "not JSON"),
        ('{"topics": {}}', "unknown key 'topics'"),
        ("{}", "names no topic and no group"),
        ('{"topicConfigTable": {"X": {"topicName": "Y"}}}', "not the name it is filed under"),
    ],
)
def test_bad_files_are_refused_with_the_key_named(rmq: Rmq, tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "bad.json"
    file.write_text(text)
    result = rmq("metadata", "apply", file, "-n", "127.0.0.1:1")  # refused before connecting
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1


def test_system_and_retry_names_and_bad_group_values_are_refused(
    cluster: Cluster, rmq: Rmq, tmp_path: Path
) -> None:
    for text, message in [
        ('{"topicConfigTable": {"TBW102": {}}}', "system topics are not applied"),
        ('{"subscriptionGroupTable": {"g": {"retryMaxTimes": -5}}}', "retry max times must be -1"),
    ]:
        file = tmp_path / "bad.json"
        file.write_text(text)
        result = rmq("metadata", "apply", file, "-n", cluster.namesrv)
        assert result.exit_code == 2 and message in result.stderr, result.output


def test_unknown_fields_pass_when_asked_with_a_note(tmp_path: Path) -> None:
    file = tmp_path / "newer.json"
    file.write_text('{"topicConfigTable": {"X": {"perm": 4, "futureField": 1}}}')
    doc = load_metadata(file, ignore_unknown=True)
    assert [e.given for e in doc.topics] == [frozenset({"perm"})]
    assert doc.notes == ["topicConfigTable.X: unknown field 'futureField' ignored"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_FIELDS = ["readQueueNums", "perm", "order", "attributes", "topicFilterType", "retryMaxTimes", "brokerId"]


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=4) | _JSON)
def test_any_json_entry_loads_or_is_refused_cleanly(tmp_path: Path, entry: object) -> None:
    file = tmp_path / "fuzz.json"
    file.write_text(json.dumps({"topicConfigTable": {"X": entry}, "subscriptionGroupTable": {"g": entry}}))
    try:
        load_metadata(file, ignore_unknown=True)
    except BadInput as exc:
        assert str(exc).startswith(f"{file}: ")
