"""A running broker reports its settings under RocketMQ's key names (GET_BROKER_CONFIG)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from typer.testing import Result

from tests.cli.online.conftest import Cluster

Rmq = Callable[..., Result]
INTERNAL = ("fileReservedTimeHours", "storePath", "brokerIp1", "checkCrcOnRecover", "extra")


def test_config_get_uses_rocketmq_names(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-b", cluster.broker, "-o", "json")
    result = rmq("broker", "config", "get", "fileReservedTime", "storePathRootDir", "brokerIP1", *ns)
    assert result.exit_code == 0, result.output
    values = json.loads(result.stdout)["values"]
    assert values["fileReservedTime"] == "72" and values["brokerIP1"] == "127.0.0.1"
    assert values["storePathRootDir"] == str(cluster.node.plan.store.store_path)  # type: ignore[union-attr]
    everything = json.loads(rmq("broker", "config", "get", *ns).stdout)["values"]
    assert {"fileReservedTime", "storePathRootDir", "brokerIP1", "checkCRCOnRecover"} <= set(everything)
    assert not set(INTERNAL) & set(everything)


def test_mqadmin_get_broker_config_uses_rocketmq_names(cluster: Cluster, rmq: Rmq) -> None:
    result = rmq("getBrokerConfig", "-n", cluster.namesrv, "-b", cluster.broker)
    assert result.exit_code == 0, result.output
    keys = set(re.findall(r"^\s*(\w+)\s*=", result.stdout, re.MULTILINE))
    assert {"fileReservedTime", "storePathRootDir", "brokerIP1"} <= keys, result.stdout
    assert not set(INTERNAL) & keys
