"""Admin request codes against a live broker."""

from __future__ import annotations

import time
from pathlib import Path

from broker.protocol.bodies import (
    GroupList,
    KVTable,
    MessageQueue,
    TopicConfigAndMappingSerializeWrapper,
    load_json,
)
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import (
    ConsumeStats,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    TopicStatsTable,
    TopicStatsTables,
)
from broker.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    ResetOffsetRequestHeader,
    TopicOnlyRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from broker.protocol.message import decode_records
from broker.protocol.msgid import decode_offset_msg_id
from tests.broker.conftest import async_test, call, pull, records, running_broker, send


def create(topic: str, queues: int = 2, perm: int = 6) -> CreateTopicRequestHeader:
    return CreateTopicRequestHeader(
        topic=topic, defaultTopic="TBW102", readQueueNums=queues, writeQueueNums=queues, perm=perm,
        topicFilterType="SINGLE_TAG",
    )  # fmt: skip


@async_test
async def test_create_update_and_delete_topic(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        version = broker.topics.data_version.counter
        assert (await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("Admin"))).code == 0
        assert broker.topics.data_version.counter == version + 1
        assert (await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("Admin"))).code == 0
        assert broker.topics.data_version.counter == version + 1  # identical: no change
        for bad in (create("TBW102"), create("bad name"), create("X", queues=0), create("X", perm=9)):
            response = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, bad)
            assert response.code == ResponseCode.INVALID_PARAMETER, bad
        listed = await call(client, broker, RequestCode.GET_ALL_TOPIC_CONFIG)
        table = TopicConfigAndMappingSerializeWrapper.from_json(listed.body or b"").topicConfigTable
        assert table["Admin"].readQueueNums == 2 and "SCHEDULE_TOPIC_XXXX" in table
        await send(client, broker, "Admin", queue_id=0)
        deleted = await call(
            client, broker, RequestCode.DELETE_TOPIC_IN_BROKER, TopicOnlyRequestHeader(topic="Admin")
        )
        assert deleted.code == ResponseCode.SUCCESS and broker.topics.get("Admin") is None
        system = await call(
            client, broker, RequestCode.DELETE_TOPIC_IN_BROKER, TopicOnlyRequestHeader(topic="TBW102")
        )
        assert system.code == ResponseCode.INVALID_PARAMETER


