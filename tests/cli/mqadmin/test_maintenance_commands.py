"""mqadmin's maintenance commands end to end against a real NameServer + broker: updateTopicPerm,
getConsumerConfig, skipAccumulatedMessage, queryCq, cleanExpiredCQ, deleteExpiredCommitLog,
cleanUnusedTopic, updateTopicList and updateSubGroupList, with their printed layouts and bad input.

The session's ``Orders`` topic and ``orders-cg`` group are only read here; what the commands change is
made by the tests themselves, so the golden layouts of the other modules stay as they are."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from broker.protocol.javahash import tags_code
from broker.protocol.msgid import decode_offset_msg_id
from tests.cli.mqadmin.conftest import GROUP, TOPIC, Cluster, Run

Mq = Callable[..., Run]
RULE = "=" * 38


def one_line_error(run: Run) -> None:
    assert run.code != 0 and run.out == ""
    assert run.err.count("\n") == 1 and run.err.strip(), run.err


# -- topics -----------------------------------------------------------------------------------------
def test_update_topic_perm(mqadmin: Mq, node: Cluster) -> None:
    assert mqadmin("updateTopic", "-t", "PermT", "-c", "DefaultCluster", "-a", "+message.type=FIFO").code == 0
    by_broker = mqadmin("updateTopicPerm", "-t", "PermT", "-b", node.broker, "-p", "4")
    assert by_broker.code == 0, by_broker.err
    assert by_broker.out == (
        f"update topic perm from 6 to 4 in {node.broker} success.\n"
        "TopicConfig [topicName=PermT, readQueueNums=8, writeQueueNums=8, perm=R--, "
        "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false, attributes={message.type=FIFO}].\n"
    )  # only the permission changed: the attributes stay
    assert mqadmin("updateTopicPerm", "-t", "PermT", "-b", node.broker, "-p", "4").out == (
        "new perm equals to the old one!\n"
    )
    by_cluster = mqadmin(
        "updateTopicPerm", "--topic", "PermT", "--clusterName", "DefaultCluster", "--perm", "6"
    )
    assert by_cluster.out == f"update topic perm from 4 to 6 in {node.broker} success.\n"
    assert '"perm":6' in mqadmin("topicRoute", "-t", "PermT").out

    one_line_error(mqadmin("updateTopicPerm", "-t", "NoSuchTopic", "-c", "DefaultCluster", "-p", "6"))
    one_line_error(mqadmin("updateTopicPerm", "-t", "PermT", "-c", "DefaultCluster", "-p", "5"))
    one_line_error(mqadmin("updateTopicPerm", "-t", "PermT", "-c", "DefaultCluster", "-p", "rw"))
    one_line_error(mqadmin("updateTopicPerm", "-t", "PermT", "-p", "6"))  # neither -b nor -c
    missing = mqadmin("updateTopicPerm", "-t", "PermT")
    assert missing.code == 2 and missing.err == "Missing required option: p\n"


def test_update_topic_list(mqadmin: Mq, node: Cluster, tmp_path: Path) -> None:
    file = tmp_path / "topics.json"
    # as a Java tool writes it: fastjson's names, enum by name, unknown fields ignored
    file.write_text(
        json.dumps(
            [
                {"topicName": "BatchA", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6},
                {"topicName": "BatchB", "readQueueNums": 1, "writeQueueNums": 1, "perm": 4,
                 "topicFilterType": "MULTI_TAG", "order": False, "topicMessageType": "NORMAL"},
            ]
        )
    )  # fmt: skip
    run = mqadmin("updateTopicList", "-b", node.broker, "-f", file)
    assert run.code == 0, run.err
    assert (
        run.out == f"submit batch of topic config to {node.broker} success, please check the result later.\n"
    )
    run = mqadmin("updateTopicList", "-c", "DefaultCluster", "-f", file)
    assert (
        run.out == f"submit batch of topic config to {node.broker} success, please check the result later.\n"
    )
    assert '"readQueueNums":1' in mqadmin("topicRoute", "-t", "BatchB").out

    bad_name = tmp_path / "bad-name.json"
    bad_name.write_text('[{"topicName":"BatchC"},{"topicName":"bad name"}]')
    one_line_error(mqadmin("updateTopicList", "-b", node.broker, "-f", bad_name))
    one_line_error(mqadmin("topicRoute", "-t", "BatchC"))  # all or nothing
    not_json = tmp_path / "not.json"
    not_json.write_text("[{topicName:")
    one_line_error(mqadmin("updateTopicList", "-b", node.broker, "-f", not_json))
    not_list = tmp_path / "object.json"
    not_list.write_text('{"topicName":"BatchD"}')
    one_line_error(mqadmin("updateTopicList", "-b", node.broker, "-f", not_list))
    one_line_error(mqadmin("updateTopicList", "-b", node.broker, "-f", tmp_path / "absent.json"))
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert mqadmin("updateTopicList", "-b", node.broker, "-f", empty) == Run(0, "", "")
    assert mqadmin("updateTopicList", "-f", file).err.startswith("Missing required option: [-b ")


# -- groups -----------------------------------------------------------------------------------------
def test_get_consumer_config(mqadmin: Mq) -> None:
    run = mqadmin("getConsumerConfig", "-g", GROUP)
    assert run.code == 0, run.err
    assert run.out == (
        "=============================DefaultCluster:broker-a=============================\n"
        f"{'groupName':<40}=  {GROUP}\n"
        f"{'consumeEnable':<40}=  true\n"
        f"{'consumeFromMinEnable':<40}=  true\n"
        f"{'consumeBroadcastEnable':<40}=  true\n"
        f"{'consumeMessageOrderly':<40}=  false\n"
        f"{'retryQueueNums':<40}=  1\n"
        f"{'retryMaxTimes':<40}=  16\n"
        f"{'groupRetryPolicy':<40}=  "
        "GroupRetryPolicy{type=CUSTOMIZED, exponentialRetryPolicy=null, customizedRetryPolicy=null}\n"
        f"{'brokerId':<40}=  0\n"
        f"{'whichBrokerWhenConsumeSlowly':<40}=  1\n"
        f"{'notifyConsumerIdsChangedEnable':<40}=  true\n"
        f"{'groupSysFlag':<40}=  0\n"
        f"{'consumeTimeoutMinute':<40}=  15\n"
        f"{'subscriptionDataSet':<40}=  \n"
        f"{'attributes':<40}=  {{}}\n"
    )
    one_line_error(mqadmin("getConsumerConfig", "-g", "no-such-group"))


def test_update_sub_group_list(mqadmin: Mq, node: Cluster, tmp_path: Path) -> None:
    file = tmp_path / "groups.json"
    file.write_text(
        '[{"groupName":"batch-g1","retryMaxTimes":3},{"groupName":"batch-g2","consumeEnable":false}]'
    )
    run = mqadmin("updateSubGroupList", "-b", node.broker, "-f", file)
    assert run.code == 0, run.err
    assert (
        run.out == f"submit batch of group config to {node.broker} success, please check the result later.\n"
    )
    run = mqadmin("updateSubGroupList", "-c", "DefaultCluster", "-f", file)
    assert run.out == (
        f"submit batch of subscription group config to {node.broker} success, "
        "please check the result later.\n"
    )
    assert f"{'retryMaxTimes':<40}=  3\n" in mqadmin("getConsumerConfig", "-g", "batch-g1").out
    assert f"{'consumeEnable':<40}=  false\n" in mqadmin("getConsumerConfig", "-g", "batch-g2").out

    too_long = tmp_path / "long.json"
    too_long.write_text(json.dumps([{"groupName": "batch-g3"}, {"groupName": "g" * 200}]))
    one_line_error(mqadmin("updateSubGroupList", "-b", node.broker, "-f", too_long))
    one_line_error(mqadmin("getConsumerConfig", "-g", "batch-g3"))
    broken = tmp_path / "broken.json"
    broken.write_text("[1, 2]")
    one_line_error(mqadmin("updateSubGroupList", "-b", node.broker, "-f", broken))
    one_line_error(mqadmin("updateSubGroupList", "-b", node.broker, "-f", tmp_path / "absent.json"))


def test_skip_accumulated_message(mqadmin: Mq) -> None:
    assert mqadmin("updateTopic", "-t", "SkipT", "-c", "DefaultCluster", "-r", "2", "-w", "2").code == 0
    for _ in range(3):
        assert mqadmin("sendMessage", "-t", "SkipT", "-p", "backlog", "-b", "broker-a", "-i", "1").code == 0
    assert mqadmin("updateSubGroup", "-g", "skip-cg", "-c", "DefaultCluster").code == 0
    run = mqadmin("skipAccumulatedMessage", "-g", "skip-cg", "-t", "SkipT")
    assert run.code == 0, run.err
    assert run.out == (
        f"{'#brokerName':<40}  {'#queueId':<40}  {'#offset':<40}\n"
        f"{'broker-a':<40}  {0:<40}  {0:<40}\n"
        f"{'broker-a':<40}  {1:<40}  {3:<40}\n"
    )
    assert "Consume Diff Total: 0" in mqadmin("consumerProgress", "-g", "skip-cg").out
    one_line_error(mqadmin("skipAccumulatedMessage", "-g", "no-such-group", "-t", "SkipT"))
    one_line_error(mqadmin("skipAccumulatedMessage", "-g", "skip-cg", "-t", "NoSuchTopic"))


# -- the store --------------------------------------------------------------------------------------
def test_query_cq(mqadmin: Mq, node: Cluster) -> None:
    run = mqadmin("queryCq", "-t", TOPIC, "-q", "0", "-i", "1", "-c", "2")
    assert run.code == 0, run.err
    # queue 0 holds messages 0, 4 and 8 (tag "even")
    physic = [decode_offset_msg_id(node.sent[i].msgId).offset for i in (4, 8)]
    pattern = re.escape(f"Queue data: \nmax: 3, min: 0\n{RULE}\n") + "".join(
        re.escape(f"idx: {idx}\nConsumeQueueData{{physicOffset={phys}, physicSize=")
        + r"\d+"
        + re.escape(
            f", tagsCode={tags_code('even')}, extendDataJson='null', bitMap='null', eval=false, "
            f"msg='null'}}\n{RULE}\n"
        )
        for idx, phys in zip((1, 2), physic, strict=True)
    )
    assert re.fullmatch(pattern, run.out), run.out

    with_group = mqadmin(
        "queryCq", "-t", TOPIC, "-q", "0", "-i", "0", "-c", "1", "-g", GROUP, "-b", node.broker
    )
    assert with_group.out.startswith('Subscription data: \n{\n\t"classFilterMode":false,\n')
    assert '\t"subString":"*",\n' in with_group.out and f'\t"topic":"{TOPIC}"\n}}\n{RULE}\n' in with_group.out
    assert f"Filter data: \nnull\n{RULE}\nQueue data: \nmax: 3, min: 0\n" in with_group.out
    offline = mqadmin("queryCq", "-t", TOPIC, "-q", "0", "-i", "0", "-c", "1", "-g", "nobody")
    assert offline.out.startswith(f"Filter data: \nnobody@{TOPIC} is not online!\n{RULE}\n")

    beyond = mqadmin("queryCq", "-t", TOPIC, "-q", "0", "-i", "99")
    one_line_error(beyond)
    assert f"Index 99 of 0@{TOPIC} is not exist!" in beyond.err
    one_line_error(mqadmin("queryCq", "-t", TOPIC, "-q", "9", "-i", "0"))
    one_line_error(mqadmin("queryCq", "-t", "NoSuchTopic", "-q", "0", "-i", "0"))
    one_line_error(mqadmin("queryCq", "-t", TOPIC, "-q", "zero", "-i", "0"))


def test_store_clean_ups(mqadmin: Mq, node: Cluster) -> None:
    # nothing is expired or unused in this store: each command runs on the broker and reports success
    for command in ("cleanExpiredCQ", "deleteExpiredCommitLog", "cleanUnusedTopic"):
        assert mqadmin(command, "-b", node.broker) == Run(0, "success", ""), command
        assert mqadmin(command, "-c", "DefaultCluster") == Run(0, "success", ""), command
        assert mqadmin(command) == Run(0, "success", ""), command  # every cluster
        one_line_error(mqadmin(command, "-c", "NoSuchCluster"))
        one_line_error(mqadmin(command, "-b", "127.0.0.1:1"))
    assert "Orders" in mqadmin("topicList").out.splitlines()
    assert mqadmin("queryCq", "-t", TOPIC, "-q", "0", "-i", "0").code == 0


def test_export_metadata(mqadmin: Mq, node: Cluster, tmp_path: Path) -> None:
    run = mqadmin("exportMetadata", "-c", "DefaultCluster", "-f", tmp_path)
    assert run.code == 0, run.err
    assert run.out == f"export {tmp_path / 'metadata.json'} success\n"
    doc = json.loads((tmp_path / "metadata.json").read_text())
    assert doc["topicConfigTable"][TOPIC]["readQueueNums"] == 4
    assert GROUP in doc["subscriptionGroupTable"] and "TBW102" not in doc["topicConfigTable"]
    assert not any(t.startswith("%RETRY%") for t in doc["topicConfigTable"])

    topics_only = mqadmin("exportMetadata", "-b", node.broker, "-t", "-s", "-f", tmp_path)
    assert topics_only.out == f"export {tmp_path / 'topic.json'} success\n"
    topic_doc = json.loads((tmp_path / "topic.json").read_text())
    assert set(topic_doc) == {"topicConfigTable", "exportTime"}
    assert f"%RETRY%{GROUP}" in topic_doc["topicConfigTable"]  # -s: retry and DLQ topics too

    assert mqadmin("exportMetadata", "-f", tmp_path).code == 2  # neither -c nor -b
    one_line_error(mqadmin("exportMetadata", "-c", "NoSuchCluster", "-f", tmp_path))
