"""Store benchmark: append (single and batched, async and sync flush, with dispatch to ConsumeQueue
and IndexFile), sequential reads, and recovery scan speed, each beside the machine's own limit
measured in the same run (raw mmap append, write + fdatasync, raw read with CRC)."""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from broker.node import settle_gc
from broker.protocol.message import body_crc
from broker.protocol.msgid import UniqKeyGenerator
from broker.store import message_store
from broker.store.config import StoreConfig
from broker.store.message_store import GetStatus, MessageStore, PutMessage

Result = dict[str, object]
BODY = b"x" * 1024
TOPIC = "BenchTopic"
QUEUES = 8
# the package build compiles the store with mypyc (see setup.py); say which one ran
BUILD = "mypyc" if not message_store.__file__.endswith(".py") else "pure Python"


def _result(
    name: str,
    value: float,
    unit: str,
    *,
    target: float | None = None,
    baseline: tuple[str, float] | None = None,
    note: str = "",
) -> Result:
    return {
        "name": name,
        "value": round(value, 1),
        "unit": unit,
        "target": target,
        "baseline": baseline[0] if baseline else None,
        "baseline_value": round(baseline[1], 1) if baseline else None,
        "note": note,
    }


def _messages(n: int) -> list[PutMessage]:
    gen = UniqKeyGenerator()
    return [
        PutMessage(TOPIC, i % QUEUES, BODY, {"TAGS": "TagA", "KEYS": f"order-{i}", "UNIQ_KEY": gen.next()})
        for i in range(n)
    ]


def _store(root: Path, **overrides: object) -> MessageStore:
    cfg = StoreConfig(store_path=root)
    for key, value in overrides.items():
        setattr(cfg, key, value)
    store = MessageStore(cfg)
    store.start()
    return store


def machine_mmap_append(root: Path, n: int) -> float:
    """Raw mmap append of the same record size into a preallocated file: msg/s."""
    import mmap

    record = b"r" * (len(BODY) + 170)
    step = len(record)
    size = n * step
    path = root / "raw.bin"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.posix_fallocate(fd, 0, size)
    mm = mmap.mmap(fd, size)
    began = time.perf_counter()
    pos = 0
    for _ in range(n):
        mm[pos : pos + step] = record
        pos += step
    elapsed = time.perf_counter() - began
    mm.close()
    os.close(fd)
    path.unlink()
    return n / elapsed


def machine_write_fdatasync(root: Path, batches: int, batch_bytes: int) -> float:
    """Sequential write of ``batch_bytes`` then fdatasync, repeated: bytes/s the disk commits."""
    path = root / "sync.bin"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.posix_fallocate(fd, 0, batches * batch_bytes)
    chunk = b"s" * batch_bytes
    began = time.perf_counter()
    for _ in range(batches):
        os.write(fd, chunk)
        os.fdatasync(fd)
    elapsed = time.perf_counter() - began
    os.close(fd)
    path.unlink()
    return batches * batch_bytes / elapsed


def _timed_appends(store: MessageStore, msgs: list[PutMessage], batch: int, threads: int) -> float:
    """msg/s for ``threads`` appenders each putting its share in batches (put_messages waits for
    the disk under SYNC_FLUSH, so several appenders share each group commit)."""
    shares = [msgs[i::threads] for i in range(threads)]
    errors: list[str] = []

    def work(share: list[PutMessage]) -> None:
        for i in range(0, len(share), batch):
            r = store.put_messages(share[i : i + batch])
            if not r.ok:
                errors.append(f"{r.status.value}: {r.remark}")
                return

    workers = [threading.Thread(target=work, args=(s,)) for s in shares]
    began = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise RuntimeError(errors[0])
    return len(msgs) / elapsed


def _drain(store: MessageStore) -> int:
    got = 0
    for q in range(QUEUES):
        offset = 0
        while True:
            r = store.get_messages(TOPIC, q, offset, 32)
            if r.status is not GetStatus.FOUND:
                break
            got += len(r.records)
            offset = r.next_begin_offset
    return got


