"""Broker fixes that real peer clients revealed (tests/peers/test_interop.py), each checked directly."""

from __future__ import annotations

from pathlib import Path

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import BatchItem, encode_batch
from broker.protocol.properties import encode_properties
from tests.broker.server.conftest import async_test, call, pull, records, running_broker


def v1_fields(topic: str, **extra: str) -> dict[str, str]:
    """A SEND_MESSAGE header as the C++ client writes it (every value a string)."""
    fields = {"producerGroup": "PG", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4"}
    fields.update(queueId="0", sysFlag="0", bornTimestamp="1", flag="0")
    return fields | extra


@async_test
async def test_v1_send_with_batch_flag_1_stores_each_message(tmp_path: Path) -> None:
    """rocketmq-client-cpp sends a batch as SEND_MESSAGE (10) with the header field ``batch`` "1"."""
    async with running_broker(tmp_path) as (broker, client):
        items = [
            BatchItem(0, f"m{i}".encode(), encode_properties({"TAGS": "T", "KEYS": f"k{i}"}))
            for i in range(3)
        ]
        ext = v1_fields("CppBatch", properties="", reconsumeTimes="0", unitMode="0", batch="1")
        response = await call(client, broker, RequestCode.SEND_MESSAGE, None, encode_batch(items), **ext)
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert len(response.ext_fields["msgId"].split(",")) == 3
        got = records(await pull(client, broker, "CppBatch", 0, 0))
        assert [(r.body, r.properties.get("KEYS")) for r in got] == [
            (b"m0", "k0"),
            (b"m1", "k1"),
            (b"m2", "k2"),
        ]
        assert [r.queue_offset for r in got] == [0, 1, 2]


@async_test
async def test_v1_send_with_batch_flag_0_stays_one_message(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        ext = v1_fields("CppSingle", properties="KEYS\x01k\x02", batch="0")
        response = await call(client, broker, RequestCode.SEND_MESSAGE, None, b"plain", **ext)
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert [r.body for r in records(await pull(client, broker, "CppSingle", 0, 0))] == [b"plain"]