@async_test
async def test_subscription_groups(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        config = SubscriptionGroupConfig(groupName="Admins", retryMaxTimes=3)
        response = await call(
            client, broker, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, config.to_json()
        )
        assert response.code == ResponseCode.SUCCESS
        listed = await call(client, broker, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = load_json(listed.body or b"")["subscriptionGroupTable"]
        assert table["Admins"]["retryMaxTimes"] == 3 and "TOOLS_CONSUMER" in table
        broker.offsets.commit("Admins", "T", 0, 5)
        header = DeleteSubscriptionGroupRequestHeader(groupName="Admins", cleanOffset=True)
        assert (await call(client, broker, RequestCode.DELETE_SUBSCRIPTIONGROUP, header)).code == 0
        assert broker.groups.get("Admins") is None and broker.offsets.query("Admins", "T", 0) == -1


@async_test
async def test_runtime_info_and_stats(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        for _ in range(3):
            await send(client, broker, "Stat", queue_id=0)
        await pull(client, broker, "Stat", 0, 0)
        info = KVTable.from_json(
            (await call(client, broker, RequestCode.GET_BROKER_RUNTIME_INFO)).body or b""
        ).table
        assert info["brokerVersionDesc"] == "V5_3_3"
        assert info["msgPutTotalTodayNow"] == "3" and info["msgGetTotalTodayNow"] == "3"
        assert len(info["putTps"].split()) == 3
        assert int(info["commitLogMaxOffset"]) > 0 and 0 <= float(info["commitLogDiskRatio"]) <= 1
        assert info["runtime"].startswith("[ 0 days")
        stats = await call(
            client, broker, RequestCode.GET_TOPIC_STATS_INFO, TopicOnlyRequestHeader(topic="Stat")
        )
        table = TopicStatsTable.from_json(stats.body or b"").offsetTable
        q0 = table[MessageQueue("Stat", "broker-t", 0)]
        assert (q0.minOffset, q0.maxOffset) == (0, 3) and q0.lastUpdateTimestamp > 0
        assert len(table) == 4
        missing = await call(
            client, broker, RequestCode.GET_TOPIC_STATS_INFO, TopicOnlyRequestHeader(topic="None")
        )
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
        # many topics in one answer (rmqkit's own code); a topic the broker does not hold is left out
        many = await call(client, broker, RequestCode.GET_TOPICS_STATS_INFO, topicList="Stat;None")
        tables = TopicStatsTables.from_json(many.body or b"").topicStatsTable
        assert list(tables) == ["Stat"] and tables["Stat"].offsetTable == table
        too_many = ";".join(f"T{i}" for i in range(1001))
        refused = await call(client, broker, RequestCode.GET_TOPICS_STATS_INFO, topicList=too_many)
        assert refused.code == ResponseCode.SYSTEM_ERROR and "1000" in (refused.remark or "")
        snap = broker.stats.snapshot()
        assert snap.put.messages == 3 and snap.topics_put[0].key == "Stat"
        assert any(r.name == "SEND_MESSAGE_V2" and r.count == 3 for r in snap.requests)


@async_test
async def test_consume_stats_and_consumed_by_who(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        for _ in range(5):
            await send(client, broker, "CS", queue_id=1)
        await pull(client, broker, "CS", 1, 0, maxMsgNums=3)
        update = UpdateConsumerOffsetRequestHeader(consumerGroup="CG", topic="CS", queueId=1, commitOffset=2)
        await call(client, broker, RequestCode.UPDATE_CONSUMER_OFFSET, update)
        stats = await call(
            client, broker, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(consumerGroup="CG")
        )
        table = ConsumeStats.from_json(stats.body or b"").offsetTable
        q1 = table[MessageQueue("CS", "broker-t", 1)]
        assert (q1.brokerOffset, q1.consumerOffset, q1.pullOffset) == (5, 2, 3) and q1.lastTimestamp > 0
        who = await call(
            client, broker, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, TopicOnlyRequestHeader(topic="CS")
        )
        assert GroupList.from_json(who.body or b"").groupList == ["CG"]


@async_test
async def test_reset_offset_then_pull_answers_offset_moved(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        for _ in range(4):
            await send(client, broker, "RS", queue_id=0)
        await pull(client, broker, "RS", 0, 0)
        broker.offsets.commit("CG", "RS", 0, 4)
        reset = ResetOffsetRequestHeader(group="CG", topic="RS", timestamp=0, isForce=True)
        response = await call(client, broker, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)
        assert response.code == ResponseCode.SUCCESS, response.remark
        body = ResetOffsetBody.from_json(response.body or b"")
        assert body.offsetTable[MessageQueue("RS", "broker-t", 0)] == 0
        update = UpdateConsumerOffsetRequestHeader(consumerGroup="CG", topic="RS", queueId=0, commitOffset=4)
        ignored = await call(client, broker, RequestCode.UPDATE_CONSUMER_OFFSET, update)
        assert ignored.remark == "Offset has been previously reset"
        moved = await pull(client, broker, "RS", 0, 4)
        assert moved.code == ResponseCode.PULL_OFFSET_MOVED and moved.ext_fields["nextBeginOffset"] == "0"
        assert (await pull(client, broker, "RS", 0, 0)).code == ResponseCode.SUCCESS
        ghost = ResetOffsetRequestHeader(group="Ghost", topic="RS", timestamp=0)
        assert (await call(client, broker, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ghost)).code == 26
        bad = ResetOffsetRequestHeader(group="CG", topic="RS", queueId=0, offset=99, timestamp=0)
        assert (await call(client, broker, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, bad)).code == 1


@async_test
async def test_clone_group_offsets(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await send(client, broker, "CL", queue_id=0)
        broker.offsets.commit("Src", "CL", 0, 1)
        header = CloneGroupOffsetRequestHeader(srcGroup="Src", destGroup="Dst")
        assert (await call(client, broker, RequestCode.CLONE_GROUP_OFFSET, header)).code == 0
        query = QueryConsumerOffsetRequestHeader(consumerGroup="Dst", topic="CL", queueId=0)
        assert (await call(client, broker, RequestCode.QUERY_CONSUMER_OFFSET, query)).ext_fields[
            "offset"
        ] == "1"


@async_test
async def test_view_by_id_and_query_by_key(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        sent = await send(client, broker, "Find", b"needle", queue_id=0, keys="order-7 other")
        offset = decode_offset_msg_id(sent.ext_fields["msgId"]).offset
        view = await call(
            client, broker, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset)
        )
        assert records(view)[0].body == b"needle"
        nothing = await call(
            client, broker, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset + 1)
        )
        assert nothing.code == ResponseCode.SYSTEM_ERROR and str(offset + 1) in (nothing.remark or "")
        end = int(time.time() * 1000) + 1000
        by_key = QueryMessageRequestHeader(
            topic="Find", key="order-7", maxNum=64, beginTimestamp=0, endTimestamp=end
        )
        found = await call(client, broker, RequestCode.QUERY_MESSAGE, by_key, _UNIQUE_KEY_QUERY="false")
        assert found.code == ResponseCode.SUCCESS
        assert [r.body for r in decode_records(found.body or b"")] == [b"needle"]
        assert int(found.ext_fields["indexLastUpdatePhyoffset"]) >= 0
        by_uniq = QueryMessageRequestHeader(
            topic="Find", key=sent.ext_fields["transactionId"], maxNum=1, beginTimestamp=0, endTimestamp=end
        )
        unique = await call(client, broker, RequestCode.QUERY_MESSAGE, by_uniq, _UNIQUE_KEY_QUERY="true")
        assert [r.body for r in decode_records(unique.body or b"")] == [b"needle"]
        by_key.key = "absent"
        assert (
            await call(client, broker, RequestCode.QUERY_MESSAGE, by_key)
        ).code == ResponseCode.QUERY_NOT_FOUND


@async_test
async def test_broker_config_get_and_update(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        got = await call(client, broker, RequestCode.GET_BROKER_CONFIG)
        assert "brokerName=broker-t" in (got.body or b"").decode() and "counter" in got.ext_fields["version"]
        ok = await call(
            client, broker, RequestCode.UPDATE_BROKER_CONFIG, None, b"autoCreateTopicEnable=false\n"
        )
        assert ok.code == ResponseCode.SUCCESS and broker.config.auto_create_topic_enable is False
        assert (await send(client, broker, "NoAuto")).code == ResponseCode.TOPIC_NOT_EXIST
        denied = await call(
            client, broker, RequestCode.UPDATE_BROKER_CONFIG, None, b"storePathRootDir=/tmp/x\n"
        )
        assert denied.code == ResponseCode.NO_PERMISSION and "storePathRootDir" in (denied.remark or "")
        bad = await call(client, broker, RequestCode.UPDATE_BROKER_CONFIG, None, b"brokerPermission=9\n")
        assert bad.code == ResponseCode.INVALID_PARAMETER and broker.config.broker_permission == 6
