"""RecallMessage over real gRPC (and RECALL_MESSAGE over remoting): a recalled delay message is never
delivered, not after a restart either, a bad handle gets a clear status, and recall is refused until
recallMessageEnable is on (and on a read-only broker once allowRecallWhenBrokerNotWriteable is off)."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

import pytest

from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.grpc.schema import PB, Code
from broker.protocol import properties as P
from broker.protocol.bodies import TopicConfig
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import decode_record
from broker.protocol.properties import encode_properties
from broker.protocol.recall import RecallHandle
from broker.protocol.remoting import RemotingCommand, make_request
from broker.server.broker import Broker
from tests.broker.grpc.test_grpc_service import Client, _broker, _message, async_test

TOPIC = "Recall"


def test_handle_format_is_upstreams() -> None:
    handle = RecallHandle("topic", "broker-0", 1700000000001, "7F000001ABCD")
    raw = b"v1 topic broker-0 1700000000001 7F000001ABCD"
    assert handle.encode() == base64.urlsafe_b64encode(raw).decode()
    assert RecallHandle.decode(handle.encode()) == handle
    assert RecallHandle.decode(handle.encode().rstrip("=")) == handle  # padding is optional
    encoded = [base64.urlsafe_b64encode(raw).decode() for raw in (b"v1 a b c", b"v2 a b 1 d", b"v1 a b x d")]
    for bad in ["", "v1 a b c d", *encoded]:
        with pytest.raises(ValueError):
            RecallHandle.decode(bad)


async def _send_delayed(client: Client, count: int, delay_ms: int = 3000) -> Any:
    due = int(time.time() * 1000) + delay_ms
    messages = [_message(TOPIC, f"m{i}".encode()) for i in range(count)]
    for msg in messages:
        msg.system_properties.delivery_timestamp.FromMilliseconds(due)
    request = PB.SendMessageRequest(messages=messages)
    sent = await client.unary("SendMessage", request, PB.SendMessageResponse)
    assert sent.status.code == Code.OK, sent.status.message
    return sent.entries


async def _recall(client: Client, handle: str, topic: str = TOPIC) -> Any:
    request = PB.RecallMessageRequest(topic=PB.Resource(name=topic), recall_handle=handle)
    return await client.unary("RecallMessage", request, PB.RecallMessageResponse)


async def _recall_remoting(
    remoting: RemotingClient, broker: Broker, handle: str, topic: str = TOPIC
) -> RemotingCommand:
    fields = {"producerGroup": "pg", "topic": topic, "recallHandle": handle}
    request = make_request(RequestCode.RECALL_MESSAGE, ext_fields=fields)
    return await remoting.invoke(broker.address, request, 10)


async def _delivered(broker: Broker, count: int) -> list[str]:
    """The UNIQ_KEYs in the real topic once it holds ``count`` messages."""
    deadline = time.monotonic() + 30
    while broker.store.max_offset(TOPIC, 0) < count:
        assert time.monotonic() < deadline, "the timer did not deliver"
        await asyncio.sleep(0.1)
    result = broker.store.get_messages(TOPIC, 0, 0, 100)
    return [str(decode_record(raw).uniq_key) for raw in result.records]


async def _topic_broker(path: Path, *, recall: bool = True) -> tuple[Broker, Client]:
    broker = await _broker(path)
    broker.config.recall_message_enable = recall
    broker.topics.put(TopicConfig(topicName=TOPIC, readQueueNums=1, writeQueueNums=1))
    return broker, Client(broker.grpc_port)


@async_test
async def test_recalled_delay_message_is_never_delivered(tmp_path: Path) -> None:
    broker, client = await _topic_broker(tmp_path)
    try:
        recalled, kept = await _send_delayed(client, 2)
        handle = RecallHandle.decode(recalled.recall_handle)
        assert (handle.topic, handle.broker_name, handle.message_id) == (TOPIC, "b", recalled.message_id)
        answer = await _recall(client, recalled.recall_handle)
        assert answer.status.code == Code.OK and answer.message_id == recalled.message_id
        assert (await _recall(client, recalled.recall_handle)).status.code == Code.OK  # idempotent
        # same due time, later queue offset: once the kept one is delivered the recalled one was dropped
        assert await _delivered(broker, 1) == [kept.message_id]
        late = await _recall(client, kept.recall_handle)
        assert late.status.code == Code.NOT_FOUND and "delivered" in late.status.message
    finally:
        await client.channel.close()
        await broker.stop()


@async_test
async def test_recall_survives_a_restart(tmp_path: Path) -> None:
    broker, client = await _topic_broker(tmp_path)
    try:
        recalled, kept = await _send_delayed(client, 2)
        assert (await _recall(client, recalled.recall_handle)).status.code == Code.OK
    finally:
        await client.channel.close()
        await broker.stop()
    broker = await _broker(tmp_path)
    try:
        assert await _delivered(broker, 1) == [kept.message_id]
    finally:
        await broker.stop()


@async_test
async def test_bad_recall_handles_get_clear_statuses(tmp_path: Path) -> None:
    broker, client = await _topic_broker(tmp_path)
    broker.topics.put(TopicConfig(topicName="Other", readQueueNums=1, writeQueueNums=1))
    now = int(time.time() * 1000)
    try:
        (entry,) = await _send_delayed(client, 1, delay_ms=60_000)
        cases = {
            "%%%": (Code.BAD_REQUEST, "base64url"),
            base64.urlsafe_b64encode(b"v2 Recall b 1 X").decode(): (Code.BAD_REQUEST, "v1"),
            RecallHandle("Other", "b", now + 60_000, "X").encode(): (Code.BAD_REQUEST, "topic Other"),
            RecallHandle(TOPIC, "other", now + 60_000, "X").encode(): (Code.BAD_REQUEST, "broker other"),
            RecallHandle(TOPIC, "b", now - 1000, "X").encode(): (Code.NOT_FOUND, "delivered"),
            RecallHandle(TOPIC, "b", now + 60_000, entry.message_id).encode(): (Code.NOT_FOUND, "waiting"),
        }
        for handle, (code, text) in cases.items():
            answer = await _recall(client, handle)
            assert answer.status.code == code and text in answer.status.message, (handle, answer.status)
        assert (await _recall(client, entry.recall_handle, "Missing")).status.code == Code.TOPIC_NOT_FOUND
        normal = await client.unary(
            "SendMessage", PB.SendMessageRequest(messages=[_message(TOPIC, b"now")]), PB.SendMessageResponse
        )
        assert normal.entries[0].status.code == Code.OK and normal.entries[0].recall_handle == ""
    finally:
        await client.channel.close()
        await broker.stop()


@async_test
async def test_recall_over_remoting(tmp_path: Path) -> None:
    broker, client = await _topic_broker(tmp_path)
    remoting = RemotingClient()
    try:
        recalled, kept = await _send_delayed(client, 2)
        # a remoting producer's delayed send is answered with its handle too
        props = encode_properties({P.TIMER_DELAY_MS: "3000", P.UNIQ_KEY: "AC1100000001000000000000000000FF"})
        ext = {"a": "pg", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0",
               "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}  # fmt: skip
        sent = await remoting.invoke(
            broker.address, make_request(RequestCode.SEND_MESSAGE_V2, ext_fields=ext, body=b"r"), 10
        )
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        by_remoting = RecallHandle.decode(sent.ext_fields["recallHandle"])
        assert (by_remoting.topic, by_remoting.message_id) == (TOPIC, "AC1100000001000000000000000000FF")

        answer = await _recall_remoting(remoting, broker, recalled.recall_handle)
        assert answer.code == ResponseCode.SUCCESS and answer.ext_fields["msgId"] == recalled.message_id
        assert (await _recall_remoting(remoting, broker, sent.ext_fields["recallHandle"])).code == 0
        assert (await _recall_remoting(remoting, broker, "%%%")).code == ResponseCode.ILLEGAL_OPERATION
        missing = await _recall_remoting(remoting, broker, recalled.recall_handle, "Missing")
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
        assert await _delivered(broker, 1) == [kept.message_id]
    finally:
        await remoting.close()
        await client.channel.close()
        await broker.stop()


@async_test
async def test_recall_is_refused_until_switched_on(tmp_path: Path) -> None:
    broker, client = await _topic_broker(tmp_path, recall=False)
    remoting = RemotingClient()
    admin = AdminApi(remoting, timeout=10)
    try:
        config = await admin.broker_config(broker.address)
        assert config["recallMessageEnable"] == "false"
        assert config["allowRecallWhenBrokerNotWriteable"] == "true"
        (entry,) = await _send_delayed(client, 1, delay_ms=60_000)
        assert entry.recall_handle  # sends answer handles whether recall is on or not
        refused = await _recall(client, entry.recall_handle)
        assert refused.status.code == Code.FORBIDDEN and "recallMessageEnable" in refused.status.message
        by_remoting = await _recall_remoting(remoting, broker, entry.recall_handle)
        assert by_remoting.code == ResponseCode.NO_PERMISSION and "recallMessageEnable" in by_remoting.remark
        # the switch is looked at before anything the request names
        missing = await _recall_remoting(remoting, broker, entry.recall_handle, "Missing")
        assert missing.code == ResponseCode.NO_PERMISSION

        await admin.update_broker_config(broker.address, {"recallMessageEnable": "true"})
        answer = await _recall(client, entry.recall_handle)
        assert answer.status.code == Code.OK and answer.message_id == entry.message_id
    finally:
        await remoting.close()
        await client.channel.close()
        await broker.stop()


@async_test
async def test_recall_on_a_broker_that_is_not_writeable(tmp_path: Path) -> None:
    broker, client = await _topic_broker(tmp_path)
    remoting = RemotingClient()
    admin = AdminApi(remoting, timeout=10)
    try:
        first, second = await _send_delayed(client, 2, delay_ms=60_000)
        await admin.update_broker_config(broker.address, {"brokerPermission": "4"})  # read only
        allowed = await _recall(client, first.recall_handle)  # allowRecallWhenBrokerNotWriteable=true
        assert allowed.status.code == Code.OK, allowed.status.message

        await admin.update_broker_config(broker.address, {"allowRecallWhenBrokerNotWriteable": "false"})
        refused = await _recall(client, second.recall_handle)
        assert refused.status.code == Code.INTERNAL_SERVER_ERROR
        assert "not writeable" in refused.status.message
        by_remoting = await _recall_remoting(remoting, broker, second.recall_handle)
        assert by_remoting.code == ResponseCode.SERVICE_NOT_AVAILABLE, by_remoting.remark

        await admin.update_broker_config(broker.address, {"brokerPermission": "6"})
        assert (await _recall(client, second.recall_handle)).status.code == Code.OK
    finally:
        await remoting.close()
        await client.channel.close()
        await broker.stop()
