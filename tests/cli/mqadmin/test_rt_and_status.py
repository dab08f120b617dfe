"""mqadmin's producer, haStatus, exportConfigs, sendMsgStatus, checkMsgSendRT and clusterRT end to end
against the session's NameServer + broker (plus, for replication, a slave of ``broker-a``).

Round trips are real measurements: the tests check the layouts and the counts, never a time. What is
sent goes to ``RtTopic`` and to the topic named after the broker, so ``Orders`` stays as the golden
tests expect it."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from broker.client.message import Message
from broker.client.producer import Producer
from broker.server.broker import Broker
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig
from cli.main import app
from tests.cli.mqadmin.conftest import Cluster, Run

Mq = Callable[..., Run]
RT_TOPIC = "RtTopic"
HEX32 = "[0-9A-F]{32}"


def one_line_error(run: Run) -> None:
    assert run.code != 0 and run.out == "", run
    assert run.err.count("\n") == 1 and run.err.strip(), run.err


@pytest.fixture
def rt_topic(mqadmin: Mq) -> str:
    made = mqadmin("updateTopic", "-t", RT_TOPIC, "-c", "DefaultCluster", "-r", "4", "-w", "4")
    assert made.code == 0, made.err
    return RT_TOPIC


@pytest.fixture(scope="module")
def slave(node: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A slave of ``broker-a`` replicating from it until the module's tests are done."""
    from admin.service import AdminService

    config = BrokerConfig(
        broker_name="broker-a",
        broker_id=1,
        broker_role="SLAVE",
        listen_host="127.0.0.1",
        listen_port=0,
        ha_listen_port=0,
        namesrv_addr=node.namesrv,
        http_port=0,
        grpc_port=-1,
        ha_send_heartbeat_interval=500,
        slave_sync_interval_ms=500,
    )
    store = StoreConfig(
        store_path=tmp_path_factory.mktemp("rt-slave"),
        mapped_file_size_commit_log=1 << 20,
        mapped_file_size_consume_queue_units=1000,
        max_hash_slot_num=1000,
        max_index_num=4000,
    )
    broker = Broker(config, store)

    async def start() -> None:
        await broker.start()
        async with AdminService([node.namesrv], 10) as service:
            for _ in range(500):
                (master,) = await service.broker_ha_runtime(broker=node.broker)
                conns = master.info.haConnectionInfo
                if len(conns) == 1 and conns[0].inSync and conns[0].diff == 0:
                    return
                await asyncio.sleep(0.05)
        raise AssertionError("the slave did not catch up with broker-a")

    node.call(start())
    yield broker
    node.call(broker.stop())


# -- producer ---------------------------------------------------------------------------------------
def test_producer(mqadmin: Mq, node: Cluster, rt_topic: str) -> None:
    producer = Producer("rt-producer-group", node.namesrv)

    async def start() -> None:
        await producer.start()
        await producer.send(Message(rt_topic, b"hello"))  # the broker hears its heartbeat first

    node.call(start())
    try:
        run = mqadmin("producer", "-b", node.broker)
        listed = CliRunner().invoke(
            app, ["broker", "producers", "-b", node.broker, "-n", node.namesrv, "-o", "json"]
        )
        table = CliRunner().invoke(
            app, ["broker", "producers", "-b", node.broker, "-n", node.namesrv, "-o", "text"]
        )
    finally:
        node.call(producer.shutdown())
    assert listed.exit_code == 0, listed.output
    doc = json.loads(listed.stdout)
    assert doc["address"] == node.broker
    (client,) = doc["groups"]["rt-producer-group"]
    assert client["clientId"] == producer.client_id and client["language"] == "PYTHON"
    assert client["remoteAddress"].startswith("/127.0.0.1:")
    mine = [line for line in table.stdout.splitlines() if line.startswith("rt-producer-group")]
    assert len(mine) == 1 and producer.client_id in mine[0] and "V5_" in mine[0]
    assert run.code == 0, run.err
    line = re.compile(
        r"producer group \((\S+)\) instance : clientId=(\S+),remoteIP=/127\.0\.0\.1:(\d+), "
        r"language=(\w+), version=(\d+), lastUpdateTimestamp=(\d+)\n"
    )
    rows = [line.fullmatch(row) for row in run.out.splitlines(keepends=True)]
    assert rows and all(rows), run.out
    found = [m for m in rows if m is not None and m[1] == "rt-producer-group"]
    assert len(found) == 1, run.out
    assert found[0][2] == producer.client_id and found[0][4] == "PYTHON"
    assert abs(int(found[0][6]) - time.time() * 1000) < 60_000  # a wall-clock time, not a monotonic one

    gone = mqadmin("producer", "--broker", node.broker)
    assert gone.code == 0 and "rt-producer-group" not in gone.out  # unregistered on shutdown

    one_line_error(mqadmin("producer", "-b", "127.0.0.1:1"))
    missing = mqadmin("producer")
    assert missing.code == 2 and missing.err == "Missing required option: b\n"


