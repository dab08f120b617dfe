"""Executor-side reading of one queue range into Arrow record batches.

From a store folder: the queue's ConsumeQueue files and the CommitLog are memory-mapped read-only;
units are cut into columns, filtered by tags code, and runs of records that lie back to back in the
CommitLog are copied with one slice each. From a cluster: PULL_MESSAGE requests, several in flight,
each answer decoded as it is (its body is the same record layout).
"""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from admin.pipelines import arrow as A
from admin.pipelines.plan import QueueRange, ReadSpec

UNIT: Final = 20
ROWS_PER_BATCH: Final = 8192
PULL_BYTES: Final = 4 * 1024 * 1024
PULLS_IN_FLIGHT: Final = 4


class DataLossError(RuntimeError):
    """Messages of the range are gone (retention) and failOnDataLoss is on."""


def exact_filter(batch: pa.RecordBatch, spec: ReadSpec, rng: QueueRange) -> pa.RecordBatch:
    """Apply what the planner cannot do exactly: the offset range, tags and store-time bounds."""
    mask = pc.and_(pc.greater_equal(batch["queueOffset"], rng.start), pc.less(batch["queueOffset"], rng.end))
    tags = spec.tag_set
    if tags is not None:
        mask = pc.and_(
            mask, pc.fill_null(pc.is_in(batch["tags"], pa.array(sorted(tags), pa.string())), False)
        )
    for bound, cmp in ((spec.ts_min, pc.greater_equal), (spec.ts_max, pc.less)):
        if bound is not None:
            mask = pc.and_(mask, cmp(batch["storeTimestamp"], pa.scalar(bound * 1000, A.TS)))
    return batch if pc.all(mask).as_py() else batch.filter(mask)


def read_range(spec: ReadSpec, rng: QueueRange) -> Iterator[pa.RecordBatch]:
    source = read_store(spec, rng) if spec.store_path else read_cluster(spec, rng)
    for batch in source:
        batch = exact_filter(batch, spec, rng)
        if batch.num_rows:
            yield batch


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
        code_set = None if codes is None else pa.array(sorted(codes), pa.int64())
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
            count = len(units) // UNIT
            yield from _records(commitlog, units, code_set, spec, rng)
            offset += count
    finally:
        cq.close()
        commitlog.close()


def _units(cq: object, start: int, end: int) -> bytes | None:
    """The 20-byte units ``[start, end)`` of a ConsumeQueue (one file at most), None if not there."""
    from broker.store.consume_queue import ConsumeQueue

    assert isinstance(cq, ConsumeQueue)
    pos = start * UNIT
    mf = cq.files.find(pos)
    if mf is None:
        return None
    rel = pos - mf.file_from
    stop = min(mf.size, rel + (end - start) * UNIT)
    return mf.mm[rel:stop]


def _records(
    commitlog: object, units: bytes, codes: pa.Array | None, spec: ReadSpec, rng: QueueRange
) -> Iterator[pa.RecordBatch]:
    from broker.store.commitlog import CommitLog

    assert isinstance(commitlog, CommitLog)
    n = len(units) // UNIT
    block = pa.Array.from_buffers(pa.binary(UNIT), n, [None, pa.py_buffer(units)])
    phys = A.field(block, 0, 8)
    size = A.field(block, 8, 4)
    if codes is not None:
        keep = pc.is_in(A.field(block, 12, 8), value_set=codes)
        phys, size = phys.filter(keep), size.filter(keep)
        n = len(phys)
    if n == 0:
        return
    cl_min = commitlog.min_offset
    if pc.min(phys).as_py() < cl_min:
        if spec.fail_on_data_loss:
            raise DataLossError(
                f"{rng.queue.topic}/{rng.queue.queue_id}: messages before CommitLog offset {cl_min} are gone"
            )
        keep = pc.greater_equal(phys, cl_min)
        phys, size = phys.filter(keep), size.filter(keep)
        n = len(phys)
        if n == 0:
            return
    ends = pc.add(phys, size.cast(pa.int64()))
    # runs of records that lie back to back in the CommitLog
    breaks = pc.indices_nonzero(pc.not_equal(phys.slice(1), ends.slice(0, n - 1))).to_pylist()
    run_starts = [0, *(b + 1 for b in breaks)]
    run_ends = [*(b + 1 for b in breaks), n]
    phys_l = phys.to_pylist()
    ends_l = ends.to_pylist()
    chunks: list[bytes] = []
    for a, b in zip(run_starts, run_ends, strict=True):
        lo, hi = phys_l[a], ends_l[b - 1]
        while lo < hi:  # a run never spans files, but read defensively
            mf = commitlog.files.find(lo)
            if mf is None:
                raise DataLossError(f"CommitLog offset {lo} is not in the store")
            rel = lo - mf.file_from
            take = min(hi, mf.file_end) - lo
            chunks.append(mf.mm[rel : rel + take])
            lo += take
    data = b"".join(chunks)
    starts = array("i", [0])
    rel_ends = A.to_i32(pc.cumulative_sum(size))
    starts.extend(rel_ends[:-1])
    yield A.decode(data, starts, rng.queue.topic, rng.queue.broker)


