"""Replication in one process: byte-identical CommitLogs, SYNC_MASTER answers, a slave that refuses
writes, split records, reconcile after divergence, metadata sync and the HA status."""

from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path

from broker.client.remoting_client import RemotingClient
from broker.protocol import lenient_json
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.ha import HARuntimeInfo
from broker.protocol.headers import PullMessageResponseHeader
from broker.protocol.remoting import make_request
from broker.server.broker import Broker
from broker.store.message_store import MessageStore, PutMessage
from tests.broker.server.conftest import async_test, pull, send
from tests.broker.server.ha.conftest import (
    commitlogs_identical,
    ha_broker,
    namesrv,
    running,
    store_config,
    wait_for,
)

TOPIC = "HaTopic"


async def _send_many(client: RemotingClient, broker: Broker, n: int, tag: str = "a") -> list[int]:
    codes = []
    for i in range(n):
        response = await send(client, broker, TOPIC, f"{tag}-{i}".encode() * 20, queue_id=i % 4)
        codes.append(response.code)
    return codes


def _connected(master: Broker) -> bool:
    return any(c.ack >= 0 for c in master.ha_service.connections)


@async_test
async def test_sync_master_replicates_byte_for_byte(tmp_path: Path) -> None:
    async with namesrv(tmp_path) as ns:
        master = ha_broker(ns.address, tmp_path / "m", "SYNC_MASTER")
        slave = ha_broker(ns.address, tmp_path / "s", "SLAVE")
        async with running(master, slave) as client:
            await wait_for(lambda: _connected(master), what="the slave to connect")
            assert set(await _send_many(client, master, 120)) == {ResponseCode.SUCCESS}
            top = master.store.commitlog.max_offset
            assert slave.store.commitlog.max_offset == top  # SYNC: acknowledged means replicated
            assert slave.store.max_offset(TOPIC, 1) == master.store.max_offset(TOPIC, 1) == 30
            refused = await send(client, slave, TOPIC)
            assert refused.code == ResponseCode.SYSTEM_BUSY and "[REJECTREQUEST]" in (refused.remark or "")
            # the master is alive and slave reads are off: the slave sends the consumer back
            answer = await pull(client, slave, TOPIC, 1, 0)
            assert answer.code == ResponseCode.PULL_RETRY_IMMEDIATELY
            header = PullMessageResponseHeader.from_ext_fields(answer.ext_fields)
            assert header.suggestWhichBrokerId == 0 and header.nextBeginOffset == 0
            status = HARuntimeInfo.from_json(
                (await client.invoke(master.address, make_request(RequestCode.GET_BROKER_HA_STATUS))).body
                or b""
            )
            assert status.master and status.inSyncSlaveNums == 1
            assert status.haConnectionInfo[0].slaveAckOffset == top
        assert commitlogs_identical(tmp_path / "m", tmp_path / "s")


@async_test
async def test_sync_master_without_slave_answers_slave_not_available(tmp_path: Path) -> None:
    async with namesrv(tmp_path) as ns:
        master = ha_broker(ns.address, tmp_path / "m", "SYNC_MASTER")
        async with running(master) as client:
            response = await send(client, master, TOPIC)
            assert response.code == ResponseCode.SLAVE_NOT_AVAILABLE
            assert response.ext_fields.get("msgId")  # stored on the master all the same


@async_test
async def test_slow_slave_answers_flush_slave_timeout(tmp_path: Path) -> None:
    async with namesrv(tmp_path) as ns:
        master = ha_broker(ns.address, tmp_path / "m", "SYNC_MASTER")
        master.store_config.sync_flush_timeout_ms = 200
        slave = ha_broker(ns.address, tmp_path / "s", "SLAVE")
        async with running(master, slave) as client:
            await wait_for(lambda: _connected(master), what="the slave to connect")
            assert slave.ha_client is not None
            original = slave.ha_client._apply

            def slow(offset: int, data: bytes) -> object:
                import time

                time.sleep(0.5)
                return original(offset, data)

            slave.ha_client._apply = slow  # type: ignore[method-assign]
            response = await send(client, master, TOPIC)
            assert response.code == ResponseCode.FLUSH_SLAVE_TIMEOUT


