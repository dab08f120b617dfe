"""The gRPC service and POP without peer clients: bad requests get v2 codes, POP over remoting,
POP state surviving a restart."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]
import pytest

from broker.client.remoting_client import RemotingClient
from broker.grpc.schema import PB, SERVICE, Code, check_schema
from broker.grpc.service import serve_grpc
from broker.protocol.bodies import TopicConfig
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.protocol.message import decode_records
from broker.protocol.pop import AckMessageRequestHeader, PopMessageRequestHeader, Receipt
from broker.protocol.remoting import make_request
from broker.server.broker import Broker
from broker.server.config import BrokerConfig
from broker.server.pop_service import InFlight, QueueState
from tests.peers.conftest import small_store


def async_test(fn: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 60))

    return run


async def _broker(path: Path) -> Broker:
    config = BrokerConfig(broker_name="b", listen_host="127.0.0.1", listen_port=0, http_port=0, grpc_port=0)
    broker = Broker(config, small_store(path))
    await broker.start()
    await serve_grpc(broker)
    return broker


class Client:
    def __init__(self, port: int) -> None:
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.meta = (("x-mq-client-id", f"test-{uuid.uuid4().hex[:8]}"),)

    async def unary(self, method: str, request: Any, response: Any, *, meta: Any = None) -> Any:
        call = self.channel.unary_unary(
            f"/{SERVICE}/{method}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response.FromString,
        )
        return await call(request, metadata=self.meta if meta is None else meta, timeout=10)

    async def stream(self, method: str, request: Any, response: Any) -> list[Any]:
        call = self.channel.unary_stream(
            f"/{SERVICE}/{method}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response.FromString,
        )
        items: AsyncIterator[Any] = call(request, metadata=self.meta, timeout=10)
        return [item async for item in items]


def _message(topic: str, body: bytes, **sp: Any) -> Any:
    msg = PB.Message(body=body)
    msg.topic.name = topic
    msg.system_properties.message_id = uuid.uuid4().hex.upper()
    for k, v in sp.items():
        setattr(msg.system_properties, k, v)
    return msg


def test_schema_matches_code_enum() -> None:
    check_schema()


@async_test
async def test_bad_requests_get_v2_codes(tmp_path: Path) -> None:
    broker = await _broker(tmp_path)
    client = Client(broker.grpc_port)
    try:
        route = await client.unary(
            "QueryRoute", PB.QueryRouteRequest(topic=PB.Resource(name="bad topic!")), PB.QueryRouteResponse
        )
        assert route.status.code == Code.ILLEGAL_TOPIC and "illegal" in route.status.message
        broker.config.auto_create_topic_enable = False
        route = await client.unary(
            "QueryRoute", PB.QueryRouteRequest(topic=PB.Resource(name="Nope")), PB.QueryRouteResponse
        )
        assert route.status.code == Code.TOPIC_NOT_FOUND
        broker.topics.put(TopicConfig(topicName="T", readQueueNums=2, writeQueueNums=2))
        route = await client.unary(
            "QueryRoute", PB.QueryRouteRequest(topic=PB.Resource(name="T")), PB.QueryRouteResponse
        )
        assert route.status.code == Code.OK and [q.id for q in route.message_queues] == [0, 1]
        assert route.message_queues[0].broker.id == 0 and route.message_queues[0].permission == 4
        assert list(route.message_queues[0].accept_message_types) == [1, 2, 3, 4]
        sent = await client.unary(
            "SendMessage",
            PB.SendMessageRequest(messages=[_message("T", b"x")]),
            PB.SendMessageResponse,
            meta=(),
        )
        assert sent.status.code == Code.CLIENT_ID_REQUIRED
        bad_tag = _message("T", b"x", tag="a|b")
        sent = await client.unary(
            "SendMessage", PB.SendMessageRequest(messages=[bad_tag]), PB.SendMessageResponse
        )
        assert sent.status.code == Code.ILLEGAL_MESSAGE_TAG
        ack = PB.AckMessageRequest(group=PB.Resource(name="G"), topic=PB.Resource(name="T"))
        ack.entries.add(message_id="x", receipt_handle="garbage")
        acked = await client.unary("AckMessage", ack, PB.AckMessageResponse)
        assert acked.status.code == Code.INVALID_RECEIPT_HANDLE
        receive = PB.ReceiveMessageRequest(group=PB.Resource(name="G"), batch_size=1)
        receive.message_queue.topic.name = "T"
        items = await client.stream("ReceiveMessage", receive, PB.ReceiveMessageResponse)
        assert items[0].status.code == Code.ILLEGAL_INVISIBLE_TIME
        # bytes that are not a request: a gRPC error for that call, and the broker keeps serving
        raw = client.channel.unary_unary(f"/{SERVICE}/SendMessage")
        with pytest.raises(grpc.aio.AioRpcError):
            await raw(b"\xff\xff\xff\xff", timeout=5)
        sent = await client.unary(
            "SendMessage",
            PB.SendMessageRequest(messages=[_message("T", b"ok", tag="A")]),
            PB.SendMessageResponse,
        )
        assert sent.status.code == Code.OK and sent.entries[0].offset == 0
        receive.invisible_duration.seconds = 5
        receive.long_polling_timeout.seconds = 1
        items = await client.stream("ReceiveMessage", receive, PB.ReceiveMessageResponse)
        assert items[0].status.code == Code.OK
        msg = next(i.message for i in items if i.HasField("message"))
        assert msg.body == b"ok" and msg.system_properties.body_digest.checksum.isupper()
        ack = PB.AckMessageRequest(group=PB.Resource(name="G"), topic=PB.Resource(name="T"))
        ack.entries.add(
            message_id=msg.system_properties.message_id, receipt_handle=msg.system_properties.receipt_handle
        )
        assert (await client.unary("AckMessage", ack, PB.AckMessageResponse)).status.code == Code.OK
        # acks are idempotent; entries with different outcomes answer MULTIPLE_RESULTS, each its own
        ack.entries.add(message_id="y", receipt_handle="1 2 3")
        mixed = await client.unary("AckMessage", ack, PB.AckMessageResponse)
        assert mixed.status.code == Code.MULTIPLE_RESULTS
        assert [(e.message_id, e.receipt_handle, e.status.code) for e in mixed.entries] == [
            (msg.system_properties.message_id, msg.system_properties.receipt_handle, Code.OK),
            ("y", "1 2 3", Code.INVALID_RECEIPT_HANDLE),
        ]
        assert "8 space-separated fields" in mixed.entries[1].status.message
        empty = PB.AckMessageRequest(group=PB.Resource(name="G"), topic=PB.Resource(name="T"))
        answer = await client.unary("AckMessage", empty, PB.AckMessageResponse)
        assert answer.status.code == Code.BAD_REQUEST
        items = await client.stream("ReceiveMessage", receive, PB.ReceiveMessageResponse)
        assert items[0].status.code == Code.MESSAGE_NOT_FOUND
    finally:
        await client.channel.close()
        await broker.stop()


@async_test
async def test_a_sent_message_keeps_its_properties_and_drops_what_cannot_be_stored(tmp_path: Path) -> None:
    broker = await _broker(tmp_path)
    client = Client(broker.grpc_port)
    try:
        broker.topics.put(TopicConfig(topicName="P", readQueueNums=1, writeQueueNums=1))
        msg = _message("P", b"props", tag="TagA", trace_context="00-\x01-broken")
        msg.system_properties.keys.extend(["k1", "k2"])
        msg.user_properties.update({"region": "eu", "empty": ""})
        sent = await client.unary(
            "SendMessage", PB.SendMessageRequest(messages=[msg]), PB.SendMessageResponse
        )
        assert sent.status.code == Code.OK
        receive = PB.ReceiveMessageRequest(group=PB.Resource(name="G"), batch_size=1)
        receive.message_queue.topic.name = "P"
        receive.invisible_duration.seconds = 5
        receive.long_polling_timeout.seconds = 1
        items = await client.stream("ReceiveMessage", receive, PB.ReceiveMessageResponse)
        got = next(i.message for i in items if i.HasField("message"))
        assert dict(got.user_properties) == {"region": "eu"}  # an empty value is no property
        sp = got.system_properties
        assert (sp.tag, list(sp.keys), sp.message_id) == (
            "TagA",
            ["k1", "k2"],
            msg.system_properties.message_id,
        )
        assert not sp.HasField("trace_context")  # separators inside it would break the record's text
    finally:
        await client.channel.close()
        await broker.stop()


@async_test
async def test_pop_over_remoting_and_state_survives_restart(tmp_path: Path) -> None:
    broker = await _broker(tmp_path)
    remoting = RemotingClient()
    try:
        broker.topics.put(TopicConfig(topicName="P", readQueueNums=1, writeQueueNums=1))
        client = Client(broker.grpc_port)
        for i in range(3):
            await client.unary(
                "SendMessage",
                PB.SendMessageRequest(messages=[_message("P", f"m{i}".encode())]),
                PB.SendMessageResponse,
            )
        await client.channel.close()
        header = PopMessageRequestHeader(
            consumerGroup="RG",
            topic="P",
            queueId=-1,
            maxMsgNums=2,
            invisibleTime=60_000,
            pollTime=0,
            bornTime=0,
            initMode=0,
        )
        answer = await remoting.invoke(broker.address, make_request(RequestCode.POP_MESSAGE, header), 10)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        records = list(decode_records(answer.body or b""))
        assert [r.body for r in records] == [b"m0", b"m1"]
        ck = records[0].properties["POP_CK"]
        assert Receipt.decode(ck).offset == 0
        ack = AckMessageRequestHeader(consumerGroup="RG", topic="P", queueId=0, extraInfo=ck, offset=0)
        answer = await remoting.invoke(broker.address, make_request(RequestCode.ACK_MESSAGE, ack), 10)
        assert answer.code == ResponseCode.SUCCESS
    finally:
        await remoting.close()
        await broker.stop()
    # m1 is still in flight (invisible for 60 s) and m2 was never popped: both must survive a restart
    broker = await _broker(tmp_path)
    try:
        state = broker.pop.queues[("RG", "P", 0)]
        assert state.next_offset == 2 and list(state.inflight) == [1]
        popped = await broker.pop.pop("RG", "P", [0], 5, 1000)
        assert [p.offset for p in popped] == [2]
        state.inflight[1].visible_at = 0  # its invisible time ran out
        popped = await broker.pop.pop("RG", "P", [0], 5, 1000)
        assert [(p.offset, p.attempts) for p in popped] == [(1, 2)]
        assert broker.offsets.query("RG", "P", 0) == 1  # the lowest unacked offset
    finally:
        await broker.stop()


@async_test
async def test_fifo_queue_blocks_until_ack(tmp_path: Path) -> None:
    broker = await _broker(tmp_path)
    try:
        broker.topics.put(
            TopicConfig(topicName="F", readQueueNums=1, writeQueueNums=1, attributes={"message.type": "FIFO"})
        )
        client = Client(broker.grpc_port)
        for i in range(3):
            msg = _message("F", f"f{i}".encode(), message_group="g")
            await client.unary("SendMessage", PB.SendMessageRequest(messages=[msg]), PB.SendMessageResponse)
        await client.channel.close()
        first = await broker.pop.pop("FG", "F", [0], 1, 60_000)
        assert [p.offset for p in first] == [0]
        assert await broker.pop.pop("FG", "F", [0], 1, 60_000) == []  # blocked until f0 is acked
        broker.pop.ack("FG", "F", 0, 0, first[0].pop_time)
        assert [p.offset for p in await broker.pop.pop("FG", "F", [0], 1, 60_000)] == [1]
        waiter = asyncio.ensure_future(broker.pop.wait("FG", "F", [0], 5))
        await asyncio.sleep(0.05)
        broker.pop.ack("FG", "F", 0, 1, broker.pop.queues[("FG", "F", 0)].inflight[1].pop_time)
        await asyncio.wait_for(waiter, 2)  # an ack wakes a waiting receive at once
    finally:
        await broker.stop()


@async_test
async def test_expired_messages_come_back_oldest_first_then_go_to_the_dlq(tmp_path: Path) -> None:
    broker = await _broker(tmp_path)
    try:
        broker.topics.put(TopicConfig(topicName="R", readQueueNums=1, writeQueueNums=1))
        broker.groups.put(SubscriptionGroupConfig(groupName="RG", retryMaxTimes=1))  # 2 deliveries
        client = Client(broker.grpc_port)
        for i in range(5):
            msg = _message("R", f"r{i}".encode())
            await client.unary("SendMessage", PB.SendMessageRequest(messages=[msg]), PB.SendMessageResponse)
        await client.channel.close()
        first = await broker.pop.pop("RG", "R", [0], 5, 60_000)
        assert [p.offset for p in first] == [0, 1, 2, 3, 4]
        broker.pop.ack("RG", "R", 0, 1, first[1].pop_time)
        for entry in broker.pop.queues[("RG", "R", 0)].inflight.values():
            entry.visible_at = 0  # their invisible time ran out
        again = await broker.pop.pop("RG", "R", [0], 2, 60_000)
        assert [(p.offset, p.attempts) for p in again] == [(0, 2), (2, 2)]
        rest = await broker.pop.pop("RG", "R", [0], 5, 60_000)
        assert [(p.offset, p.attempts) for p in rest] == [(3, 2), (4, 2)]
        assert rest[0].record != first[3].record  # RECONSUMETIMES now says 1
        for entry in broker.pop.queues[("RG", "R", 0)].inflight.values():
            entry.visible_at = 0
        assert await broker.pop.pop("RG", "R", [0], 5, 60_000) == []  # delivered twice: dead letters
        assert broker.store.max_offset("%DLQ%RG", 0) == 4
        assert broker.pop.queues[("RG", "R", 0)].inflight == {}
        assert broker.offsets.query("RG", "R", 0) == 5
    finally:
        await broker.stop()


@pytest.mark.servers
@async_test
async def test_grpc_pulls_feed_the_rebalance_history(tmp_path: Path) -> None:
    broker = await _broker(tmp_path)
    first, second = Client(broker.grpc_port), Client(broker.grpc_port)
    try:
        broker.topics.put(TopicConfig(topicName="T", readQueueNums=2, writeQueueNums=2))
        broker.groups.put(SubscriptionGroupConfig(groupName="G"))
        pull = PB.PullMessageRequest(group=PB.Resource(name="G"), offset=0, batch_size=1)
        pull.message_queue.topic.name = "T"
        for client in (first, second):
            await client.stream("PullMessage", pull, PB.PullMessageResponse)
        body = broker.rebalances.history("G", 0, set())
        ids = [dict(c.meta)["x-mq-client-id"] for c in (first, second)]
        assert body is not None and [(m.queue_id, m.before, m.after) for m in body.moves] == [(0, *ids)]
    finally:
        await first.channel.close()
        await second.channel.close()
        await broker.stop()


def test_low_watermark_is_the_lowest_unacked_offset_in_any_insertion_order() -> None:
    state = QueueState(10)
    for offset in (3, 5, 7):
        state.add(InFlight(offset, 0, 0, 1))
    del state.inflight[3]  # acked
    assert state.low_watermark() == 5
    state.add(InFlight(1, 0, 0, 1))  # the queue's offsets went back
    assert list(state.inflight) == [1, 5, 7] and state.low_watermark() == 1
    state.inflight.clear()
    assert state.low_watermark() == 10  # nothing in flight: the next offset