# -- haStatus ---------------------------------------------------------------------------------------
SLAVE_HEADER = "{:<32}  {:<16} {:>16} {:>16} {:>16} {:>16}\n".format(
    "#SlaveAddr", "#SlaveAckOffset", "#Diff", "#TransferSpeed(KB/s)", "#Status", "#TransferFromWhere"
)


def test_ha_status(mqadmin: Mq, node: Cluster, slave: Broker) -> None:
    run = mqadmin("haStatus", "-b", node.broker)
    assert run.code == 0, run.err
    head = re.fullmatch(
        rf"\n#MasterAddr\t{re.escape(node.broker)}\n#MasterCommitLogMaxOffset\t(\d+)\n"
        r"#SlaveNum\t1\n#InSyncSlaveNum\t1\n(.*)",
        run.out,
        re.S,
    )
    assert head is not None, run.out
    assert head[2].startswith(SLAVE_HEADER)
    row = head[2][len(SLAVE_HEADER) :]
    # %-32s  %-16d %16d %16.2f %16s %16d
    addr, ack, diff, speed, status, where = (row[a:b] for a, b in ((0, 32), (34, 50), (51, 67), (68, 84),
                                                                     (85, 101), (102, 118)))  # fmt: skip
    assert row == f"{addr}  {ack} {diff} {speed} {status} {where}\n", row
    assert addr.rstrip().startswith("127.0.0.1:") and ack.rstrip() == head[1]  # acked the master's end
    assert diff == f"{0:>16}" and status == f"{'OK':>16}"
    assert re.fullmatch(r" *\d+\.\d\d", speed) and re.fullmatch(r" *-?\d+", where)

    assert mqadmin("haStatus", "-c", "DefaultCluster").out == run.out  # -c: every master

    as_slave = mqadmin("haStatus", "-b", slave.address)
    assert as_slave.code == 0, as_slave.err
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
    assert re.fullmatch(
        r"\n#MasterAddr\t127\.0\.0\.1:\d+\n#CommitLogMaxOffset\t" + head[1] + r"\n"
        r"#TransferSpeed\(KB/s\)\t\d+\.\d\d\n"
        rf"#LastReadTime\t{stamp}\n#LastWriteTime\t{stamp}\n#MasterFlushOffset\t\d+\n",
        as_slave.out,
    ), as_slave.out

    one_line_error(mqadmin("haStatus", "-c", "NoSuchCluster"))
    one_line_error(mqadmin("haStatus", "-b", node.broker, "-i", "0"))
    neither = mqadmin("haStatus")
    assert neither.code == 2 and neither.err == (
        "Missing required option: [-c which cluster, -b which broker to fetch]\n"
    )


# -- exportConfigs ----------------------------------------------------------------------------------
def test_export_configs(mqadmin: Mq, slave: Broker, tmp_path: Path) -> None:
    run = mqadmin("exportConfigs", "-c", "DefaultCluster", "-f", tmp_path)
    path = tmp_path / "configs.json"
    assert run == Run(0, f"export {path} success", "")  # no newline, as the Java tool prints it
    text = path.read_text()
    # fastjson's pretty JSON of HashMaps, in their iteration order; no final newline
    assert text.startswith(
        '{\n\t"clusterScale":{\n\t\t"namesrvSize":1,\n\t\t"slaveBrokerSize":1,\n\t\t"masterBrokerSize":1\n\t},'
        '\n\t"brokerConfigs":{\n\t\t"broker-a":{\n\t\t\t"brokerId":"0",\n'
    )
    assert text.endswith('"\n\t\t}\n\t}\n}')
    doc = json.loads(text)
    config = doc["brokerConfigs"]["broker-a"]
    assert config["brokerName"] == "broker-a" and config["brokerClusterName"] == "DefaultCluster"
    assert config["brokerId"] == "0" and config["brokerRole"] == "ASYNC_MASTER"
    assert set(config) <= {
        "brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime", "filterServerNums",
        "flushDiskType", "maxMessageSize", "messageDelayLevel", "msgTraceTopicName", "slaveReadEnable",
        "traceOn", "traceTopicEnable", "useTLS", "autoCreateTopicEnable", "autoCreateSubscriptionGroup",
    }  # fmt: skip
    assert {"flushDiskType", "maxMessageSize", "autoCreateTopicEnable"} <= set(config)

    one_line_error(mqadmin("exportConfigs", "-c", "NoSuchCluster", "-f", tmp_path))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    one_line_error(mqadmin("exportConfigs", "-c", "DefaultCluster", "-f", blocker))
    missing = mqadmin("exportConfigs")
    assert missing.code == 2 and missing.err == "Missing required option: c\n"