def test_records_split_across_frames_are_dispatched_once_complete(tmp_path: Path) -> None:
    master = MessageStore(store_config(tmp_path / "m"))
    slave = MessageStore(store_config(tmp_path / "s"))
    master.start()
    slave.start()
    try:
        for i in range(300):
            body = bytes(random.randrange(256) for _ in range(random.randrange(1, 3000)))
            master.append([PutMessage("T", i % 3, body, {"KEYS": f"k{i}", "TAGS": "t"})])
        offset, rng = 0, random.Random(7)
        while offset < master.commitlog.max_offset:
            data = master.commitlog.read_raw(offset, rng.randrange(1, 5000))
            slave.append_replicated(offset, data)
            offset += len(data)
        for q in range(3):
            cq_m, cq_s = master.consume_queue("T", q), slave.consume_queue("T", q)
            assert cq_m is not None and cq_s is not None
            assert list(cq_s.iter_units(0, 1000)) == list(cq_m.iter_units(0, 1000))
        assert [r.body for r in slave.query_by_key("T", "k7", 5, 0, 2**62)] == [
            r.body for r in master.query_by_key("T", "k7", 5, 0, 2**62)
        ]
        slave.replica = True
        assert not slave.append([PutMessage("T", 0, b"x", {})]).ok
    finally:
        master.shutdown()
        slave.shutdown()
    assert commitlogs_identical(tmp_path / "m", tmp_path / "s")


async def _standalone_writes(store: Path, ns: str, n: int, tag: str) -> None:
    broker = ha_broker(ns, store, "ASYNC_MASTER")
    async with running(broker) as client:
        assert set(await _send_many(client, broker, n, tag)) == {ResponseCode.SUCCESS}


@async_test
async def test_diverged_slave_truncates_to_the_master_and_catches_up(tmp_path: Path) -> None:
    async with namesrv(tmp_path) as ns:
        await _standalone_writes(tmp_path / "m", ns.address, 40, "common")
        shutil.copytree(tmp_path / "m", tmp_path / "s")
        await _standalone_writes(tmp_path / "m", ns.address, 30, "master")  # the master's new history
        await _standalone_writes(tmp_path / "s", ns.address, 50, "other")  # a tail the master never had
        master = ha_broker(ns.address, tmp_path / "m", "ASYNC_MASTER")
        slave = ha_broker(ns.address, tmp_path / "s", "SLAVE")
        async with running(master, slave):
            top = master.store.commitlog.max_offset
            await wait_for(lambda: slave.store.commitlog.max_offset == top, what="the slave to catch up")
            assert slave.ha_client is not None and slave.ha_client.truncated_bytes > 0
            assert "cut" in slave.ha_client.status().lastTruncate
        assert commitlogs_identical(tmp_path / "m", tmp_path / "s")


@async_test
async def test_slave_ahead_of_a_restarted_master_cuts_its_tail(tmp_path: Path) -> None:
    async with namesrv(tmp_path) as ns:
        await _standalone_writes(tmp_path / "m", ns.address, 40, "common")
        shutil.copytree(tmp_path / "m", tmp_path / "s")
        await _standalone_writes(tmp_path / "s", ns.address, 20, "lost")  # bytes the master lost
        master = ha_broker(ns.address, tmp_path / "m", "ASYNC_MASTER")
        slave = ha_broker(ns.address, tmp_path / "s", "SLAVE")
        async with running(master, slave):
            top = master.store.commitlog.max_offset
            # the CommitLog is cut first, then its queues (on the store-writer thread): wait for both
            await wait_for(
                lambda: (
                    slave.store.commitlog.max_offset == top
                    and slave.store.max_offset(TOPIC, 0) == master.store.max_offset(TOPIC, 0)
                ),
                what="the slave to cut",
            )
        assert commitlogs_identical(tmp_path / "m", tmp_path / "s")


@async_test
async def test_metadata_follows_the_master(tmp_path: Path) -> None:
    async with namesrv(tmp_path) as ns:
        master = ha_broker(ns.address, tmp_path / "m", "ASYNC_MASTER")
        slave = ha_broker(ns.address, tmp_path / "s", "SLAVE")
        async with running(master, slave) as client:
            await _send_many(client, master, 8)
            master.offsets.commit("CG1", TOPIC, 2, 1)
            master.schedule.offsets[3] = 0
            await wait_for(lambda: slave.topics.get(TOPIC) is not None, what="the topic on the slave")
            await wait_for(lambda: slave.offsets.query("CG1", TOPIC, 2) == 1, what="offsets on the slave")
            answer = await client.invoke(master.address, make_request(RequestCode.GET_ALL_DELAY_OFFSET))
            assert lenient_json.loads(answer.body or b"{}")["offsetTable"]
            await asyncio.sleep(0)
