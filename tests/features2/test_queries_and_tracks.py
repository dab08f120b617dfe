"""QUERY_MESSAGE by key and unique key with 10 000+ keys indexed, and mqadmin's message tracks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.client.admin_api import AdminApi, RemoteError
from broker.client.message_track import TrackType, message_tracks
from broker.protocol.bodies import ConsumeType, MessageModel
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData, SubscriptionData
from broker.protocol.headers import QueryMessageRequestHeader, SendMessageRequestHeaderV2
from broker.protocol.message import BatchItem, encode_batch
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import make_request
from tests.features2.conftest import Cluster, async_test, records, running, send

TOPIC = "Indexed"
MESSAGES = 6000  # four index entries each (three keys and the UNIQ_KEY): 24 000 keys, six index files
FOREVER = 2**63 - 1


async def fill(cluster: Cluster) -> None:
    for start in range(0, MESSAGES, 200):
        items = [
            BatchItem(0, f"m{i}".encode(), encode_properties({"KEYS": f"k{i} g{i % 150} h{i % 50}"}))
            for i in range(start, start + 200)
        ]
        header = SendMessageRequestHeaderV2(
            a="PG", b=TOPIC, c="TBW102", d=4, e=start // 200 % 4, f=0, g=1, h=0, m=True
        )
        response = await cluster.call(RequestCode.SEND_BATCH_MESSAGE, header, encode_batch(items))
        assert response.code == ResponseCode.SUCCESS, response.remark


async def query(
    cluster: Cluster, key: str, max_num: int = 64, *, unique: bool = False, topic: str = TOPIC
) -> tuple[int, list[bytes]]:
    header = QueryMessageRequestHeader(
        topic=topic, key=key, maxNum=max_num, beginTimestamp=0, endTimestamp=FOREVER
    )
    response = await cluster.call(
        RequestCode.QUERY_MESSAGE, header, _UNIQUE_KEY_QUERY="true" if unique else "false"
    )
    return response.code, sorted(m.body for m in records(response))


@async_test(timeout=120)
async def test_key_and_unique_key_queries_return_exactly_the_matching_messages(tmp_path: Path) -> None:
    async with running(tmp_path) as cluster:
        cluster.broker.topics.ensure(TOPIC, 4)
        await fill(cluster)
        await send(cluster, "OtherTopic", b"other", props={"KEYS": "k1234"})
        assert cluster.broker.store.index is not None and len(cluster.broker.store.index.files()) >= 6

        assert await query(cluster, "k1234") == (ResponseCode.SUCCESS, [b"m1234"])
        assert await query(cluster, "k0") == (ResponseCode.SUCCESS, [b"m0"])  # in the oldest index file
        code, found = await query(cluster, "g7")
        assert code == ResponseCode.SUCCESS and found == sorted(
            f"m{i}".encode() for i in range(7, MESSAGES, 150)
        )
        code, found = await query(cluster, "h3", max_num=500)  # 120 matches, capped at maxMsgsNumBatch
        assert len(found) == 64 and all(int(b[1:]) % 50 == 3 for b in found)
        assert len((await query(cluster, "h3", max_num=10))[1]) == 10
        assert await query(cluster, "nope") == (ResponseCode.QUERY_NOT_FOUND, [])
        assert (await query(cluster, "k1", max_num=0))[0] == ResponseCode.QUERY_NOT_FOUND

        admin = AdminApi(cluster.client)
        [msg] = await admin.query_message(cluster.addr, TOPIC, "k4321")
        assert msg.uniq_key is not None
        # a unique-key query ignores the requested maxNum (32 instead) and matches UNIQ_KEY only
        assert await query(cluster, msg.uniq_key, max_num=0, unique=True) == (
            ResponseCode.SUCCESS,
            [b"m4321"],
        )
        assert (await query(cluster, "k4321", unique=True))[0] == ResponseCode.QUERY_NOT_FOUND
        assert [
            m.body for m in await admin.query_message(cluster.addr, TOPIC, msg.uniq_key, unique=True)
        ] == [b"m4321"]


def consumer(group: str, consume_type: ConsumeType, model: MessageModel, tags: list[str]) -> ConsumerData:
    sub = SubscriptionData(topic="Tracked", subString=" || ".join(tags) or "*", tagsSet=tags)
    return ConsumerData(
        groupName=group, consumeType=consume_type, messageModel=model, subscriptionDataSet=[sub]
    )


@async_test()
async def test_message_tracks_follow_mqadmin(tmp_path: Path) -> None:
    async with running(tmp_path) as cluster:
        broker = cluster.broker
        broker.topics.ensure("Tracked", 1)
        for n in range(3):
            await send(cluster, "Tracked", f"t{n}".encode(), props={"TAGS": "TagA"})
        push, clustering = ConsumeType.CONSUME_PASSIVELY, MessageModel.CLUSTERING
        data = HeartbeatData(
            clientID="client-1",
            consumerDataSet=[
                consumer("Consumed", push, clustering, []),
                consumer("Filtered", push, clustering, ["TagB"]),
                consumer("Lagging", push, clustering, ["TagA"]),
                consumer("Broadcast", push, MessageModel.BROADCASTING, []),
                consumer("Puller", ConsumeType.CONSUME_ACTIVELY, clustering, []),
            ],
        )
        response = await cluster.client.invoke(
            cluster.addr, make_request(RequestCode.HEART_BEAT, body=data.to_json())
        )
        assert response.code == ResponseCode.SUCCESS
        for group, offset in (("Consumed", 2), ("Filtered", 2), ("Lagging", 1), ("Gone", 3)):
            broker.offsets.commit(group, "Tracked", 0, offset)
        admin = AdminApi(cluster.client)
        while True:  # the NameServer learns the topic from the broker's next registration
            try:
                await admin.topic_route([cluster.namesrv], "Tracked")
                break
            except RemoteError:
                await asyncio.sleep(0.05)
        msg = await admin.view_message(cluster.addr, commitlog_offset(cluster, "Tracked", 1))
        tracks = {t.consumer_group: t for t in await message_tracks(admin, [cluster.namesrv], msg)}
        assert msg.queue_offset == 1
        assert {g: t.track_type for g, t in tracks.items()} == {
            "Broadcast": TrackType.CONSUME_BROADCASTING,
            "Consumed": TrackType.CONSUMED,
            "Filtered": TrackType.CONSUMED_BUT_FILTERED,
            "Gone": TrackType.NOT_ONLINE,
            "Lagging": TrackType.NOT_CONSUME_YET,
            "Puller": TrackType.PULL,
        }
        assert str(tracks["Gone"]) == (
            "MessageTrack [consumerGroup=Gone, trackType=NOT_ONLINE, "
            "exceptionDesc=CODE:206 DESC:the consumer group[Gone] not online]"
        )
        assert tracks["Consumed"].exception_desc is None


def commitlog_offset(cluster: Cluster, topic: str, queue_offset: int) -> int:
    cq = cluster.broker.store.consume_queue(topic, 0)
    assert cq is not None
    unit = cq.unit_at(queue_offset)
    assert unit is not None
    return unit.commitlog_offset
