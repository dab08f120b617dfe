"""mqadmin exportMetrics end to end against a real NameServer + broker: metrics.json with the Java
tool's keys and layout, figures that match what the broker holds, and bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from admin.models.names import TopicKind, is_system_group, topic_kind
from broker.client.remoting_client import RemotingClient
from cli.mqadmin.render import java_double
from tests.cli_online.conftest import send
from tests.mqadmin.conftest import Cluster, Run
from tests.mqadmin.test_more_commands import one_line_error

Mq = Callable[..., Run]
TOPIC = "MetricsT"


async def send_half_and_delayed(broker: str) -> None:
    """A prepared transactional message and a delayed one: they wait in RMQ_SYS_TRANS_HALF_TOPIC and
    SCHEDULE_TOPIC_XXXX, the two topics exportMetrics reports besides the broker's totals."""
    client = RemotingClient()
    try:
        await send(client, broker, TOPIC, b"prepared", 0, TRAN_MSG="true", PGROUP="PG")
        await send(client, broker, TOPIC, b"later", 0, DELAY="3")
    finally:
        await client.close()


def test_export_metrics(mqadmin: Mq, node: Cluster, tmp_path: Path) -> None:
    assert mqadmin("updateTopic", "-t", TOPIC, "-c", "DefaultCluster").code == 0
    node.call(send_half_and_delayed(node.broker))
    run = mqadmin("exportMetrics", "-c", "DefaultCluster", "-f", tmp_path)
    path = tmp_path / "metrics.json"
    assert run == Run(0, f"export {path} success", "")  # no newline, as the Java tool prints it
    text = path.read_text()
    # fastjson's pretty JSON of HashMaps in their iteration order, no final newline
    assert text.startswith('{\n\t"totalData":{\n\t\t"totalOneDayNum":{\n') and text.endswith("\n\t}\n}")
    doc = json.loads(text)
    assert list(doc) == ["totalData", "evaluateReport"]
    report = doc["evaluateReport"]["broker-a"]
    assert set(report) == {"runtimeEnv", "runtimeQuota", "runtimeVersion"}
    assert report["runtimeEnv"] == {}  # neither cpuNum nor totalMemKBytes is reported by these brokers

    broker = node.node.broker
    assert broker is not None
    quota = report["runtimeQuota"]
    assert set(quota) == {"diskRatio", "tps", "oneDayNum", "messageAverageSize", "topicSize", "groupSize"}
    assert set(quota["diskRatio"]) == {"commitLogDiskRatio", "consumeQueueDiskRatio"}
    assert 0 <= float(quota["diskRatio"]["commitLogDiskRatio"]) <= 1
    assert set(quota["tps"]) == {"normalInTps", "normalOutTps", "transInTps", "scheduleInTps"}
    day = quota["oneDayNum"]
    assert set(day) == {"normalOneDayInNum", "normalOneDayOutNum", "transOneDayInNum", "scheduleOneDayInNum"}
    assert day["transOneDayInNum"] >= 1 and day["scheduleOneDayInNum"] >= 1
    assert day["normalOneDayInNum"] == day["normalOneDayOutNum"] == 0  # the broker started today
    store = broker.store
    assert quota["messageAverageSize"] == java_double(store.put_bytes / store.put_count)
    system = {"broker-a", "DefaultCluster", "DefaultCluster_REPLY_TOPIC"}
    topics = [t for t in broker.topics.table if topic_kind(t, frozenset(system)) is TopicKind.NORMAL]
    assert TOPIC in topics and quota["topicSize"] == len(topics)
    assert quota["groupSize"] == sum(1 for g in broker.groups.table if not is_system_group(g))

    version = report["runtimeVersion"]
    assert version["rocketmqVersion"] == "V5_3_3"
    # the session's consumer of orders-cg, as language%version
    assert version["clientInfo"] and all("%V" in c for c in version["clientInfo"])

    totals = doc["totalData"]
    assert set(totals) == {"totalTps", "totalOneDayNum"}
    assert totals["totalOneDayNum"] == day  # one master: its figures are the sums
    assert totals["totalTps"] == {f"total{k[0].upper()}{k[1:]}": v for k, v in quota["tps"].items()}


def test_export_metrics_default_path_and_bad_input(mqadmin: Mq, tmp_path: Path) -> None:
    one_line_error(mqadmin("exportMetrics", "-c", "NoSuchCluster", "-f", tmp_path))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    one_line_error(mqadmin("exportMetrics", "-c", "DefaultCluster", "-f", blocker))
    missing = mqadmin("exportMetrics")
    assert missing.code == 2 and missing.err == "Missing required option: c\n"
    assert not list(tmp_path.glob("**/metrics.json"))
