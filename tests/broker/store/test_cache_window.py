"""commitLogCacheWindow: flushed CommitLog bytes that fall that far behind leave the page cache."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import time
from pathlib import Path

import pytest

from broker.client.admin_api import AdminApi
from broker.protocol.message import decode_record
from broker.store.message_store import CACHE_DROP_STEP, GetStatus, MessageStore, PutMessage
from tests.broker.server.messaging.conftest import async_test, running
from tests.broker.store.helpers import open_store

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="page residency is read with Linux mincore")

FILE_SIZE = 16 << 20  # one file: its pages below the write position all hold data
BODY = 256 << 10
WINDOW = 2 << 20


def resident(path: Path) -> list[bool]:
    """Which pages of ``path`` are in the page cache (mincore over a private map, never touched)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        mm = mmap.mmap(fd, size, access=mmap.ACCESS_COPY)
    finally:
        os.close(fd)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    anchor = ctypes.c_char.from_buffer(mm)
    try:
        rc = libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), ctypes.c_size_t(size), vec)
        assert rc == 0, os.strerror(ctypes.get_errno())
    finally:
        del anchor
        mm.close()
    return [bool(v & 1) for v in vec]


def written_pages(store: MessageStore) -> list[tuple[int, bool]]:
    """(absolute offset, cached) of every CommitLog page holding written bytes."""
    pages: list[tuple[int, bool]] = []
    for mf in store.commitlog.files.files:
        cached = resident(mf.path)[: mf.wrote // mmap.PAGESIZE]
        pages += [(mf.file_from + i * mmap.PAGESIZE, c) for i, c in enumerate(cached)]
    return pages


def fill(store: MessageStore, count: int) -> list[bytes]:
    bodies = [bytes([i]) * BODY for i in range(count)]
    for body in bodies:
        assert store.put_messages([PutMessage("T", 0, body, {})]).ok
    return bodies


def settle(store: MessageStore) -> None:
    """Until the flush thread has flushed everything (and dropped what the window asks)."""
    deadline = time.monotonic() + 10
    files = store.commitlog.files
    while files.flushed_offset < files.max_offset and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # the drop follows the flush in the same pass


def test_pages_behind_the_window_leave_the_cache_and_still_read_back(tmp_path: Path) -> None:
    store = open_store(
        tmp_path, mapped_file_size_commit_log=FILE_SIZE, flush_interval_commit_log_ms=20,
        commit_log_cache_window=WINDOW,
    )  # fmt: skip
    bodies = fill(store, (CACHE_DROP_STEP + 2 * WINDOW) // (BODY + 200))
    settle(store)
    head = store.commitlog.files.flushed_offset
    pages = written_pages(store)
    behind = [cached for offset, cached in pages if offset + mmap.PAGESIZE <= head - WINDOW - CACHE_DROP_STEP]
    inside = [cached for offset, cached in pages if offset >= head - WINDOW]
    assert behind and not any(behind), f"{sum(behind)} of {len(behind)} pages behind the window still cached"
    assert inside and all(inside), f"{inside.count(False)} of {len(inside)} pages inside the window dropped"
    # nothing is lost: every message reads back from disk, byte for byte
    got = store.get_messages("T", 0, 0, len(bodies), max_bytes=len(bodies) * (BODY + 200))
    assert got.status is GetStatus.FOUND
    assert [decode_record(record).body for record in got.records] == bodies
    store.shutdown()


def test_without_a_window_the_kernel_keeps_every_page(tmp_path: Path) -> None:
    store = open_store(tmp_path, mapped_file_size_commit_log=FILE_SIZE, flush_interval_commit_log_ms=20)
    fill(store, (CACHE_DROP_STEP + 2 * WINDOW) // (BODY + 200))
    settle(store)
    assert all(cached for _offset, cached in written_pages(store))
    store.shutdown()


@async_test()
async def test_the_window_changes_at_runtime_through_update_broker_config(tmp_path: Path) -> None:
    async with running(tmp_path) as cluster:
        admin = AdminApi(cluster.client)
        assert (await admin.broker_config(cluster.addr))["commitLogCacheWindow"] == "0"
        await admin.update_broker_config(cluster.addr, {"commitLogCacheWindow": str(64 << 20)})
        assert cluster.broker.store_config.commit_log_cache_window == 64 << 20
        assert (await admin.broker_config(cluster.addr))["commitLogCacheWindow"] == str(64 << 20)
