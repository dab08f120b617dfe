"""mqadmin's printed layouts against a real NameServer + broker: headers and column widths exactly,
values where the data is deterministic."""

from __future__ import annotations

import re
from collections.abc import Callable

from cli.mqadmin.render import hashmap_order, java_double, version_desc
from tests.mqadmin.conftest import GROUP, TOPIC, Cluster, Run

Mq = Callable[..., Run]
HUMAN = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"


def test_command_list_help_and_unknown(mqadmin: Mq) -> None:
    listing = mqadmin()
    assert listing.code == 0
    lines = listing.out.splitlines()
    assert lines[0] == "The most commonly used mqadmin commands are:"
    assert lines[1] == f"   {'updateTopic':<35} Update or create topic."
    assert lines[-1] == "See 'mqadmin help <command>' for more information on a specific command."
    unknown = mqadmin("noSuchCommand")
    assert unknown.code == 2 and unknown.out.startswith("The sub command noSuchCommand not exist.\n")
    help_ = mqadmin("help", "topicroute")  # names match ignoring case
    assert help_.out == (
        "usage: mqadmin topicRoute [-h] [-l] [-n <arg>] -t <arg>\n"
        " -h,--help                Print help\n"
        " -l,--list                Use list format to print data\n"
        " -n,--namesrvAddr <arg>   Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'\n"
        " -t,--topic <arg>         topic name\n"
    )
    missing = mqadmin("topicRoute")
    assert (missing.code, missing.err) == (2, "Missing required option: t\n")
    assert mqadmin("brokerStatus").err.startswith(
        "Missing required option: [-b Broker address, -c which cluster]"
    )


