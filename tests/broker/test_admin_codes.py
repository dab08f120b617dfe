"""The topic/group configuration codes (351, 352, 18, 225) and the store maintenance codes (321, 306,
329, 316) against a live broker over TCP, with the bodies a Java mqadmin sends and reads."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol.bodies import CreateTopicListRequestBody, TopicConfig, load_json
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import (
    QueryConsumeQueueResponseBody,
    SubscriptionGroupConfig,
    SubscriptionGroupList,
)
from broker.protocol.headers import (
    GetSubscriptionGroupConfigRequestHeader,
    GetTopicConfigRequestHeader,
    QueryConsumeQueueRequestHeader,
)
from broker.protocol.javahash import tags_code
from tests.broker.conftest import async_test, call, heartbeat_body, running_broker, send
from tests.broker.test_admin import create

DAY = 86400


def topic_list_body(*configs: TopicConfig) -> bytes:
    return CreateTopicListRequestBody(topicConfigList=list(configs)).to_json()


def group_list_body(*names: str) -> bytes:
    return SubscriptionGroupList(
        groupConfigList=[SubscriptionGroupConfig(groupName=n) for n in names]
    ).to_json()


def cq_query(
    topic: str, queue: int, index: int, count: int, group: str | None = None
) -> QueryConsumeQueueRequestHeader:
    return QueryConsumeQueueRequestHeader(
        topic=topic, queueId=queue, index=index, count=count, consumerGroup=group
    )


# -- GET_TOPIC_CONFIG / GET_SUBSCRIPTIONGROUP_CONFIG ---------------------------------------------------
@async_test
async def test_get_topic_config_answers_the_topic_config_fields(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("Cfg", queues=3, perm=4))
        r = await call(client, broker, RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic="Cfg"))
        assert r.code == ResponseCode.SUCCESS
        doc = load_json(r.body or b"")
        assert doc["topicName"] == "Cfg" and doc["readQueueNums"] == 3 and doc["perm"] == 4
        assert doc["topicFilterType"] == "SINGLE_TAG" and doc["order"] is False
        assert "mappingDetail" not in doc  # no static topics: the mapping is left out, as fastjson does

        r = await call(
            client, broker, RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic="Nope")
        )
        assert r.code == ResponseCode.TOPIC_NOT_EXIST and "Nope" in (r.remark or "")
        r = await call(client, broker, RequestCode.GET_TOPIC_CONFIG)  # no header at all
        assert r.code == ResponseCode.INVALID_PARAMETER and "topic" in (r.remark or "")


@async_test
async def test_get_subscription_group_config_never_creates_the_group(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        config = SubscriptionGroupConfig(groupName="cg-1", retryMaxTimes=3, consumeBroadcastEnable=False)
        body = config.to_json()
        assert (
            await call(client, broker, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        ).code == 0
        header = GetSubscriptionGroupConfigRequestHeader(group="cg-1")
        r = await call(client, broker, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, header)
        assert r.code == ResponseCode.SUCCESS
        assert SubscriptionGroupConfig.from_json(r.body or b"") == config

        header = GetSubscriptionGroupConfigRequestHeader(group="ghost")
        r = await call(client, broker, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, header)
        assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST and "ghost" in (r.remark or "")
        assert broker.groups.get("ghost") is None


# -- UPDATE_AND_CREATE_TOPIC_LIST / UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST -----------------------------
@async_test
async def test_topic_list_creates_all_or_none(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        good = [
            TopicConfig("L1", 2, 2, 6),
            TopicConfig("L2", 4, 4, 4, attributes={"+message.type": "FIFO"}),
        ]
        r = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=topic_list_body(*good))
        assert r.code == ResponseCode.SUCCESS, r.remark
        l2 = broker.topics.get("L2")
        assert broker.topics.get("L1") is not None and l2 is not None
        assert l2.perm == 4 and l2.attributes == {"message.type": "FIFO"}

        refused = [
            (TopicConfig("L3", 1, 1, 6), TopicConfig("bad name", 1, 1, 6)),  # illegal characters
            (TopicConfig("L3", 1, 1, 6), TopicConfig("TBW102", 1, 1, 6)),  # a system topic
            (TopicConfig("L3", 1, 1, 6), TopicConfig("L4", 0, 1, 6)),  # no queues
            (TopicConfig("L3", 1, 1, 6), TopicConfig("L4", 1, 1, 9)),  # perm beyond RWX
        ]
        for configs in refused:
            body = topic_list_body(*configs)
            r = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=body)
            assert r.code == ResponseCode.INVALID_PARAMETER and r.remark, configs
        unsigned = topic_list_body(TopicConfig("L3", 1, 1, 6, attributes={"message.type": "FIFO"}))
        r = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=unsigned)
        assert r.code == ResponseCode.SYSTEM_ERROR and "message.type" in (r.remark or "")
        for malformed in (b"", b"{not json", b'{"topicConfigList":{"a":1}}', b'{"topicConfigList":[7]}'):
            r = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=malformed)
            assert r.code == ResponseCode.INVALID_PARAMETER and r.remark, malformed
        assert broker.topics.get("L3") is None and broker.topics.get("L4") is None


@async_test
async def test_group_list_creates_all_or_none(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        body = group_list_body("g-a", "g-b")
        assert (
            await call(client, broker, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, body=body)
        ).code == 0
        assert broker.groups.get("g-a") is not None and broker.groups.get("g-b") is not None

        r = await call(
            client,
            broker,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
            body=group_list_body("g-c", "x" * 121),
        )
        assert r.code == ResponseCode.INVALID_PARAMETER and "longer" in (r.remark or "")
        r = await call(client, broker, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, body=b"[1,2")
        assert r.code == ResponseCode.INVALID_PARAMETER
        assert broker.groups.get("g-c") is None


_NAMES = st.one_of(
    st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
    st.sampled_from(["", " ", "bad name", "a/b", "TBW102", "x" * 130]),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(names=st.lists(_NAMES, min_size=1, max_size=5), queues=st.integers(-1, 3))
def test_any_topic_list_is_applied_whole_or_not_at_all(tmp_path: Path, names: list[str], queues: int) -> None:
    @async_test
    async def scenario() -> None:
        async with running_broker(tmp_path / f"s{time.monotonic_ns()}") as (broker, client):
            before = dict(broker.topics.table)
            body = topic_list_body(*(TopicConfig(n, queues, queues, 6) for n in names))
            r = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=body)
            if r.code == ResponseCode.SUCCESS:
                assert all(broker.topics.get(n) is not None for n in names)
            else:
                assert r.code == ResponseCode.INVALID_PARAMETER and r.remark
                assert broker.topics.table == before

    scenario()


# -- QUERY_CONSUME_QUEUE ----------------------------------------------------------------------------
@async_test
async def test_query_consume_queue(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("Cq", queues=1))
        for i in range(5):
            await send(client, broker, "Cq", f"m{i}".encode(), queue_id=0, tags=f"T{i}")

        r = await call(client, broker, RequestCode.QUERY_CONSUME_QUEUE, cq_query("Cq", 0, 1, 3))
        assert r.code == ResponseCode.SUCCESS
        body = QueryConsumeQueueResponseBody.from_json(r.body or b"")
        assert (body.maxQueueIndex, body.minQueueIndex) == (5, 0)
        assert body.subscriptionData is None and body.filterData is None
        units = body.queueData or []
        assert [u.tagsCode for u in units] == [tags_code(f"T{i}") for i in (1, 2, 3)]
        assert units[0].physicOffset < units[1].physicOffset < units[2].physicOffset
        assert all(u.physicSize > 0 and u.msg is None and not u.eval for u in units)
        raw = load_json(r.body or b"")
        assert set(raw["queueData"][0]) >= {"physicOffset", "physicSize", "tagsCode", "eval"}

        r = await call(client, broker, RequestCode.QUERY_CONSUME_QUEUE, cq_query("Cq", 0, 3, 100))
        assert len(QueryConsumeQueueResponseBody.from_json(r.body or b"").queueData or []) == 2

        r = await call(client, broker, RequestCode.QUERY_CONSUME_QUEUE, cq_query("Cq", 0, 9, 1))
        assert r.code == ResponseCode.SUCCESS and not r.body and r.remark == "Index 9 of 0@Cq is not exist!"
        r = await call(client, broker, RequestCode.QUERY_CONSUME_QUEUE, cq_query("Cq", 7, 0, 1))
        assert r.code == ResponseCode.SYSTEM_ERROR and r.remark == "7@Cq is not exist!"
        r = await call(
            client, broker, RequestCode.QUERY_CONSUME_QUEUE, topic="Cq", queueId="x", index="0", count="1"
        )
        assert r.code == ResponseCode.INVALID_PARAMETER and "queueId" in (r.remark or "")

        r = await call(client, broker, RequestCode.QUERY_CONSUME_QUEUE, cq_query("Cq", 0, 0, 1, group="cg"))
        body = QueryConsumeQueueResponseBody.from_json(r.body or b"")
        assert body.subscriptionData is None and body.filterData == "cg@Cq is not online!"
        hb = heartbeat_body("10.0.0.1@1", "cg", {"Cq": "T1 || T2"})
        assert (await call(client, broker, RequestCode.HEART_BEAT, body=hb)).code == 0
        r = await call(client, broker, RequestCode.QUERY_CONSUME_QUEUE, cq_query("Cq", 0, 0, 1, group="cg"))
        body = QueryConsumeQueueResponseBody.from_json(r.body or b"")
        assert body.subscriptionData is not None and body.subscriptionData.subString == "T1 || T2"
        assert body.filterData == "null"


# -- clean-ups --------------------------------------------------------------------------------------
TINY_COMMITLOG = 16 * 1024  # CommitLog files of about a dozen 1 KiB messages each


@async_test
async def test_delete_expired_commitlog_then_clean_expired_consume_queues(tmp_path: Path) -> None:
    async with running_broker(tmp_path, TINY_COMMITLOG) as (broker, client):
        for topic in ("Old", "Live"):
            await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create(topic, queues=1))
        for _ in range(4):
            await send(client, broker, "Old", b"o" * 1024, queue_id=0)
        for _ in range(40):  # spans further files: Old's messages end in a file that is not the last
            await send(client, broker, "Live", b"l" * 1024, queue_id=0)
        files = broker.store.commitlog.files.files
        assert len(files) >= 3
        week_ago = time.time() - 7 * DAY  # older than fileReservedTime (72 h)
        for mf in files:
            os.utime(mf.path, (week_ago, week_ago))

        # nothing expired for the ConsumeQueues yet: every message is still in the CommitLog
        assert (
            await call(client, broker, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
        ).code == ResponseCode.SUCCESS
        assert broker.store.consume_queue("Old", 0) is not None

        r = await call(client, broker, RequestCode.DELETE_EXPIRED_COMMITLOG)
        assert r.code == ResponseCode.SUCCESS and not r.body
        assert len(broker.store.commitlog.files.files) == 1  # every file but the one being written
        assert broker.store.commitlog.min_offset > 0

        r = await call(client, broker, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
        assert r.code == ResponseCode.SUCCESS and not r.body
        assert broker.store.consume_queue("Old", 0) is None
        assert not (tmp_path / "consumequeue" / "Old").exists()
        live = broker.store.consume_queue("Live", 0)
        assert live is not None and live.max_offset == 40
        assert broker.topics.get("Old") is not None  # only the store's queues go, not the config


@async_test
async def test_clean_unused_topic_drops_queues_without_a_config(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        for topic in ("Kept", "Dropped"):
            await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create(topic, queues=1))
            await send(client, broker, topic, queue_id=0)
        broker.topics.delete("Dropped")  # as after a topic deleted while the store was elsewhere
        assert broker.store.consume_queue("Dropped", 0) is not None

        r = await call(client, broker, RequestCode.CLEAN_UNUSED_TOPIC)
        assert r.code == ResponseCode.SUCCESS and not r.body
        assert broker.store.consume_queue("Dropped", 0) is None
        assert broker.store.consume_queue("Kept", 0) is not None
