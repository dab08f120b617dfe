"""Messages, offsets and topics survive a graceful restart and a killed broker process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader
from broker.protocol.remoting import make_request
from tests.broker.server.conftest import async_test, call, pull, records, running_broker, send

ROOT = Path(__file__).resolve().parents[3]


@async_test
async def test_graceful_restart_keeps_everything(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        for i in range(20):
            await send(client, broker, "Keep", f"m{i}".encode(), queue_id=i % 2)
        await pull(client, broker, "Keep", 0, 0)
        update = UpdateConsumerOffsetRequestHeader(
            consumerGroup="CG", topic="Keep", queueId=0, commitOffset=7
        )
        await call(client, broker, RequestCode.UPDATE_CONSUMER_OFFSET, update)
    assert not (tmp_path / "abort").exists()
    async with running_broker(tmp_path) as (broker, client):
        assert broker.recovery is not None and broker.recovery.clean_shutdown
        assert [r.body for r in records(await pull(client, broker, "Keep", 1, 0))] == [
            f"m{i}".encode() for i in range(1, 20, 2)
        ]
        query = QueryConsumerOffsetRequestHeader(consumerGroup="CG", topic="Keep", queueId=0)
        assert (await call(client, broker, RequestCode.QUERY_CONSUMER_OFFSET, query)).ext_fields[
            "offset"
        ] == "7"
        assert (await send(client, broker, "Keep", queue_id=1)).ext_fields["queueOffset"] == "10"


@async_test
async def test_killed_broker_recovers_messages_and_offsets(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.broker.server.broker_process", str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        address = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 20)
        address = address.strip()
        client = RemotingClient()
        for i in range(10):
            ext = {"a": "PG", "b": "Crash", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}
            request = make_request(RequestCode.SEND_MESSAGE_V2, None, body=f"k{i}".encode(), ext_fields=ext)
            response = await client.invoke(address, request)
            assert response.code == ResponseCode.SUCCESS
        update = UpdateConsumerOffsetRequestHeader(
            consumerGroup="TOOLS_CONSUMER", topic="Crash", queueId=0, commitOffset=6
        )
        assert (
            await client.invoke(address, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, update))
        ).code == 0
        await client.close()
        offsets_file = tmp_path / "config" / "consumerOffset.json"
        while "Crash@TOOLS_CONSUMER" not in (offsets_file.read_text() if offsets_file.exists() else ""):
            await asyncio.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert (tmp_path / "abort").exists()
    async with running_broker(tmp_path) as (broker, client):
        assert broker.recovery is not None and not broker.recovery.clean_shutdown
        got = records(await pull(client, broker, "Crash", 0, 0))
        assert [r.body for r in got] == [f"k{i}".encode() for i in range(10)]
        query = QueryConsumerOffsetRequestHeader(consumerGroup="TOOLS_CONSUMER", topic="Crash", queueId=0)
        assert (await call(client, broker, RequestCode.QUERY_CONSUMER_OFFSET, query)).ext_fields[
            "offset"
        ] == "6"
        assert broker.topics.get("Crash") is not None
