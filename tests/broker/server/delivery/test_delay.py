"""Delay levels: delivered no earlier than their level, exactly once across restarts and crashes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import make_request
from broker.store.config_files import ConfigFile, decode_delay_file
from broker.store.dispatch import SCHEDULE_TOPIC
from tests.broker.server.conftest import async_test, pull_header, send
from tests.broker.server.delivery.conftest import RmqUpProcess, feature_broker, pull_all, v2_fields, wait_for


@async_test
async def test_delayed_message_arrives_after_its_level_with_real_topic_kept(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        sent_at = int(time.time() * 1000)
        response = await send(client, broker, "Later", b"late", queue_id=1, tags="T", DELAY="3")
        assert response.code == ResponseCode.SUCCESS
        assert await pull_all(client, broker.address, "Later", 1) == []
        got = await wait_for(client, broker.address, "Later", 1, 1)
        assert [m.body for m in got] == [b"late"]
        msg = got[0]
        parked = (await pull_all(client, broker.address, SCHEDULE_TOPIC, 2))[0]
        assert msg.store_timestamp >= parked.store_timestamp + 2000 >= sent_at + 2000
        assert "DELAY" not in msg.properties and msg.tags == "T"
        assert (msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"]) == ("Later", "1")
        assert msg.uniq_key == response.ext_fields["transactionId"] == parked.uniq_key
        assert (msg.born_timestamp, msg.born_host) == (parked.born_timestamp, parked.born_host)
        info = await AdminApi(client).runtime_info(broker.address)
        assert info["scheduleMessageOffset_3"] == "1,1" and info["scheduleMessageOffset_1"] == "0,0"


@async_test
async def test_held_pull_is_woken_by_the_delivery(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        await send(client, broker, "Held", b"x", queue_id=0, DELAY="1")
        header = pull_header("Held", 0, 0, sysFlag=0x4 | 0x2, suspendTimeoutMillis=8000)
        started = time.monotonic()
        response = await client.invoke(broker.address, make_request(RequestCode.PULL_MESSAGE, header), 15)
        assert response.code == ResponseCode.SUCCESS and time.monotonic() - started < 4


@async_test
async def test_graceful_restart_neither_loses_nor_repeats(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        for i in range(3):
            await send(client, broker, "Keep", f"early{i}".encode(), queue_id=0, DELAY="1")
        assert len(await wait_for(client, broker.address, "Keep", 0, 3)) == 3
        for i in range(3):
            await send(client, broker, "Keep", f"late{i}".encode(), queue_id=0, DELAY="3")
    saved = decode_delay_file(ConfigFile(tmp_path / "config" / "delayOffset.json").load())
    assert (saved[1], saved[3]) == (3, 0)
    async with feature_broker(tmp_path) as (broker, client):
        got = await wait_for(client, broker.address, "Keep", 0, 6)
        await asyncio.sleep(1.5)
        got = await pull_all(client, broker.address, "Keep", 0)
        assert sorted(m.body.decode() for m in got) == sorted(
            [f"early{i}" for i in range(3)] + [f"late{i}" for i in range(3)]
        )


async def _send_raw(client: RemotingClient, addr: str, topic: str, body: bytes, **props: str) -> None:
    ext = v2_fields(topic, encode_properties(props))
    request = make_request(RequestCode.SEND_MESSAGE_V2, None, body=body, ext_fields=ext)
    response = await client.invoke(addr, request, 10)
    assert response.code == ResponseCode.SUCCESS, response.remark


@async_test
async def test_crash_after_delivery_before_progress_is_saved_does_not_repeat(tmp_path: Path) -> None:
    """The progress is only saved every 60 s here, so after the kill the delay cursor and the timer
    progress are both behind what was delivered: the CommitLog check must stop a second delivery."""
    up = RmqUpProcess(tmp_path / "store", "flushDelayOffsetInterval=60000")
    client = RemotingClient()
    try:
        await up.start()
        for i in range(4):
            await _send_raw(client, up.addr, "Crash", f"done{i}".encode(), DELAY="1")
        await _send_raw(client, up.addr, "Crash", b"timer-done", TIMER_DELAY_MS="500")
        assert len(await wait_for(client, up.addr, "Crash", 0, 5)) == 5
        for i in range(3):
            await _send_raw(client, up.addr, "Crash", f"pending{i}".encode(), DELAY="3")
        await _send_raw(client, up.addr, "Crash", b"timer-pending", TIMER_DELAY_SEC="2")
        up.kill()
        await client.close()
        await up.start()
        got = await wait_for(client, up.addr, "Crash", 0, 9, timeout=15)
        await asyncio.sleep(2.5)
        got = await pull_all(client, up.addr, "Crash", 0)
        bodies = sorted(m.body.decode() for m in got)
        expected = [f"done{i}" for i in range(4)] + [f"pending{i}" for i in range(3)]
        assert bodies == sorted([*expected, "timer-done", "timer-pending"])
    finally:
        await client.close()
        up.kill()