# -- running cluster --------------------------------------------------------------------------
def read_cluster(spec: ReadSpec, rng: QueueRange) -> Iterator[pa.RecordBatch]:
    """Pull ``[start, end)`` with several requests in flight; batches come back as answers arrive."""
    loop = asyncio.new_event_loop()
    try:
        gen = _pull_all(spec, rng)
        while True:
            try:
                batch = loop.run_until_complete(gen.__anext__())
            except StopAsyncIteration:
                break
            yield batch
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def _pull_all(spec: ReadSpec, rng: QueueRange):  # type: ignore[no-untyped-def]
    from broker.client.api import request
    from broker.client.pull import FLAG_SUBSCRIPTION
    from broker.client.remoting_client import RemotingClient
    from broker.protocol import headers as H
    from broker.protocol.codes import RequestCode, ResponseCode

    ref = rng.queue
    sub = " || ".join(sorted(spec.tag_set)) if spec.tag_set else "*"
    client = RemotingClient()
    step = spec.pull_batch_size
    todo = [(s, min(rng.end, s + step)) for s in range(rng.start, rng.end, step)]
    todo.reverse()

    async def pull(a: int, b: int) -> tuple[int, int, int, bytes | None, str | None]:
        header = H.PullMessageRequestHeader(
            consumerGroup=spec.consumer_group or "rmqkit-spark", topic=ref.topic, queueId=ref.queue_id,
            queueOffset=a, maxMsgNums=b - a, sysFlag=FLAG_SUBSCRIPTION, commitOffset=0,
            suspendTimeoutMillis=0, subscription=sub, subVersion=0, expressionType="TAG",
            maxMsgBytes=PULL_BYTES, bname=ref.broker,
        )  # fmt: skip
        r = await client.invoke(ref.addr, request(RequestCode.PULL_MESSAGE, header), spec.timeout)
        nxt = (
            H.PullMessageResponseHeader.from_ext_fields(r.ext_fields).nextBeginOffset
            if r.ext_fields
            else None
        )
        return r.code, b, int(nxt or a), r.body, r.remark

    try:
        running: set[asyncio.Task[tuple[int, int, int, bytes | None, str | None]]] = set()
        while todo or running:
            while todo and len(running) < PULLS_IN_FLIGHT:
                running.add(asyncio.ensure_future(pull(*todo.pop())))
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                code, b, nxt, body, remark = task.result()
                if code == ResponseCode.SUCCESS and body:
                    yield A.decode(body, A.record_starts(body), ref.topic, ref.broker)
                elif code == ResponseCode.PULL_OFFSET_MOVED or (
                    code == ResponseCode.PULL_NOT_FOUND and nxt < b and spec.fail_on_data_loss
                ):
                    if spec.fail_on_data_loss:
                        raise DataLossError(
                            f"{ref.topic}/{ref.broker}/{ref.queue_id}: offsets moved ({remark})"
                        )
                elif code not in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
                    raise RuntimeError(f"pull from {ref.addr} failed: code {code}: {remark}")
                if nxt < b and code in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY):
                    todo.append((max(nxt, 0), b))
    finally:
        await client.close()
