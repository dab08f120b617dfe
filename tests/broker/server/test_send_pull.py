"""Sending (v1, V2, batch) and reading back by pull over real TCP, with the send-path rules."""

from __future__ import annotations

from pathlib import Path

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import SendMessageRequestHeaderV2
from broker.protocol.message import BatchItem, encode_batch
from broker.protocol.properties import encode_properties
from broker.store.dispatch import SCHEDULE_TOPIC
from tests.broker.server.conftest import async_test, call, pull, records, running_broker, send


@async_test
async def test_v1_and_v2_sends_are_read_back_by_pull(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        first = await send(client, broker, "Orders", b"one", queue_id=1, v1=True, keys="k1")
        second = await send(client, broker, "Orders", b"two", queue_id=1)
        assert (first.code, second.code) == (ResponseCode.SUCCESS, ResponseCode.SUCCESS)
        assert first.ext_fields["queueOffset"] == "0" and second.ext_fields["queueOffset"] == "1"
        assert first.ext_fields["MSG_REGION"] == "DefaultRegion" and first.ext_fields["TRACE_ON"] == "true"
        assert first.ext_fields["msgId"].endswith("0" * 16)

        response = await pull(client, broker, "Orders", 1, 0)
        assert response.code == ResponseCode.SUCCESS and response.remark == "FOUND"
        got = records(response)
        assert [r.body for r in got] == [b"one", b"two"]
        assert response.ext_fields["nextBeginOffset"] == "2" and response.ext_fields["maxOffset"] == "2"
        msg = got[0]
        assert msg.properties["CLUSTER"] == "DefaultCluster" and msg.properties["KEYS"] == "k1"
        assert msg.uniq_key == first.ext_fields["transactionId"]
        assert msg.store_host == broker.address
        assert msg.born_host.startswith("127.0.0.1:")
        assert msg.offset_msg_id == first.ext_fields["msgId"]


@async_test
async def test_auto_created_topic_takes_min_of_requested_and_template_queues(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        assert (await send(client, broker, "Fresh")).code == ResponseCode.SUCCESS
        config = broker.topics.get("Fresh")
        assert config is not None
        assert (config.readQueueNums, config.writeQueueNums, config.perm) == (4, 4, 6)
        await broker.metadata_saved()  # saved on a worker thread, a burst of changes at once
        assert '"Fresh"' in (tmp_path / "config" / "topics.json").read_text()


@async_test
async def test_batch_send_stores_each_message(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        items = [
            BatchItem(0, f"m{i}".encode(), encode_properties({"TAGS": "B", "KEYS": f"k{i}"}))
            for i in range(3)
        ]
        header = SendMessageRequestHeaderV2(a="PG", b="Batch", c="TBW102", d=4, e=0, f=0, g=1, h=0, m=True)
        response = await call(client, broker, RequestCode.SEND_BATCH_MESSAGE, header, encode_batch(items))
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert len(response.ext_fields["msgId"].split(",")) == 3
        got = records(await pull(client, broker, "Batch", 0, 0))
        assert [r.body for r in got] == [b"m0", b"m1", b"m2"]
        assert [r.queue_offset for r in got] == [0, 1, 2]
        assert all(r.uniq_key for r in got)


@async_test
async def test_tag_filtering(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        for tag in ("A", "B", "C", "A"):
            await send(client, broker, "Tagged", tag.encode(), queue_id=0, tags=tag)
        got = records(await pull(client, broker, "Tagged", 0, 0, subscription="A || C"))
        assert [r.body for r in got] == [b"A", b"C", b"A"]
        only_b = await pull(client, broker, "Tagged", 0, 2, subscription="B")
        assert only_b.code == ResponseCode.PULL_RETRY_IMMEDIATELY
        assert only_b.ext_fields["nextBeginOffset"] == "4"


@async_test
async def test_delay_level_parks_message_in_schedule_topic(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        response = await send(client, broker, "Later", queue_id=2, DELAY="3")
        assert response.code == ResponseCode.SUCCESS and response.ext_fields["queueId"] == "2"
        got = records(await pull(client, broker, SCHEDULE_TOPIC, 2, 0))
        assert got[0].properties["REAL_TOPIC"] == "Later" and got[0].properties["REAL_QID"] == "2"


@async_test
async def test_pull_statuses(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await send(client, broker, "P", queue_id=0)
        assert (await pull(client, broker, "P", 0, 1)).code == ResponseCode.PULL_NOT_FOUND
        moved = await pull(client, broker, "P", 0, 9)
        assert moved.code == ResponseCode.PULL_OFFSET_MOVED and moved.ext_fields["nextBeginOffset"] == "1"
        empty = await pull(client, broker, "P", 3, 5)
        assert empty.code == ResponseCode.PULL_OFFSET_MOVED
        assert (await pull(client, broker, "P", 3, 0)).code == ResponseCode.PULL_NOT_FOUND
        assert (await pull(client, broker, "Nope", 0, 0)).code == ResponseCode.TOPIC_NOT_EXIST
        assert (await pull(client, broker, "P", 7, 0)).code == ResponseCode.INVALID_PARAMETER
        no_sub = await pull(client, broker, "P", 0, 0, sysFlag=0)
        assert no_sub.code == ResponseCode.SUBSCRIPTION_NOT_EXIST


@async_test
async def test_send_errors_have_rocketmq_codes(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        assert (await send(client, broker, SCHEDULE_TOPIC)).code == ResponseCode.NO_PERMISSION
        assert (await send(client, broker, "bad topic!")).code == ResponseCode.INVALID_PARAMETER
        assert (await send(client, broker, "T" * 128)).code == ResponseCode.INVALID_PARAMETER
        await send(client, broker, "Q")
        bad_queue = await send(client, broker, "Q", queue_id=4)
        assert bad_queue.code == ResponseCode.INVALID_PARAMETER and "queueId[4]" in (bad_queue.remark or "")
        big = await send(client, broker, "Q", b"x" * (broker.store_config.max_message_size + 1))
        assert big.code == ResponseCode.MESSAGE_ILLEGAL
        missing = await call(client, broker, RequestCode.SEND_MESSAGE_V2, None, b"x", a="PG", c="TBW102")
        assert missing.code == ResponseCode.INVALID_PARAMETER and "'b'" in (missing.remark or "")
        garbled = await call(client, broker, RequestCode.SEND_BATCH_MESSAGE, None, b"\x00\x01", **{
            "a": "PG", "b": "Q", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0", "m": "true"
        })  # fmt: skip
        assert garbled.code == ResponseCode.MESSAGE_ILLEGAL


@async_test
async def test_retry_topic_resend_goes_to_dlq_after_max_reconsume(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        header = SendMessageRequestHeaderV2(
            a="PG", b="%RETRY%G1", c="TBW102", d=4, e=0, f=0, g=1, h=0, j=3, l=2
        )
        response = await call(client, broker, RequestCode.SEND_MESSAGE_V2, header, b"dead")
        assert response.code == ResponseCode.SUCCESS, response.remark
        got = records(await pull(client, broker, "%DLQ%G1", 0, 0))
        assert got[0].body == b"dead" and got[0].reconsume_times == 3
        header.j = 1
        assert (await call(client, broker, RequestCode.SEND_MESSAGE_V2, header, b"again")).code == 0
        assert records(await pull(client, broker, "%RETRY%G1", 0, 0))[0].body == b"again"
