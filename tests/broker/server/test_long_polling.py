"""A pull with nothing new waits for the next message instead of answering at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.protocol.codes import ResponseCode
from tests.broker.server.conftest import async_test, pull, records, running_broker, send

SUSPEND = 0x2 | 0x4


@async_test
async def test_held_pull_is_answered_when_a_message_arrives(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await send(client, broker, "LP", b"first", queue_id=0)
        held = asyncio.create_task(
            pull(client, broker, "LP", 0, 1, sysFlag=SUSPEND, suspendTimeoutMillis=20_000)
        )
        while broker.holds.held_count == 0:
            await asyncio.sleep(0.01)
        assert not held.done()
        await send(client, broker, "LP", b"second", queue_id=0)
        response = await held
        assert response.code == ResponseCode.SUCCESS
        assert [r.body for r in records(response)] == [b"second"]


@async_test
async def test_held_pull_ignores_messages_its_tags_do_not_match(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await send(client, broker, "LPT", queue_id=0, tags="X")
        held = asyncio.create_task(
            pull(client, broker, "LPT", 0, 1, sysFlag=SUSPEND, suspendTimeoutMillis=20_000, subscription="Y")
        )
        while broker.holds.held_count == 0:
            await asyncio.sleep(0.01)
        await send(client, broker, "LPT", b"x2", queue_id=0, tags="X")
        await asyncio.sleep(0.2)
        assert not held.done()
        await send(client, broker, "LPT", b"y", queue_id=0, tags="Y")
        assert [r.body for r in records(await held)] == [b"y"]


@async_test
async def test_held_pull_times_out_with_pull_not_found(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await send(client, broker, "LP2", queue_id=0)
        response = await pull(client, broker, "LP2", 0, 1, sysFlag=SUSPEND, suspendTimeoutMillis=300)
        assert response.code == ResponseCode.PULL_NOT_FOUND
        assert broker.holds.held_count == 0


@async_test
async def test_short_polling_holds_for_short_polling_time(tmp_path: Path) -> None:
    async with running_broker(tmp_path, long_polling_enable=False, short_polling_time_mills=200) as (
        broker,
        client,
    ):
        await send(client, broker, "SP", queue_id=0)
        response = await pull(client, broker, "SP", 0, 1, sysFlag=SUSPEND, suspendTimeoutMillis=60_000)
        assert response.code == ResponseCode.PULL_NOT_FOUND


@async_test
async def test_stop_answers_held_pulls(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await send(client, broker, "LP3", queue_id=0)
        held = asyncio.create_task(
            pull(client, broker, "LP3", 0, 1, sysFlag=SUSPEND, suspendTimeoutMillis=60_000)
        )
        while broker.holds.held_count == 0:
            await asyncio.sleep(0.01)
        broker.holds.stop()
        assert (await held).code == ResponseCode.PULL_NOT_FOUND
