"""5.x timer messages: parked in rmq_sys_wheel_timer, delivered at their time, once."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

from broker.protocol.codes import ResponseCode
from broker.store.dispatch import TIMER_TOPIC
from tests.broker.conftest import async_test, running_broker, send
from tests.features.conftest import feature_broker, pull_all, wait_for


@async_test
async def test_timer_message_is_delivered_no_earlier_than_requested(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        deliver_ms = int(time.time() * 1000) + 1500
        response = await send(client, broker, "Tick", b"abs", queue_id=2, TIMER_DELIVER_MS=str(deliver_ms))
        assert response.code == ResponseCode.SUCCESS and response.ext_fields["queueId"] == "2"
        await send(client, broker, "Tick", b"rel", queue_id=2, TIMER_DELAY_MS="1200")
        parked = await pull_all(client, broker.address, TIMER_TOPIC, 0)
        assert int(parked[0].properties["TIMER_OUT_MS"]) == deliver_ms // 1000 * 1000
        assert parked[0].properties["REAL_TOPIC"] == "Tick"
        got = await wait_for(client, broker.address, "Tick", 2, 2)
        assert sorted(m.body for m in got) == [b"abs", b"rel"]
        first = next(m for m in got if m.body == b"abs")
        assert first.store_timestamp >= deliver_ms
        assert "REAL_TOPIC" not in first.properties and "TIMER_OUT_MS" in first.properties
        assert int(first.properties["TIMER_DEQUEUE_MS"]) >= deliver_ms


@async_test
async def test_timer_limits_and_bad_values_are_refused(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        too_far = await send(client, broker, "Tick", TIMER_DELAY_SEC=str(3 * 86400 + 10))
        assert too_far.code == ResponseCode.MESSAGE_ILLEGAL and "timerMaxDelaySec" in (too_far.remark or "")
        garbled = await send(client, broker, "Tick", TIMER_DELAY_MS="soon")
        assert garbled.code == ResponseCode.MESSAGE_ILLEGAL and "TIMER_DELAY_MS" in (garbled.remark or "")
        past = await send(client, broker, "Tick", b"now", queue_id=0, TIMER_DELIVER_MS="1")
        assert past.code == ResponseCode.SUCCESS
        assert [m.body for m in await pull_all(client, broker.address, "Tick", 0)] == [b"now"]
        level_wins = await send(client, broker, "Tick", queue_id=1, DELAY="1", TIMER_DELAY_SEC="60")
        assert level_wins.code == ResponseCode.SUCCESS
        assert [m.body for m in await wait_for(client, broker.address, "Tick", 1, 1)] == [b"hello"]


@async_test
async def test_timer_messages_survive_a_graceful_restart_once(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        await send(client, broker, "Tock", b"soon", queue_id=0, TIMER_DELAY_MS="100")
        await send(client, broker, "Tock", b"later", queue_id=0, TIMER_DELAY_SEC="2")
        assert len(await wait_for(client, broker.address, "Tock", 0, 1)) == 1
    async with feature_broker(tmp_path) as (broker, client):
        await wait_for(client, broker.address, "Tock", 0, 2)
        await wait_for(client, broker.address, "Tock", 0, 3, timeout=1.5)
        assert sorted(m.body for m in await pull_all(client, broker.address, "Tock", 0)) == [
            b"later",
            b"soon",
        ]


@async_test
async def test_an_upgraded_store_keeps_the_in_memory_timers_progress(tmp_path: Path) -> None:
    """A store written with timers held in memory (config/timerProgress.json, no timer files): of its
    parked units, those below readOffset were delivered or recalled unless still pending."""
    async with feature_broker(tmp_path) as (broker, client):
        for body in (b"delivered", b"pending", b"recalled", b"unseen"):
            await send(client, broker, "Upg", body, queue_id=0, TIMER_DELAY_SEC="60")
    shutil.rmtree(tmp_path / "timerlog", ignore_errors=True)
    (tmp_path / "timerwheel").unlink()
    (tmp_path / "config" / "timercheck").unlink()
    legacy = tmp_path / "config" / "timerProgress.json"
    legacy.write_text(json.dumps({"readOffset": 3, "pending": [1, 2], "recalled": [2]}))
    async with feature_broker(tmp_path) as (broker, client):
        await wait_for(client, broker.address, "Upg", 0, 1, timeout=1.0)  # the intake's first round
        timers, more = await broker.timer.pending("Upg", 0, 2**62, 10)
        assert sorted(t.body_size for t in timers) == [len(b"unseen"), len(b"pending")] and not more
        await broker.timer.persist()
        assert not legacy.exists()
    assert (tmp_path / "config" / "timercheck").exists()


@async_test
async def test_timers_beyond_the_roll_window_are_parked_again_until_due(tmp_path: Path) -> None:
    """A timer due further ahead than timerRollWindowSlots waits in a slot that far ahead and is then
    parked again, as often as it takes; it is listed and cancelled by its own time, and delivered at it."""
    settings = {"timer_precision_ms": 100, "timer_roll_window_slots": 4}  # a window of 0.4 s
    async with running_broker(tmp_path, store_settings=settings) as (broker, client):
        due = int(time.time() * 1000) + 2500
        for key, at in (("far", due), ("gone", due + 300)):
            await send(client, broker, "Far", key.encode(), queue_id=0, keys=key, TIMER_DELIVER_MS=str(at))
        deadline = time.monotonic() + 5
        while len(listed := (await broker.timer.pending("Far", 0, 2**62, 10))[0]) < 2:
            assert time.monotonic() < deadline, listed
            await asyncio.sleep(0.05)
        assert [t.keys for t in listed] == ["far", "gone"]
        assert due <= listed[0].deliver_ms < due + 100  # its own time, not the slot it waits in
        assert [t.keys for t in (await broker.timer.cancel("Far", None, "gone"))] == ["gone"]
        got = await wait_for(client, broker.address, "Far", 0, 1)
        assert [m.body for m in got] == [b"far"] and got[0].store_timestamp >= due
        assert int(got[0].properties["TIMER_ROLL_TIMES"]) >= 2  # 2.5 s ahead: several windows
        assert [m.body for m in await wait_for(client, broker.address, "Far", 0, 2, timeout=1.5)] == [b"far"]
        assert (await broker.timer.pending("Far", 0, 2**62, 10))[0] == []
