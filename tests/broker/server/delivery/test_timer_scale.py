"""100,000 pending timers in ``rmq up``: the broker's heap does not grow with them, and a SIGKILL in
the middle of their delivery loses none and repeats none."""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import time
from pathlib import Path

import pytest

from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import BatchItem, encode_batch
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import make_request
from broker.store.message_store import MessageStore
from tests.broker.server.delivery.conftest import RmqUpProcess

pytestmark = pytest.mark.servers

TOPIC = "TimerCrash"
QUEUES = 4
BATCH = 500
MiB = 1 << 20


async def _park(
    client: RemotingClient, addr: str, first: int, count: int, due_from: int, due_to: int
) -> None:
    """Send timers ``first`` .. ``first + count`` (bodies ``t<i>``), due evenly from ``due_from`` to
    ``due_to`` (epoch ms), in batches spread over the queues."""
    span = max(1, due_to - due_from)
    requests = []
    for start in range(first, first + count, BATCH):
        items = [
            BatchItem(
                0,
                f"t{i}".encode(),
                encode_properties({"TIMER_DELIVER_MS": str(due_from + (i - first) * span // count)}),
            )
            for i in range(start, min(start + BATCH, first + count))
        ]
        ext = {"a": "PG", "b": TOPIC, "c": "TBW102", "d": str(QUEUES), "e": str(start // BATCH % QUEUES),
               "f": "0", "g": "0", "h": "0", "m": "true"}  # fmt: skip
        requests.append(
            make_request(RequestCode.SEND_BATCH_MESSAGE, ext_fields=ext, body=encode_batch(items))
        )
    for request in requests:
        while (answer := await client.invoke(addr, request, 30)).code == ResponseCode.SYSTEM_BUSY:
            await asyncio.sleep(0.2)  # flow control on a loaded machine: the batch was not stored
        assert answer.code == ResponseCode.SUCCESS, answer.remark


async def _taken_in(admin: AdminApi, addr: str, timeout: float = 60) -> None:
    """Wait until the broker has put every stored timer on its wheel."""
    deadline = time.monotonic() + timeout
    while (await admin.runtime_info(addr))["timerOffsetBehind"] != "0":
        assert time.monotonic() < deadline, "the timers were not taken in"
        await asyncio.sleep(0.2)


async def _delivered(admin: AdminApi, addr: str) -> int:
    return sum([await admin.max_offset(addr, TOPIC, q) for q in range(QUEUES)])


def _heap(pid: int) -> int:
    """The process's anonymous resident memory (its heap), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon")


def test_heap_stays_flat_and_a_kill_loses_and_repeats_nothing(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(_heap_and_kill(tmp_path), 240))


async def _heap_and_kill(tmp_path: Path) -> None:
    store = tmp_path / "store"
    up = RmqUpProcess(
        store,
        "flushDelayOffsetInterval=60000",
        "mappedFileSizeTimerLog=1048576",
        "mappedFileSizeCommitLog=33554432",
    )
    client = RemotingClient()
    admin = AdminApi(client, timeout=10)
    total, waiting = 100_000, 50_000
    try:
        await up.start()
        assert up.proc is not None
        now = int(time.time() * 1000)
        # the first 50,000 stay pending for an hour (and warm the broker up)
        await _park(client, up.addr, 0, waiting, now + 3_600_000, now + 3_700_000)
        await _taken_in(admin, up.addr)
        before = _heap(up.proc.pid)
        due_from = int(time.time() * 1000) + 12_000
        await _park(client, up.addr, waiting, total - waiting, due_from, due_from + 4_000)
        await _taken_in(admin, up.addr)
        grown = _heap(up.proc.pid) - before
        # timers held in memory at ~300 bytes each would take ~14 MiB more for these 50,000
        assert grown < 4 * MiB, f"the heap grew {grown / MiB:.1f} MiB for 50,000 more pending timers"

        deadline = time.monotonic() + 60
        while await _delivered(admin, up.addr) < 10_000:
            assert time.monotonic() < deadline, "delivery did not start"
            await asyncio.sleep(0.05)
        up.kill()  # mid-delivery, with a checkpoint up to a minute old
        await client.close()
        await up.start()
        deadline = time.monotonic() + 90
        while await _delivered(admin, up.addr) < total - waiting:
            assert time.monotonic() < deadline, "not every due timer was delivered after the restart"
            await asyncio.sleep(0.5)
        await asyncio.sleep(1.5)  # a repeat would land now
        os.kill(up.proc.pid, signal.SIGTERM)
        up.proc.wait(30)
    finally:
        await client.close()
        up.kill()

    found = MessageStore.open_read_only(store)
    try:
        bodies = collections.Counter(
            rec.body.decode()
            for q in range(QUEUES)
            for rec in (
                found.message_at(phys) for _o, phys, _s, _t in found.consume_queue(TOPIC, q).iter_units(0)
            )  # type: ignore[union-attr]
            if rec is not None
        )
    finally:
        found.shutdown()
    repeated = [b for b, n in bodies.items() if n > 1]
    assert not repeated, f"{len(repeated)} timers delivered twice, e.g. {repeated[:3]}"
    assert set(bodies) == {f"t{i}" for i in range(waiting, total)}
