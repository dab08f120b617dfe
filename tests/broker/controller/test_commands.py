"""The controller commands against one process holding a NameServer with the controller on its port
(enableControllerInNamesrv) and a broker in controller mode (a group of one, its own master):
mqadmin's layouts and `rmq controller`."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.controller.config import ControllerConfig
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig
from tests.cli.online.conftest import _start_loop

pytestmark = pytest.mark.servers

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    folder = tmp_path_factory.mktemp("controller-node")
    plan = NodePlan(
        namesrv=NamesrvConfig(
            listen_port=0,
            kv_config_path=folder / "kv.json",
            config_store_path=folder / "ns.properties",
            enable_controller_in_namesrv=True,
            controller=ControllerConfig(controller_store_path=folder / "controller"),
        ),
        broker=BrokerConfig(
            broker_cluster_name="C1",
            broker_name="broker-c",
            listen_host="127.0.0.1",
            listen_port=0,
            ha_listen_port=0,
            http_port=0,
            grpc_port=-1,
            enable_controller_mode=True,
        ),
        store=StoreConfig(store_path=folder / "store", mapped_file_size_commit_log=1 << 20),
        advertise_host="127.0.0.1",
    )
    loop = _start_loop()
    started = Node(plan)
    asyncio.run_coroutine_threadsafe(started.start(), loop).result(30)
    try:
        yield started
    finally:
        asyncio.run_coroutine_threadsafe(started.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)


def _runner(entry: Callable[[list[str]], int], node: Node, monkeypatch: pytest.MonkeyPatch, tmp: Path) -> Run:
    assert node.namesrv is not None
    monkeypatch.setenv("RMQ_CONFIG", str(tmp / "config.toml"))
    monkeypatch.setenv("NAMESRV_ADDR", node.namesrv.address)

    def invoke(*args: object) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = entry([str(a) for a in args])
        return code, out.getvalue(), err.getvalue()

    return invoke


@pytest.fixture
def mqadmin(node: Node, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Run:
    from cli.mqadmin import main

    return _runner(main, node, monkeypatch, tmp_path)


@pytest.fixture
def rmq(node: Node, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Run:
    from cli.main import main

    return _runner(main, node, monkeypatch, tmp_path)


def _addrs(node: Node) -> tuple[str, str]:
    assert node.namesrv is not None and node.namesrv.controller is not None and node.broker is not None
    return node.namesrv.controller.address, node.broker.address


def test_mqadmin_prints_rocketmqs_layouts(mqadmin: Run, node: Node) -> None:
    controller, broker = _addrs(node)
    assert mqadmin("getControllerMetaData", "-a", controller)[1] == (
        f"\n#ControllerGroup\tDefaultControllerGroup\n#ControllerLeaderId\tn0"
        f"\n#ControllerLeaderAddress\t{controller}\n#Peer:\tn0-{controller}\n"
    )
    assert mqadmin("getSyncStateSet", "-a", controller, "-b", "broker-c")[1] == (
        f"\n#brokerName\tbroker-c\n#MasterBrokerId\t1\n#MasterAddr\t{broker}\n#MasterEpoch\t1\n"
        f"#SyncStateSetEpoch\t1\n#SyncStateSetNums\t1\n\nInSyncReplica:\tReplicaIdentity{{"
        f"brokerName='broker-c', brokerId=1, brokerAddress='{broker}', alive=true}}\n"
    )
    epochs = mqadmin("getBrokerEpoch", "-c", "C1")[1]
    assert epochs.startswith(
        f"\n#clusterName\tC1\n#brokerName\tbroker-c\n#brokerAddr\t{broker}\n#brokerId\t1"
    )
    assert "\n#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=" in epochs
    code, out, _ = mqadmin(
        "updateControllerConfig", "-a", controller, "-k", "enableElectUncleanMaster", "-v", "true"
    )
    assert (code, out) == (
        0,
        f"update controller config success![{controller}]\nenableElectUncleanMaster : true\n",
    )
    config = mqadmin("getControllerConfig", "-a", controller)[1]
    assert f"============{controller}============\n" in config
    assert f"{'enableElectUncleanMaster':<50}=  true\n" in config


def test_refusals_are_one_line_and_a_failure_exit(mqadmin: Run, node: Node) -> None:
    controller, _ = _addrs(node)
    code, out, err = mqadmin("electMaster", "-a", controller, "-b", "1", "-bn", "broker-c", "-c", "C1")
    assert code != 0 and out == "" and err.count("\n") == 1 and "is master already" in err
    code, _, err = mqadmin("cleanBrokerMetadata", "-a", controller, "-bn", "broker-c", "-c", "C1", "-b", "1")
    assert code != 0 and "alive" in err
    code, _, err = mqadmin("cleanBrokerMetadata", "-a", controller, "-bn", "broker-c", "-b", "x")
    assert code != 0 and "according to the format" in err


def test_rmq_controller_status_as_json(rmq: Run, node: Node) -> None:
    controller, broker = _addrs(node)
    code, out, _ = rmq("controller", "status", "-a", controller, "-o", "json")
    assert code == 0
    status = json.loads(out)
    assert status["controller"]["leaderId"] == "n0"
    (group,) = status["groups"]
    assert (group["brokerName"], group["masterId"], group["masterAddress"]) == ("broker-c", 1, broker)
    assert [(r["brokerId"], r["inSync"], r["alive"]) for r in group["replicas"]] == [(1, True, True)]
