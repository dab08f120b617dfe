"""Producer.recall: a delay message sent through the SDK carries a recall handle, and recalling it
keeps it from ever being delivered; refusals reach the caller as clear errors."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from broker.client import Message, MQBrokerError, MQClientError, Producer
from broker.protocol import properties as P
from broker.protocol.codes import ResponseCode
from broker.protocol.message import decode_record
from tests.broker.client.conftest import async_test, needs_servers, running_cluster

pytestmark = needs_servers
TOPIC = "RecallSdk"


def _delayed(body: bytes, delay_ms: int) -> Message:
    msg = Message(TOPIC, body)
    msg.properties[P.TIMER_DELAY_MS] = str(delay_ms)
    return msg


@async_test()
async def test_a_recalled_message_is_never_delivered(tmp_path: Path) -> None:
    async with running_cluster(tmp_path, {"recall_message_enable": True}) as cluster:
        await cluster.create_topic(TOPIC, 1)
        async with Producer("pg-recall", cluster.namesrv) as producer:
            recalled = await producer.send(_delayed(b"recalled", 1500))
            kept = await producer.send(_delayed(b"kept", 1500))
            assert recalled.recall_handle and kept.recall_handle
            assert await producer.recall(TOPIC, recalled.recall_handle) == recalled.msg_id
            with pytest.raises(MQClientError, match="bad recall handle"):
                await producer.recall(TOPIC, "%%%")
            plain = await producer.send(Message(TOPIC, b"now"))
            assert plain.recall_handle is None
        store = cluster.node.broker.store
        deadline = time.monotonic() + 30
        while store.max_offset(TOPIC, 0) < 2:  # "now" and, once due, "kept"
            assert time.monotonic() < deadline, "the delayed message was not delivered"
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # the recalled one was due at the same time: it must not follow
        bodies = [decode_record(raw).body for raw in store.get_messages(TOPIC, 0, 0, 10).records]
        assert bodies == [b"now", b"kept"]


@async_test()
async def test_recall_is_refused_while_switched_off(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic(TOPIC, 1)
        async with Producer("pg-recall", cluster.namesrv) as producer:
            sent = await producer.send(_delayed(b"x", 60_000))
            assert sent.recall_handle
            with pytest.raises(MQBrokerError) as refused:
                await producer.recall(TOPIC, sent.recall_handle)
            assert refused.value.code == ResponseCode.NO_PERMISSION