def test_topic_route_json_and_list(mqadmin: Mq, node: Cluster) -> None:
    assert mqadmin("topicRoute", "-t", TOPIC).out == (
        "{\n"
        '\t"brokerDatas":[\n'
        "\t\t{\n"
        f'\t\t\t"brokerAddrs":{{0:"{node.broker}"\n'
        "\t\t\t},\n"
        '\t\t\t"brokerName":"broker-a",\n'
        '\t\t\t"cluster":"DefaultCluster",\n'
        '\t\t\t"enableActingMaster":false\n'
        "\t\t}\n"
        "\t],\n"
        '\t"filterServerTable":{},\n'
        '\t"queueDatas":[\n'
        "\t\t{\n"
        '\t\t\t"brokerName":"broker-a",\n'
        '\t\t\t"perm":6,\n'
        '\t\t\t"readQueueNums":4,\n'
        '\t\t\t"topicSysFlag":0,\n'
        '\t\t\t"writeQueueNums":4\n'
        "\t\t}\n"
        "\t]\n"
        "}\n"
    )
    row = "{:<45} {:<32} {:<50} {:<10} {:<11} {:<5}\n"
    assert mqadmin("topicRoute", "--topic", TOPIC, "-l").out == (
        row.format("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
        + row.format("DefaultCluster", "broker-a", f"{{0={node.broker}}}", 4, 4, 6)
        + "-" * 158 + "\n"
        + row.format("Total:", 1, "", 4, 4, "")
    )  # fmt: skip


def test_topic_status(mqadmin: Mq) -> None:
    lines = mqadmin("topicStatus", "-t", TOPIC).out.splitlines()
    assert (
        lines[0]
        == f"{'#Broker Name':<32}  {'#QID':<4}  {'#Min Offset':<20}  {'#Max Offset':<20}    #Last Updated"
    )
    for qid, line in enumerate(lines[1:5]):
        assert re.fullmatch(f"{'broker-a':<32}  {qid:<4}  {0:<20}  {3:<20}    {HUMAN}", line), line
    assert lines[5:] == ["", "Topic Put TPS: 0.0"]


def test_topic_list(mqadmin: Mq) -> None:
    plain = mqadmin("topicList").out.splitlines()
    assert TOPIC in plain and f"%RETRY%{GROUP}" in plain
    clustered = mqadmin("topicList", "-c").out.splitlines()
    assert clustered[0] == f"{'#Cluster Name':<20}  {'#Topic':<48}  {'#Consumer Group':<48}"
    assert f"{'DefaultCluster':<20}  {TOPIC:<64}  {GROUP:<64}" in clustered
    assert not any("%RETRY%" in line for line in clustered)


def test_cluster_list(mqadmin: Mq, node: Cluster) -> None:
    lines = mqadmin("clusterList").out.splitlines()
    assert lines[0] == (
        "#Cluster Name           #Broker Name            #BID  #Addr                  #Version          "
        "    #InTPS(LOAD)                   #OutTPS(LOAD)  #Timer(Progress)        #PCWait(ms)  #Hour  "
        "       #SPACE    #ACTIVATED"
    )
    assert re.fullmatch(
        rf"DefaultCluster {{10}}broker-a {{16}}0     {re.escape(f'{node.broker:<22}')} \S+ +"
        r" +\d+\.\d\d\(\d+,\d+ms\)  +\d+\.\d\d\(\d+,\d+ms\|\S+,\S+ms\)  "
        r"\d+-\d+\(\d+\.\dw, \d+\.\d, \d+\.\d\) +"
        r" +\d+  \d+\.\d\d +  \d\.\d{4}    +true",
        lines[1],
    ), lines[1]
    more = mqadmin("clusterList", "-m").out.splitlines()
    assert more[0] == f"{'#Cluster Name':<16}  {'#Broker Name':<32} " + " ".join(
        f"{h:>14}" for h in ("#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday")
    )


def test_consumer_progress(mqadmin: Mq) -> None:
    out = mqadmin("consumerProgress", "-g", GROUP, "-t", TOPIC).out.splitlines()
    assert out[0] == (
        f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Broker Offset':<20}  "
        f"{'#Consumer Offset':<20}  {'#Diff':<20} {'#Inflight':<20}#LastTime"
    )
    for qid, line in enumerate(out[1:5]):
        prefix = f"{TOPIC:<64}  {'broker-a':<32}  {qid:<4}  {3:<20}  {2:<20}  {1:<20} {0:<20} "
        assert line.startswith(prefix), line
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|N/A", line[len(prefix) :]), line
    assert out[5:] == ["", "Consume TPS: 0.00", "Consume Diff Total: 4", "Consume Inflight Total: 0"]
    groups = mqadmin("consumerProgress").out.splitlines()
    assert groups[0] == (
        f"{'#Group':<64}  {'#Count':<6}  {'#Version':<24} {'#Type':<5}  {'#Model':<14}  "
        f"{'#TPS':<7}  #Diff Total"
    )
    row = next(line for line in groups if line.startswith(GROUP))
    assert row.startswith(f"{GROUP:<64}  {1:<6}  ") and row.endswith("  4")


def test_query_msg_by_id_and_key(mqadmin: Mq, node: Cluster) -> None:
    sent = node.sent[1]
    out = mqadmin("queryMsgById", "-t", TOPIC, "-i", sent.msgId).out
    head, _, tracks = out.partition("\n\n\n")
    fields = {line[:20].strip(): line[21:] for line in head.splitlines()}
    assert [line[:21] for line in head.splitlines()] == [
        f"{name:<20} " for name in (
            "OffsetID:", "Topic:", "Tags:", "Keys:", "Queue ID:", "Queue Offset:", "CommitLog Offset:",
            "Reconsume Times:", "Born Timestamp:", "Store Timestamp:", "Born Host:", "Store Host:",
            "System Flag:", "Properties:", "Message Body Path:",
        )
    ]  # fmt: skip
    assert fields["OffsetID:"].strip() == sent.msgId
    assert fields["Tags:"].strip() == "[odd]" and fields["Keys:"].strip() == "[order-1 all]"
    assert fields["Queue ID:"].strip() == "1" and fields["Queue Offset:"].strip() == "0"
    assert re.fullmatch(HUMAN, fields["Store Timestamp:"].strip())
    assert fields["Store Host:"].strip() == node.broker
    assert fields["Message Body Path:"].strip() == f"/tmp/rocketmq/msgbodys/{node.uniq_keys[1]}"
    assert f"UNIQ_KEY={node.uniq_keys[1]}" in fields["Properties:"]
    assert tracks.startswith(f"MessageTrack [consumerGroup={GROUP}, trackType=")
    missing = mqadmin("queryMsgById", "-t", TOPIC, "-i", "7F00000100002A9F00000000FFFFFFFF")
    assert missing.out == "\nMessage not found!"
    by_key = mqadmin("queryMsgByKey", "-t", TOPIC, "-k", "order-5").out
    header = f"{'#Message ID':<50} {'#QID':>4} {'#Offset':>40}\n"
    assert by_key == header + f"{node.uniq_keys[5]:<50} {1:>4} {1:>40}\n"


def test_broker_status(mqadmin: Mq, node: Cluster) -> None:
    lines = mqadmin("brokerStatus", "-b", node.broker).out.splitlines()
    keys = [line.split(":", 1)[0].rstrip() for line in lines]
    assert keys == sorted(keys) and "brokerVersionDesc" in keys
    assert f"{'brokerActive':<32}: true" in lines
    by_cluster = mqadmin("brokerStatus", "-c", "DefaultCluster").out.splitlines()
    assert f"{node.broker:<24} {'brokerActive':<32}: true" in by_cluster


def test_update_topic(mqadmin: Mq, node: Cluster) -> None:
    created = mqadmin("updateTopic", "-t", "Golden", "-c", "DefaultCluster", "-r", "2", "-w", "2")
    assert created.out == (
        f"create topic to {node.broker} success.\n"
        "TopicConfig [topicName=Golden, readQueueNums=2, writeQueueNums=2, perm=RW-, "
        "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false, attributes={}]\n"
    )
    ordered = mqadmin("updateTopic", "-t", "Golden", "-b", node.broker, "-o", "true")
    assert ordered.out.splitlines() == [
        "set broker orderConf. isOrder=true, orderConf=[broker-a:8]",
        f"create topic to {node.broker} success.",
        "TopicConfig [topicName=Golden, readQueueNums=8, writeQueueNums=8, perm=RW-, "
        "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=true, attributes={}]",
    ]
    assert mqadmin("updateTopic", "-t", "Golden").code == 2  # neither -b nor -c
    typed = mqadmin("updateTopic", "-t", "GoldenFifo", "-c", "DefaultCluster", "-a", "+message.type=FIFO")
    assert typed.out.splitlines()[-1].endswith("order=false, attributes={message.type=FIFO}]")


def test_rmq_camel_case_alias(rmq_alias: Callable[..., tuple[int, str]], node: Cluster) -> None:
    code, out = rmq_alias("topicRoute", "-n", node.namesrv, "-t", TOPIC, "-l")
    assert code == 0 and out.startswith("#ClusterName")


def test_java_spellings() -> None:
    assert [java_double(x) for x in (0, 12.5, 3, 1e7, 0.0001)] == ["0.0", "12.5", "3.0", "1.0E7", "1.0E-4"]
    assert version_desc(401) == "V4_9_4" and version_desc(413) == "V5_0_0" and version_desc(10**6) == "V5_9_9"
    # java.util.HashMap, 16 buckets: by bucket ('a' 97 -> 1, 'b' -> 2, 'c' -> 3), then insertion order
    assert hashmap_order(["c", "a", "b"]) == ["a", "b", "c"]
    assert hashmap_order(["q", "a"]) == ["q", "a"]  # 'q' (113) shares bucket 1 with 'a'
