"""``rmq cluster metrics`` against the session's NameServer + broker: the figures of mqadmin
exportMetrics as tables and JSON, the same figures in the metrics.json ``--file`` writes, and bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from typer.testing import Result

from tests.cli.online.conftest import Cluster

Rmq = Callable[..., Result]


def test_cluster_metrics_shows_each_master_and_the_sums(rmq: Rmq, cluster: Cluster, tmp_path: Path) -> None:
    n = ("-n", cluster.namesrv)
    shown = rmq("cluster", "metrics", *n, "-o", "json")
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.stdout)
    assert doc["cluster"] == "DefaultCluster"
    (broker,) = doc["brokers"]
    assert (broker["brokerName"], broker["address"]) == ("broker-a", cluster.broker)
    assert broker["topics"] >= 1 and broker["groups"] >= 1  # Orders and orders-cg at least
    assert broker["cpuNum"] is None and broker["totalMemKbytes"] is None  # not reported by the broker
    assert broker["messageAverageSize"] > 0  # 12 messages were put
    assert {"language": "JAVA", "version": 479} in broker["clients"]  # the session's consumer
    assert doc["totals"]["normalInTps"] == broker["normalInTps"]  # one master: its figures are the sums

    written = tmp_path / "metrics.json"
    table = rmq("cluster", "metrics", *n, "--file", written)
    assert table.exit_code == 0, table.output
    assert table.stderr == f"wrote {written}\n"
    lines = table.stdout.splitlines()
    assert any("broker-a" in line and cluster.broker in line for line in lines)
    assert any(line.split()[:1] == ["total"] for line in lines)  # the sums under the brokers
    assert "JAVA V5_3_3" in table.stdout
    exported = json.loads(written.read_text())
    quota = exported["evaluateReport"]["broker-a"]["runtimeQuota"]
    assert (quota["topicSize"], quota["groupSize"]) == (broker["topics"], broker["groups"])


def test_cluster_metrics_bad_input(rmq: Rmq, cluster: Cluster, tmp_path: Path) -> None:
    n = ("-n", cluster.namesrv)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # an unknown cluster is not found (1); a file that cannot be written is bad input (2)
    for args, code in ((("-c", "NoSuchCluster"), 1), (("--file", blocker / "metrics.json"), 2)):
        result = rmq("cluster", "metrics", *n, *args)
        assert result.exit_code == code, args
        assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
