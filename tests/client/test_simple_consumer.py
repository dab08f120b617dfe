"""The SDK's SimpleConsumer (POP over remoting) against a real NameServer and broker on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.client import (
    BlockingSimpleConsumer,
    ConsumeFrom,
    Message,
    MessageExt,
    MQBrokerError,
    MQClientError,
    Producer,
    SimpleConsumer,
)
from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.protocol import properties as P
from broker.protocol.codes import ResponseCode
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.protocol.message import decode_records, encode_record, pack_host, scan_records
from broker.protocol.pop import PopMessageResponseHeader, add_receipts, start_offsets, tag_strays
from tests.client.conftest import Cluster, async_test, needs_servers, running_cluster

pytestmark = needs_servers


async def _send(cluster: Cluster, topic: str, bodies: list[tuple[bytes, str]]) -> None:
    async with Producer("pg-simple", cluster.namesrv) as producer:
        for body, tags in bodies:
            await producer.send(Message(topic, body, tags=tags))


async def _create_group(cluster: Cluster, config: SubscriptionGroupConfig) -> None:
    admin = AdminApi(RemotingClient())
    try:
        await admin.create_group(cluster.broker_addr, config)
    finally:
        await admin.client.close()


async def _receive_all(consumer: SimpleConsumer, count: int, invisible: float = 30.0) -> list[MessageExt]:
    got: list[MessageExt] = []
    for _ in range(50):
        if len(got) >= count:
            break
        got += await consumer.receive(32, invisible, await_duration=1.0)
    return got


@async_test()
async def test_receive_filters_by_tag_and_an_unacked_message_comes_back(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("PopTopic", 4)
        await _send(cluster, "PopTopic", [(f"{i}".encode(), "a" if i % 2 else "b") for i in range(20)])
        consumer = SimpleConsumer("cg-simple", cluster.namesrv, await_duration=1.0)
        consumer.subscribe("PopTopic", "a")
        async with consumer:
            got = await _receive_all(consumer, 10, invisible=2.0)
            assert sorted(int(m.body) for m in got) == list(range(1, 20, 2))
            assert {m.tags for m in got} == {"a"}
            assert all(m.reconsume_times == 0 for m in got)
            kept = got[0]
            for msg in got[1:]:
                await consumer.ack(msg)
            again = await _receive_all(consumer, 1)
            assert [(m.body, m.reconsume_times) for m in again] == [(kept.body, 1)]
            with pytest.raises(MQBrokerError) as expired:
                await consumer.ack(kept)  # the first delivery's receipt is stale now
            assert expired.value.code == ResponseCode.NO_MESSAGE
            await consumer.ack(again[0])
            assert await consumer.receive(32, 1.0, await_duration=0.5) == []
            # what `rmq group clients` and mqadmin consumerStatus show, relayed by the broker
            admin = AdminApi(RemotingClient())
            try:
                info = await admin.consumer_running_info(
                    cluster.broker_addr, "cg-simple", consumer.client_id, True
                )
            finally:
                await admin.client.close()
            assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_POP"
            assert [s.topic for s in info.subscriptionSet] == ["PopTopic"]
            assert info.mqTable == {}
            status = info.statusTable["PopTopic"]
            assert status.pullTPS > 0 and status.consumeOKTPS > 0
            assert "Thread" in (info.jstack or "")


@async_test()
async def test_change_invisible_duration_renews_the_receipt(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("PopRenew", 1)
        await _send(cluster, "PopRenew", [(b"one", "t"), (b"two", "t")])
        async with SimpleConsumer("cg-renew", cluster.namesrv, await_duration=1.0) as consumer:
            consumer.subscribe("PopRenew")
            first, second = await _receive_all(consumer, 2)
            stale = first.properties[P.POP_CK]
            await consumer.change_invisible_duration(first, 60.0)
            assert first.properties[P.POP_CK] != stale
            await consumer.ack(first)  # with the renewed receipt
            await consumer.change_invisible_duration(second, 0)  # visible again at once
            back = await _receive_all(consumer, 1)
            assert [(m.body, m.reconsume_times) for m in back] == [(b"two", 1)]
            await consumer.ack(back[0])
            assert await consumer.receive(await_duration=0.3) == []


@async_test()
async def test_a_message_never_acked_ends_in_the_dead_letter_queue(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("PopDead", 1)
        await _create_group(cluster, SubscriptionGroupConfig(groupName="cg-dead", retryMaxTimes=1))
        await _send(cluster, "PopDead", [(b"poison", "t")])
        async with SimpleConsumer("cg-dead", cluster.namesrv, await_duration=1.0) as consumer:
            consumer.subscribe("PopDead")
            attempts = [m.reconsume_times for m in await _receive_all(consumer, 1, invisible=0.2)]
            attempts += [m.reconsume_times for m in await _receive_all(consumer, 1, invisible=0.2)]
            assert attempts == [0, 1]  # retryMaxTimes 1: two deliveries in all
            assert await consumer.receive(invisible_duration=0.2, await_duration=1.0) == []
        async with SimpleConsumer("cg-dlq", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET) as dlq:
            dlq.subscribe("%DLQ%cg-dead")
            dead = await _receive_all(dlq, 1)
            assert [m.body for m in dead] == [b"poison"]
            await dlq.ack(dead[0])


@async_test()
async def test_an_orderly_group_gets_a_queue_one_message_after_another(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("PopFifo", 1)
        await _create_group(cluster, SubscriptionGroupConfig(groupName="cg-fifo", consumeMessageOrderly=True))
        await _send(cluster, "PopFifo", [(b"m0", "t"), (b"m1", "t"), (b"m2", "t")])
        async with SimpleConsumer("cg-fifo", cluster.namesrv, await_duration=1.0) as consumer:
            consumer.subscribe("PopFifo")

            async def next_bodies() -> list[tuple[bytes, int]]:
                return [(m.body, m.reconsume_times) for m in await consumer.receive(1, 30.0)]

            (first,) = await consumer.receive(1, 30.0)
            assert first.body == b"m0"
            assert await consumer.receive(1, 30.0, await_duration=0.3) == []  # m0 is in flight
            await consumer.ack(first)
            (second,) = await consumer.receive(1, 30.0)
            assert second.body == b"m1"
            await consumer.change_invisible_duration(second, 0)  # handed back: it comes again first
            assert await next_bodies() == [(b"m1", 1)]
            assert await consumer.receive(1, 30.0, await_duration=0.3) == []
        async with SimpleConsumer("cg-fifo", cluster.namesrv, await_duration=1.0) as other:
            other.subscribe("PopFifo")
            assert await other.receive(1, 30.0, await_duration=0.3) == []  # still m1's turn, in flight


@async_test()
async def test_bad_calls_get_a_clear_error(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("PopBad", 1)
        await _send(cluster, "PopBad", [(b"x", "t")])
        with pytest.raises(MQClientError, match="FIRST_OFFSET or the LAST_OFFSET"):
            SimpleConsumer("cg-bad", cluster.namesrv, consume_from=ConsumeFrom.TIMESTAMP)
        async with SimpleConsumer("cg-bad", cluster.namesrv) as consumer:
            with pytest.raises(MQClientError, match="subscribe to a topic"):
                await consumer.receive()
            consumer.subscribe("PopBad")
            for kwargs, problem in [
                ({"max_messages": 0}, "not within 1..32"),
                ({"max_messages": 33}, "not within 1..32"),
                ({"invisible_duration": 0}, "not within 1 ms..12 h"),
                ({"invisible_duration": 13 * 3600}, "not within 1 ms..12 h"),
            ]:
                with pytest.raises(MQClientError, match=problem):
                    await consumer.receive(**kwargs)
            (msg,) = await _receive_all(consumer, 1)
            msg.properties[P.POP_CK] = "12 garbage"
            with pytest.raises(MQClientError, match="does not have 8 space-separated fields"):
                await consumer.ack(msg)
            del msg.properties[P.POP_CK]
            with pytest.raises(MQClientError, match="has no receipt"):
                await consumer.change_invisible_duration(msg, 1.0)
            consumer.unsubscribe("PopBad")
            consumer.subscribe("NoSuchTopic")
            with pytest.raises(MQClientError, match="no broker serves"):
                await consumer.receive()


@async_test()
async def test_blocking_simple_consumer(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("PopBlock", 2)
        await _send(cluster, "PopBlock", [(b"hi", "t")])

        def consume() -> list[bytes]:
            with BlockingSimpleConsumer("cg-pblock", cluster.namesrv, await_duration=1.0) as consumer:
                consumer.subscribe("PopBlock")
                got: list[MessageExt] = []
                for _ in range(10):
                    got += consumer.receive(8)
                    if got:
                        break
                for msg in got:
                    consumer.change_invisible_duration(msg, 10.0)
                    consumer.ack(msg)
                assert consumer.receive(8, await_duration=0.2) == []
                return [m.body for m in got]

        assert await asyncio.to_thread(consume) == [b"hi"]


def _popped(topic: str, queue_id: int, offset: int, props: bytes = b"") -> bytes:
    host = pack_host("10.0.0.1:10911")
    return encode_record(
        topic=topic.encode(), queue_id=queue_id, flag=0, queue_offset=offset, physical_offset=0, sys_flag=0,
        born_timestamp=1, born_host=host, store_timestamp=2, store_host=host, reconsume_times=0,
        prepared_transaction_offset=0, body=b"x", properties=props,
    )  # fmt: skip


def test_receipts_are_built_from_the_answer_when_the_broker_sends_none() -> None:
    """What an Apache RocketMQ broker answers: no POP_CK in the messages, the offsets in the header.
    The SDK's consumer fills in its messages, ``rmq message pop`` its decoded records."""
    body = _popped("T", 3, 12) + _popped("%RETRY%g", 3, 5) + _popped("T", 1, 7, b"POP_CK\x01kept\x02")
    answer = PopMessageResponseHeader(
        popTime=1000, invisibleTime=30000, reviveQid=2, restNum=0, startOffsetInfo="0 3 10;1 3 4;bad;0 x"
    )
    messages = MessageExt.received(body, scan_records(body), "broker-a")
    records = list(decode_records(body))
    add_receipts(messages, answer, "broker-a")
    add_receipts(records, answer, "broker-a")
    expected = ["10 1000 30000 2 0 broker-a 3 12", "4 1000 30000 2 1 broker-a 3 5", "kept"]
    assert [m.properties[P.POP_CK] for m in messages] == expected
    assert [r.properties[P.POP_CK] for r in records] == expected
    assert start_offsets(None) == {} and start_offsets("0 1 -1") == {"0@1": -1}


def test_a_stray_tag_is_told_apart_from_the_wanted_ones() -> None:
    body = _popped("T", 0, 0, b"TAGS\x01Aa\x02") + _popped("T", 0, 1, b"TAGS\x01BB\x02") + _popped("T", 0, 2)
    records = list(decode_records(body))
    kept, strays = tag_strays(records, {"Aa"})
    assert [r.queue_offset for r in kept] == [0] and [r.queue_offset for r in strays] == [1, 2]
    assert tag_strays(records, set()) == (records, [])  # no tags: "*", everything is wanted