def _raw_read_crc(store: MessageStore) -> float:
    began = time.perf_counter()
    total = 0
    for mf in store.commitlog.files.files:
        view = memoryview(mf.mm)[: mf.wrote]
        for pos in range(0, len(view), 1 << 20):
            body_crc(view[pos : pos + (1 << 20)])
        total += mf.wrote
        view.release()
    return total / (time.perf_counter() - began)


def run(quick: bool) -> list[Result]:
    thresholds = gc.get_threshold()
    try:
        return _run(quick)
    finally:  # the suites after this one get the collector as it was
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def _run(quick: bool) -> list[Result]:
    n = 100_000 if quick else 1_000_000
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench_store_", dir=os.environ.get("RMQ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        mmap_limit = machine_mmap_append(root, n)
        sync_bytes = machine_write_fdatasync(root, 300 if quick else 2000, 32 * (len(BODY) + 170))
        sync_limit = sync_bytes / (len(BODY) + 170)
        results.append(
            _result("machine_mmap_append_1k", mmap_limit, "msg/s", note="raw mmap copy, no encoding")
        )
        results.append(
            _result(
                "machine_write_fdatasync_32k",
                sync_limit,
                "msg/s",
                note=f"{sync_bytes / 1e6:.0f} MB/s committed",
            )
        )
        msgs = _messages(n)
        # The collector as `rmq up` sets it once serving: the long-lived objects (here the messages to
        # append) frozen out of full collections, young ones collected less often.
        settle_gc()
        cases: list[tuple[str, dict[str, object], int, int, float | None, tuple[str, float]]] = [
            ("append_single_async", {}, 1, 1, None, ("machine_mmap_append_1k", mmap_limit)),
            ("append_batch32_async", {}, 32, 1, 250_000.0, ("machine_mmap_append_1k", mmap_limit)),
            ("append_batch32_sync_8_threads", {"flush_disk_type": "SYNC_FLUSH"}, 32, 8, 100_000.0,
             ("machine_write_fdatasync_32k", sync_limit)),
        ]  # fmt: skip
        repeats = 1 if quick else 3  # the targeted cases: a median, since one run can catch a noisy moment
        for name, overrides, batch, threads, target, baseline in cases:
            rates = []
            for _ in range(repeats if target else 1):
                store_root = root / name
                store = _store(store_root, **overrides)
                count = n if batch > 1 else n // 4
                rates.append(_timed_appends(store, msgs[:count], batch, threads))
                store.shutdown()
                shutil.rmtree(store_root)
            runs = f"; median of {len(rates)}: {min(rates):,.0f}–{max(rates):,.0f}" if len(rates) > 1 else ""
            results.append(
                _result(
                    name,
                    statistics.median(rates),
                    "msg/s",
                    target=target,
                    baseline=baseline,
                    note=f"1 KiB, CQ + 2 index keys, {BUILD}{runs}",
                )
            )

        store_root = root / "read"
        store = _store(store_root)
        _timed_appends(store, msgs, 32, 1)
        began = time.perf_counter()
        got = _drain(store)
        read_rate = got / (time.perf_counter() - began)
        results.append(
            _result("read_sequential_32", read_rate, "msg/s", baseline=("machine_mmap_append_1k", mmap_limit),
                    note="ConsumeQueue walk + record fetch, 32 per call")
        )  # fmt: skip
        raw_read = _raw_read_crc(store)
        scan_began = time.perf_counter()
        scan = store.commitlog.scan(store.commitlog.min_offset)
        scan_rate = scan.bytes / (time.perf_counter() - scan_began)
        store.shutdown()
        results.append(_result("machine_read_crc32", raw_read / 1e6, "MB/s", note="CRC32 over mapped bytes"))
        results.append(
            _result("recovery_scan", scan_rate / 1e6, "MB/s", target=300.0,
                    baseline=("machine_read_crc32", raw_read / 1e6),
                    note=f"record checks incl. body CRC, {BUILD}")
        )  # fmt: skip
    return results
