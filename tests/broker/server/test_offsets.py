"""Consumer offsets and queue positions, persisted across a restart."""

from __future__ import annotations

import time
from pathlib import Path

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import (
    GetMaxOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.broker.server.conftest import async_test, call, pull, running_broker, send


def query(topic: str, queue_id: int, set_zero: bool | None = None) -> QueryConsumerOffsetRequestHeader:
    return QueryConsumerOffsetRequestHeader(
        consumerGroup="CG", topic=topic, queueId=queue_id, setZeroIfNotFound=set_zero
    )


def update(topic: str, queue_id: int, offset: int, group: str = "CG") -> UpdateConsumerOffsetRequestHeader:
    return UpdateConsumerOffsetRequestHeader(
        consumerGroup=group, topic=topic, queueId=queue_id, commitOffset=offset
    )


@async_test
async def test_offsets_survive_a_restart(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        for _ in range(3):
            await send(client, broker, "Off", queue_id=0)
        await pull(client, broker, "Off", 0, 0)  # creates the group
        assert (await call(client, broker, RequestCode.UPDATE_CONSUMER_OFFSET, update("Off", 0, 2))).code == 0
        await pull(client, broker, "Off", 1, 0, sysFlag=0x4 | 0x1, commitOffset=0)  # piggyback commit
        got = await call(client, broker, RequestCode.QUERY_CONSUMER_OFFSET, query("Off", 0))
        assert got.ext_fields["offset"] == "2"
    text = (tmp_path / "config" / "consumerOffset.json").read_text()
    assert '"Off@CG":{0:2,1:0' in text.replace("\n", "").replace("\t", "")
    async with running_broker(tmp_path) as (broker, client):
        got = await call(client, broker, RequestCode.QUERY_CONSUMER_OFFSET, query("Off", 0))
        assert got.code == ResponseCode.SUCCESS and got.ext_fields["offset"] == "2"
        assert (await pull(client, broker, "Off", 0, 2)).code == ResponseCode.SUCCESS


@async_test
async def test_query_offset_not_found_rules(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await send(client, broker, "QN", queue_id=0)
        fresh = await call(client, broker, RequestCode.QUERY_CONSUMER_OFFSET, query("QN", 0))
        assert fresh.code == ResponseCode.SUCCESS and fresh.ext_fields["offset"] == "0"
        strict = await call(client, broker, RequestCode.QUERY_CONSUMER_OFFSET, query("QN", 0, set_zero=False))
        assert strict.code == ResponseCode.QUERY_NOT_FOUND


@async_test
async def test_update_offset_checks_group_and_topic(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await send(client, broker, "UO", queue_id=0)
        no_group = await call(client, broker, RequestCode.UPDATE_CONSUMER_OFFSET, update("UO", 0, 1, "Ghost"))
        assert no_group.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        no_topic = await call(
            client, broker, RequestCode.UPDATE_CONSUMER_OFFSET, update("Nope", 0, 1, "TOOLS_CONSUMER")
        )
        assert no_topic.code == ResponseCode.TOPIC_NOT_EXIST
        missing = await call(
            client, broker, RequestCode.UPDATE_CONSUMER_OFFSET, None, consumerGroup="CG", topic="UO"
        )
        assert missing.code == ResponseCode.INVALID_PARAMETER and "queueId" in (missing.remark or "")


@async_test
async def test_queue_positions_and_time_search(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        before = int(time.time() * 1000) - 1
        for _ in range(4):
            await send(client, broker, "Pos", queue_id=1)
        max_off = await call(
            client, broker, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic="Pos", queueId=1)
        )
        min_off = await call(
            client, broker, RequestCode.GET_MIN_OFFSET, QueueRequestHeader(topic="Pos", queueId=1)
        )
        assert (max_off.ext_fields["offset"], min_off.ext_fields["offset"]) == ("4", "0")
        earliest = await call(
            client, broker, RequestCode.GET_EARLIEST_MSG_STORETIME, QueueRequestHeader(topic="Pos", queueId=1)
        )
        assert int(earliest.ext_fields["timestamp"]) >= before
        search = SearchOffsetRequestHeader(topic="Pos", queueId=1, timestamp=before)
        assert (await call(client, broker, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, search)).ext_fields[
            "offset"
        ] == "0"
        search.timestamp = int(time.time() * 1000) + 60_000
        assert (await call(client, broker, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, search)).ext_fields[
            "offset"
        ] == "4"