# -- measured sends ---------------------------------------------------------------------------------
def test_send_msg_status(mqadmin: Mq) -> None:
    run = mqadmin("sendMsgStatus", "-b", "broker-a", "-c", "3", "-s", "20")
    assert run.code == 0, run.err
    line = re.compile(
        rf"rt=\d+ms, SendResult=SendResult \[sendStatus=SEND_OK, msgId={HEX32}, offsetMsgId={HEX32}, "
        r"messageQueue=MessageQueue \[topic=broker-a, brokerName=broker-a, queueId=0\], "
        r"queueOffset=(\d+), recallHandle=null\]\n"
    )
    rows = [line.fullmatch(row) for row in run.out.splitlines(keepends=True)]
    assert len(rows) == 3 and all(rows), run.out
    offsets = [int(m[1]) for m in rows if m is not None]
    assert offsets == list(range(offsets[0], offsets[0] + 3)) and offsets[0] >= 1  # after the warm-up
    stored = mqadmin("queryMsgByOffset", "-t", "broker-a", "-b", "broker-a", "-i", "0", "-o", offsets[0],
                     "-f", "UTF-8")  # fmt: skip
    assert "Message Body:        hello jodiehello jodie\n" in stored.out  # a started 11 bytes each

    one_line_error(mqadmin("sendMsgStatus", "-b", "no-such-broker", "-c", "1"))
    one_line_error(mqadmin("sendMsgStatus", "-b", "broker-a", "-c", "-1"))
    one_line_error(mqadmin("sendMsgStatus", "-b", "broker-a", "-s", "big"))


def test_check_msg_send_rt(mqadmin: Mq, rt_topic: str) -> None:
    run = mqadmin("checkMsgSendRT", "-t", rt_topic, "-a", "6", "-s", "64")
    assert run.code == 0, run.err
    lines = run.out.splitlines(keepends=True)
    row = "{:<32}  {:<4}  {:<20}    {}\n"
    assert lines[0] == row.format("#Broker Name", "#QID", "#Send Result", "#RT")
    assert len(lines) == 8
    for i, text in enumerate(lines[1:7]):
        rt = text.rsplit(" ", 1)[1].strip()
        assert rt.isdigit() and text == row.format("broker-a", i % 4, "true", rt)  # queue i % 4
    assert re.fullmatch(r"Avg RT: \d+\.\d\d\n", lines[7])

    single = mqadmin("checkMsgSendRT", "-t", rt_topic, "-a", "1")
    assert single.out.endswith("Avg RT: NaN\n")  # Java divides by amount - 1

    one_line_error(mqadmin("checkMsgSendRT", "-t", "NoSuchTopic", "-a", "2"))
    one_line_error(mqadmin("checkMsgSendRT", "-t", rt_topic, "-a", "-3"))


def test_cluster_rt(mqadmin: Mq) -> None:
    run = mqadmin("clusterRT", "-a", "3", "-s", "10", "-c", "DefaultCluster")
    assert run.code == 0, run.err
    header, row = run.out.splitlines(keepends=True)
    assert header == "{:<24}  {:<24}  {:<4}  {:<8}  {:<8}\n".format(
        "#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount"
    )
    rt = row.split()[2]
    assert re.fullmatch(r"\d+\.\d\d", rt)
    assert row == f"{'DefaultCluster':<24}  {'broker-a':<24}  {rt:<8}  {3:<16}  {0:<16}\n"
    assert mqadmin("clusterRT", "-a", "2").out.count("DefaultCluster") == 1  # every cluster

    tlog = mqadmin("clusterRT", "-a", "2", "-p", "true", "-m", "room-1")
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\|room-1\|DefaultCluster\|broker-a\|\d+\n", tlog.out
    ), tlog.out

    one_line_error(mqadmin("clusterRT", "-c", "NoSuchCluster"))
    one_line_error(mqadmin("clusterRT", "-a", "-1"))
    one_line_error(mqadmin("clusterRT", "-a", "1", "-i", "-2"))


def test_ctrl_c_ends_an_interval_loop_quietly(mqadmin: Mq, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.cli.online.conftest import interrupt_watch_after

    interrupt_watch_after(monkeypatch, 2)
    run = mqadmin("clusterList", "-i", "1")
    assert run.code == 0 and run.err == ""
    assert run.out.count("#Cluster Name") == 2  # a round, a pause, a round, then Ctrl-C


def test_wait_ready_counts_slaves(node: Cluster, slave: Broker, tmp_path: Path) -> None:
    """A master and its slave are two brokers, as ``clusterList`` counts them."""
    result = CliRunner().invoke(
        app, ["wait", "ready", "--brokers", "2", "--timeout", "10", "-n", node.namesrv, "-o", "json"],
        env={"RMQ_CONFIG": str(tmp_path / "config.toml")},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2 broker(s) answer" in json.loads(result.stdout)["detail"]
