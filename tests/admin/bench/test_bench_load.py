"""What the load generator sends: real producers' messages, each with its own UNIQ_KEY."""

from __future__ import annotations

from pathlib import Path

import pytest

from admin.bench.load import QueueRef, RemotingLoad
from broker.protocol.msgid import UniqKeyGenerator
from tests.broker.server.conftest import async_test, pull, records, running_broker

_BROKER_MADE = UniqKeyGenerator(ip=b"\x0a\x00\x00\x09", pid=7)  # a prefix no client here has


@pytest.mark.parametrize("batch", [1, 4])
@async_test
async def test_every_message_carries_its_own_uniq_key(tmp_path: Path, batch: int) -> None:
    async with running_broker(tmp_path) as (broker, client):
        broker.uniq_keys = _BROKER_MADE  # what the broker would stamp on a message without one
        load = RemotingLoad("BenchKeys", connections=1, size=16, batch=batch)
        try:
            for _ in range(3):
                await load.send(0, QueueRef(broker.address, 0))
        finally:
            await load.close()
        stored = records(await pull(client, broker, "BenchKeys", 0, 0))
        keys = [r.uniq_key for r in stored]
        assert len(keys) == 3 * batch and len(set(keys)) == len(keys)
        assert not any(k is None or k.startswith(_BROKER_MADE.next()[:12]) for k in keys)
