"""A ``cleanup.policy=COMPACTION`` topic over TCP: keyless sends are refused, the broker compacts in the
background, a pull from offset 0 returns each key's newest value, and the progress is in the runtime
information that ``rmq topic describe`` shows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.client.remoting_client import RemotingClient
from broker.protocol.bodies import KVTable
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import CreateTopicRequestHeader
from broker.server.broker import Broker
from tests.broker.server.conftest import async_test, call, pull, records, running_broker, send

pytestmark = pytest.mark.servers

TOPIC = "Balances"
KEYS = 30
COMPACTION = {
    "compaction_cq_mapped_file_size": 46 * 46,
    "compaction_mapped_file_size": 1,
    "compaction_schedule_interval_ms": 200,
}


async def create(client: RemotingClient, broker: Broker, topic: str, attributes: str) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        defaultTopic="TBW102",
        readQueueNums=1,
        writeQueueNums=1,
        perm=6,
        topicFilterType="SINGLE_TAG",
        attributes=attributes,
    )
    response = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def read_from_start(client: RemotingClient, broker: Broker) -> tuple[dict[str, int], int]:
    """Key -> newest value read from offset 0 to the end, and how many messages that took."""
    latest: dict[str, int] = {}
    offset = read = 0
    while True:
        response = await pull(client, broker, TOPIC, 0, offset)
        got = records(response)
        for rec in got:
            latest[rec.keys[0]] = int(rec.body)
        read += len(got)
        next_offset = int(response.ext_fields["nextBeginOffset"])
        if not got and next_offset == offset:
            return latest, read
        offset = next_offset


async def runtime(client: RemotingClient, broker: Broker) -> dict[str, str]:
    response = await call(client, broker, RequestCode.GET_BROKER_RUNTIME_INFO)
    return KVTable.from_json(response.body or b"").table


@async_test
async def test_compaction_topic_keeps_each_keys_newest_value(tmp_path: Path) -> None:
    async with running_broker(tmp_path, grpc_port=-1, store_settings=COMPACTION) as (broker, client):
        await create(client, broker, TOPIC, "+cleanup.policy=COMPACTION")
        keyless = await send(client, broker, TOPIC, b"1", queue_id=0)
        assert keyless.code == ResponseCode.MESSAGE_ILLEGAL
        assert keyless.remark == "Required message key is missing"
        for seq in range(900):
            sent = await send(client, broker, TOPIC, str(seq).encode(), queue_id=0, keys=f"acct-{seq % KEYS}")
            assert sent.code == ResponseCode.SUCCESS, sent.remark
        expected = {f"acct-{k}": max(s for s in range(900) if s % KEYS == k) for k in range(KEYS)}
        runs = 0
        while runs < 1:  # "fedOffset,messages,diskBytes,compactedOffset,runs"
            await asyncio.sleep(0.1)
            progress = (await runtime(client, broker)).get(f"compactionProgress_{TOPIC}_0", "0")
            runs = int(progress.split(",")[-1])
        latest, read = await read_from_start(client, broker)
        assert latest == expected
        assert read < 900  # superseded values are gone for a reader from the start
        # a consumer at the head gets every new message at once
        for seq in range(900, 905):
            await send(client, broker, TOPIC, str(seq).encode(), queue_id=0, keys="acct-new")
        head = await pull(client, broker, TOPIC, 0, 900)
        assert [int(r.body) for r in records(head)] == list(range(900, 905))
