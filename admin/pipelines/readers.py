"""Executor-side reading of one queue range into Arrow record batches.

From a store folder: the queue's ConsumeQueue files and the CommitLog are memory-mapped read-only;
a batch of 20-byte units is read as one numpy array, filtered by tags code, and its records are
decoded straight out of the mapped CommitLog file. From a cluster: PULL_MESSAGE requests, several in
flight; the answers' bodies (the same record layout) are decoded a few together as they arrive.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from admin.pipelines import arrow as A
from admin.pipelines.plan import QueueRange, ReadSpec

_QUEUE_OFFSET: Final = struct.Struct(">q")  # a record's queue offset, at byte 20
UNIT: Final = np.dtype([("phys", ">i8"), ("size", ">i4"), ("code", ">i8")])  # a ConsumeQueue unit
ROWS_PER_BATCH: Final = 8192
PULL_BYTES: Final = 4 * 1024 * 1024
PULLS_IN_FLIGHT: Final = 4


class DataLossError(RuntimeError):
    """Messages of the range are gone (retention) and failOnDataLoss is on."""


def exact_filter(batch: pa.RecordBatch, spec: ReadSpec, rng: QueueRange, *, sql: bool) -> pa.RecordBatch:
    """Apply what the planner cannot do exactly: the offset range, tags and an SQL92 selector (``sql``:
    the broker did not apply it already). Bounds are compared as Arrow scalars of the column's type:
    pyarrow converts a bare Python value on each call."""
    if batch.num_rows == 0:
        return batch
    offsets = batch["queueOffset"]
    tags = spec.tags
    selector = spec.selector if sql else None
    if tags is None and selector is None:
        low, high = pc.min_max(offsets).values()
        if rng.start <= low.as_py() and high.as_py() < rng.end:  # nearly always: nothing to drop
            return batch
    mask = pc.and_(
        pc.greater_equal(offsets, pa.scalar(rng.start, pa.int64())),
        pc.less(offsets, pa.scalar(rng.end, pa.int64())),
    )
    if tags is not None:
        mask = pc.and_(
            mask, pc.fill_null(pc.is_in(batch["tags"], pa.array(sorted(tags), pa.string())), False)
        )
    if selector is not None:  # properties are strings to the selector, so one Python call per message
        matches = [selector.matches(dict(p)) for p in batch["properties"].to_pylist()]
        mask = pc.and_(mask, pa.array(matches, pa.bool_()))
    return batch if pc.all(mask).as_py() else batch.filter(mask)


def read_range(spec: ReadSpec, rng: QueueRange) -> Iterator[pa.RecordBatch]:
    source = read_store(spec, rng) if spec.store_path else read_cluster(spec, rng)
    for batch in source:
        batch = exact_filter(batch, spec, rng, sql=bool(spec.store_path))
        if batch.num_rows:
            batch = A.kafka_view(batch) if spec.kafka else batch
            yield batch if spec.columns is None else A.project(batch, spec.columns)


# -- store folder -----------------------------------------------------------------------------
def read_store(spec: ReadSpec, rng: QueueRange) -> Iterator[pa.RecordBatch]:
    from broker.store.commitlog import CommitLog
    from broker.store.config import StoreConfig
    from broker.store.consume_queue import ConsumeQueue

    assert spec.store_path is not None
    root = Path(spec.store_path)
    cfg = StoreConfig.for_existing(root)
    commitlog = CommitLog(root / "commitlog", cfg.mapped_file_size_commit_log, read_only=True)
    cq = ConsumeQueue(
        root / "consumequeue", rng.queue.topic, rng.queue.queue_id, cfg.mapped_file_size_consume_queue_units,
        read_only=True,
    )  # fmt: skip
    try:
        commitlog.load()
        cq.load()
        codes = spec.tag_codes
        code_set = None if codes is None else np.array(sorted(codes), np.int64)
        offset = rng.start
        while offset < rng.end:
            units = _units(cq, offset, min(rng.end, offset + ROWS_PER_BATCH))
            if units is None:
                if spec.fail_on_data_loss:
                    raise DataLossError(
                        f"{rng.queue.topic}/{rng.queue.queue_id}: ConsumeQueue offset {offset} is gone"
                    )
                offset = max(offset + 1, cq.min_offset)
                continue
            yield from _records(commitlog, units, code_set, spec, rng)
            offset += len(units)
    finally:
        cq.close()
        commitlog.close()


def _units(cq: object, start: int, end: int) -> npt.NDArray[np.void] | None:
    """The units ``[start, end)`` of a ConsumeQueue (one file at most), None if not there."""
    from broker.store.consume_queue import ConsumeQueue

    assert isinstance(cq, ConsumeQueue)
    pos = start * UNIT.itemsize
    mf = cq.files.find(pos)
    if mf is None:
        return None
    rel = pos - mf.file_from
    stop = min(mf.size, rel + (end - start) * UNIT.itemsize)
    return np.frombuffer(mf.mm[rel:stop], UNIT)


def _records(
    commitlog: object,
    units: npt.NDArray[np.void],
    codes: npt.NDArray[np.int64] | None,
    spec: ReadSpec,
    rng: QueueRange,
) -> Iterator[pa.RecordBatch]:
    from broker.store.commitlog import CommitLog

    assert isinstance(commitlog, CommitLog)
    phys = units["phys"].astype(np.int64)
    size = units["size"].astype(np.int64)
    if codes is not None:
        keep = np.isin(units["code"], codes)
        phys, size = phys[keep], size[keep]
    if len(phys) == 0:
        return
    cl_min = commitlog.min_offset
    if int(phys.min()) < cl_min:
        if spec.fail_on_data_loss:
            raise DataLossError(
                f"{rng.queue.topic}/{rng.queue.queue_id}: messages before CommitLog offset {cl_min} are gone"
            )
        keep = phys >= cl_min
        phys, size = phys[keep], size[keep]
    i, n = 0, len(phys)
    while i < n:  # the records of one CommitLog file at a time (nearly always all of them)
        mf = commitlog.files.find(int(phys[i]))
        if mf is None:
            raise DataLossError(f"CommitLog offset {int(phys[i])} is not in the store")
        outside = np.flatnonzero((phys[i:] < mf.file_from) | (phys[i:] >= mf.file_end))
        j = n if len(outside) == 0 else i + int(outside[0])
        yield A.decode(mf.mm, phys[i:j] - mf.file_from, size[i:j], rng.queue.topic, rng.queue.broker)
        i = j


# -- running cluster --------------------------------------------------------------------------
def read_cluster(spec: ReadSpec, rng: QueueRange) -> Iterator[pa.RecordBatch]:
    """Pull ``[start, end)`` with several requests in flight; answers are decoded as they arrive, a
    few together (a pull answers at most ~1,000 messages; each decode has a fixed cost)."""
    loop = asyncio.new_event_loop()
    bodies: list[bytes] = []
    starts: list[npt.NDArray[np.int64]] = []
    sizes: list[npt.NDArray[np.int64]] = []
    size = records = 0
    try:
        answers = _pull_all(spec, rng)
        while True:
            try:
                body = loop.run_until_complete(answers.__anext__())
            except StopAsyncIteration:
                break
            at, lengths = A.record_starts(body)
            bodies.append(body)
            starts.append(at + size)
            sizes.append(lengths)
            size += len(body)
            records += len(at)
            if records >= ROWS_PER_BATCH:
                yield _decode(bodies, starts, sizes, rng)
                bodies, starts, sizes, size, records = [], [], [], 0, 0
        if bodies:
            yield _decode(bodies, starts, sizes, rng)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _decode(
    bodies: list[bytes], starts: list[npt.NDArray[np.int64]], sizes: list[npt.NDArray[np.int64]],
    rng: QueueRange,
) -> pa.RecordBatch:  # fmt: skip
    """The records of consecutive pull answers, decoded as one batch."""
    data = bodies[0] if len(bodies) == 1 else b"".join(bodies)
    return A.decode(data, np.concatenate(starts), np.concatenate(sizes), rng.queue.topic, rng.queue.broker)


def _before(body: bytes, end: int) -> bytes:
    """The records of a pull answer below queue offset ``end``: with a filter the broker answers up to
    maxMsgNums *matching* messages, which may lie past the end of the range asked for."""
    at, _ = A.record_starts(body)
    if not len(at) or _QUEUE_OFFSET.unpack_from(body, int(at[-1]) + 20)[0] < end:
        return body
    offsets = np.array([_QUEUE_OFFSET.unpack_from(body, int(a) + 20)[0] for a in at.tolist()], np.int64)
    keep = int(np.searchsorted(offsets, end))
    return body[: int(at[keep])] if keep < len(at) else body


async def _pull_all(spec: ReadSpec, rng: QueueRange) -> AsyncIterator[bytes]:
    """The bodies (back-to-back records) of the pull answers for ``[start, end)``, as they come."""
    from broker.acl.client import secure
    from broker.client.api import request
    from broker.client.pull import FLAG_SUBSCRIPTION
    from broker.client.remoting_client import RemotingClient, RemotingError
    from broker.protocol import headers as H
    from broker.protocol.codes import RequestCode, ResponseCode

    ref = rng.queue
    if spec.sql is not None:
        kind, sub = "SQL92", spec.sql
    else:
        kind, sub = "TAG", " || ".join(sorted(spec.tags)) if spec.tags else "*"
    filtered = sub != "*"
    client = secure(RemotingClient(), spec.security.client_security())
    step = spec.pull_batch_size
    todo = [(s, min(rng.end, s + step)) for s in range(rng.start, rng.end, step)]
    todo.reverse()

    async def pull(a: int, b: int) -> tuple[int, int, int, int, bytes | None, str | None]:
        header = H.PullMessageRequestHeader(
            consumerGroup=spec.consumer_group or "rmqkit-spark", topic=ref.topic, queueId=ref.queue_id,
            queueOffset=a, maxMsgNums=b - a, sysFlag=FLAG_SUBSCRIPTION, commitOffset=0,
            suspendTimeoutMillis=0, subscription=sub, subVersion=0, expressionType=kind,
            maxMsgBytes=PULL_BYTES, bname=ref.broker,
        )  # fmt: skip
        for attempt in range(spec.retries + 1):  # a broker restart or a dropped connection
            try:
                r = await client.invoke(ref.addr, request(RequestCode.PULL_MESSAGE, header), spec.timeout)
                break
            except RemotingError:
                if attempt == spec.retries:
                    raise
                await asyncio.sleep(spec.retry_interval * 2**attempt)
        nxt = (
            H.PullMessageResponseHeader.from_ext_fields(r.ext_fields).nextBeginOffset
            if r.ext_fields
            else None
        )
        return r.code, a, b, int(a if nxt is None else nxt), r.body, r.remark

    running: set[asyncio.Task[tuple[int, int, int, int, bytes | None, str | None]]] = set()
    try:
        while todo or running:
            while todo and len(running) < PULLS_IN_FLIGHT:
                running.add(asyncio.ensure_future(pull(*todo.pop())))
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                code, a, b, nxt, body, remark = task.result()
                if code == ResponseCode.SUCCESS and body:
                    body = _before(body, b) if filtered else body
                    if body:
                        yield body
                elif code == ResponseCode.PULL_OFFSET_MOVED or (
                    code == ResponseCode.PULL_NOT_FOUND and nxt < b and spec.fail_on_data_loss
                ):
                    if spec.fail_on_data_loss:
                        raise DataLossError(
                            f"{ref.topic}/{ref.broker}/{ref.queue_id}: offsets moved ({remark}); "
                            "set failOnDataLoss=false to skip what is gone"
                        )
                    # what is gone is skipped: go on from where the queue now starts, if inside the chunk
                    if a < nxt < b:
                        todo.append((nxt, b))
                    continue
                elif code not in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
                    raise RuntimeError(f"pull from {ref.addr} failed: code {code}: {remark}")
                if nxt < b and code in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY):
                    todo.append((max(nxt, 0), b))
    finally:
        for task in running:
            task.cancel()
        await client.close()
