"""``rmq broker clean``: expired CommitLog files and emptied ConsumeQueues go at once, and the command
says what it freed."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from broker.protocol.codes import RequestCode
from cli.main import app
from tests.broker.server.conftest import async_test, call, running_broker, send
from tests.broker.server.test_admin import create
from tests.broker.server.test_admin_codes import DAY, TINY_COMMITLOG


def _rmq(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@async_test
async def test_clean_frees_expired_files_and_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))
    async with running_broker(tmp_path / "store", TINY_COMMITLOG) as (broker, client):
        await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("Old", queues=1))
        for _ in range(40):
            await send(client, broker, "Old", b"o" * 1024, queue_id=0)
        week_ago = time.time() - 7 * DAY
        for mf in broker.store.commitlog.files.files:
            os.utime(mf.path, (week_ago, week_ago))
        addr = broker.address
        base = ("broker", "clean", "-b", addr, "-n", "127.0.0.1:1")

        refused = await asyncio.to_thread(_rmq, *base)  # not a terminal: destructive needs --yes
        assert refused.exit_code == 2 and "pass --yes" in refused.stderr
        nothing = await asyncio.to_thread(
            _rmq, *base, "--yes", "--no-commitlog", "--no-consume-queues", "--no-unused-topics"
        )
        assert nothing.exit_code == 2 and "every step is turned off" in nothing.stderr

        done = await asyncio.to_thread(_rmq, *base, "--yes", "-o", "json")
        assert done.exit_code == 0, done.output
        (report,) = json.loads(done.stdout)["brokers"]
        assert report["address"] == addr
        assert report["steps"] == ["commitlog", "consume-queues", "unused-topics"]
        assert report["commitlogMinOffsetBefore"] == 0
        assert report["commitlogMinOffsetAfter"] == broker.store.commitlog.min_offset > 0
        assert broker.store.consume_queue("Old", 0) is not None  # its last messages are in the live file

        table = await asyncio.to_thread(_rmq, *base, "--yes", "--no-commitlog")
        assert table.exit_code == 0 and "consume-queues, unused-topics" in table.stdout
