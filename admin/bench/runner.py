"""``rmq bench produce|consume``: drive a broker, then the transport-only baseline, and compare.

Each run resolves the topic's queues (creating the topic when it is missing), drives them for a
fixed time with a :class:`~admin.bench.load.Load` (the low-level client, the SDK, or both back to back),
reports every second through ``on_tick``, then repeats the same load with the low-level client against
:mod:`admin.bench.baseline` and gives the ratios broker / baseline and SDK / low-level.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from admin.bench.baseline import BaselineProcess, BaselineServer
from admin.bench.load import CONSUMER_GROUP, Load, QueueRef, RemotingLoad, RequestFailed
from admin.bench.sdk_load import SdkLoad
from admin.bench.stats import Rates, Recorder
from admin.errors import AdminError, BadInput, ConnectFailed, OperationFailed, Timeout
from broker.client.admin_api import AdminApi, RemoteError
from broker.protocol.bodies import TopicConfig, TopicRouteData
from broker.protocol.codes import ResponseCode
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingConnectError, RemotingError, RemotingTimeoutError

OnTick = Callable[[str, Rates], None]
"""Called once a second with the phase ("broker", "sdk" or "baseline") and the last second's rates."""
Measured = tuple[Rates, list[Rates], str | None]
"""A phase's total rates, its per-second rates and its first error."""

MAX_BODY = 4 * 1024 * 1024  # maxMessageSize
_ROUTE_WAIT = 15.0
_FILL_BATCH = 32
_FILL_TRIES = 10


class Flush(StrEnum):
    ASYNC = "async"
    SYNC = "sync"


class Client(StrEnum):
    """What drives the broker: the low-level remoting client, the SDK, or both one after the other."""

    REMOTING = "remoting"
    SDK = "sdk"
    BOTH = "both"


class Baseline(StrEnum):
    """Where the baseline server runs: off, in this process, or in a child process."""

    OFF = "off"
    INLINE = "inline"
    PROCESS = "process"


@dataclass(slots=True)
class BenchOptions:
    """One run. Exactly one of ``namesrv``, ``broker`` and ``embedded`` says what to drive."""

    topic: str = "BenchmarkTopic"
    namesrv: str | None = None
    broker: str | None = None
    embedded: bool = False
    connections: int = 1
    inflight: int = 32  # requests in flight per connection (ignored when producers > 0)
    producers: int = 0  # synchronous producers shared over the connections
    size: int = 1024
    batch: int = 1
    duration: float = 10.0
    warmup: float = 0.0
    flush: Flush = Flush.ASYNC
    queues: int = 8  # when the topic is created
    pull_batch: int = 32
    prefill: int = 100_000
    baseline: Baseline = Baseline.PROCESS
    client: Client = Client.REMOTING

    def validate(self) -> None:
        given = [name for name, v in (("--namesrv", self.namesrv), ("--broker", self.broker),
                                      ("--embedded", self.embedded)) if v]  # fmt: skip
        if len(given) != 1:
            raise BadInput("give exactly one of --namesrv, --broker and --embedded" +
                           (f", not {' and '.join(given)}" if given else ""))  # fmt: skip
        if self.size * self.batch > MAX_BODY:
            raise BadInput(
                f"--size x --batch is {self.size * self.batch} bytes, over the {MAX_BODY}-byte limit"
            )
        if not self.topic or len(self.topic) > 127:
            raise BadInput("--topic must be 1 to 127 characters")
        if self.broker and self.client is not Client.REMOTING:
            raise BadInput(f"--client {self.client.value} needs --namesrv or --embedded (the SDK routes)")

    @property
    def workers(self) -> int:
        return self.producers or self.connections * self.inflight


@dataclass(frozen=True, slots=True)
class BenchResult:
    """What ``rmq bench`` reports; docs/cli-json.md lists the JSON keys."""

    mode: str
    target: str
    topic: str
    queues: int
    connections: int
    workers: int
    size: int
    batch: int
    flush: str
    embedded: bool
    client: str
    broker: Rates  # the low-level client's run, or the SDK's with client "sdk"
    intervals: list[Rates]
    sdk: Rates | None  # the SDK's run with client "both"
    baseline: Rates | None
    ratio: float | None  # broker msgs/s / baseline msgs/s
    sdk_ratio: float | None  # sdk msgs/s / broker msgs/s
    first_error: str | None


def bench_produce(opts: BenchOptions, on_tick: OnTick) -> BenchResult:
    """Send for ``opts.duration`` seconds, then the same against the baseline."""
    opts.validate()
    return _run_loop(_produce(opts, on_tick))


def bench_consume(opts: BenchOptions, on_tick: OnTick) -> BenchResult:
    """Pull every queue of the topic (filled to ``opts.prefill`` first), then the baseline likewise."""
    opts.validate()
    return _run_loop(_consume(opts, on_tick))


def _run_loop(coro: Awaitable[BenchResult]) -> BenchResult:
    from broker.remoting.server import install_uvloop

    async def main() -> BenchResult:
        with _admin_errors():
            return await coro

    install_uvloop()
    return asyncio.run(main())


@contextlib.contextmanager
def _admin_errors() -> Iterator[None]:
    try:
        yield
    except AdminError:
        raise
    except RemotingConnectError as exc:
        raise ConnectFailed(exc.addr, str(exc).partition("failed: ")[2] or "connection refused") from None
    except RemotingTimeoutError as exc:
        raise Timeout(str(exc)) from None
    except (RemotingError, RemoteError) as exc:
        raise OperationFailed(str(exc)) from None


# -- what to drive --------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def embedded_cluster(flush: Flush) -> AsyncIterator[str]:
    """A NameServer and a broker in this process on a temporary store; yields the NameServer address."""
    from broker.namesrv.config import NamesrvConfig
    from broker.node import Node, NodePlan
    from broker.server.config import BrokerConfig
    from broker.store.config import StoreConfig

    with tempfile.TemporaryDirectory(prefix="rmq-bench-") as tmp:
        root = Path(tmp)
        plan = NodePlan(
            namesrv=NamesrvConfig(
                listen_port=0,
                kv_config_path=root / "kvConfig.json",
                config_store_path=root / "namesrv.properties",
            ),
            broker=BrokerConfig(
                listen_host="127.0.0.1",
                listen_port=0,
                ha_listen_port=0,  # any free port; nothing fixed, so runs never collide
                http_port=0,
                grpc_port=-1,
                broker_name="bench-broker",
            ),
            store=StoreConfig(
                store_path=root / "store",
                flush_disk_type="SYNC_FLUSH" if flush is Flush.SYNC else "ASYNC_FLUSH",
            ),
        )
        node = Node(plan)
        await node.start()
        try:
            async with asyncio.timeout(_ROUTE_WAIT):
                while not node.ready:
                    await asyncio.sleep(0.02)
            assert node.namesrv is not None
            yield f"127.0.0.1:{node.namesrv.port}"
        finally:
            await node.stop()


async def _route(api: AdminApi, namesrv: list[str], topic: str) -> TopicRouteData | None:
    try:
        route = await api.topic_route(namesrv, topic)
    except RemoteError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        raise
    return route if route.queueDatas else None


async def resolve_queues(api: AdminApi, opts: BenchOptions, namesrv: list[str]) -> list[QueueRef]:
    """Every readable and writable queue of the topic on its master brokers; creates the topic if needed."""
    if opts.broker:
        configs = await api.all_topic_config(opts.broker)
        config = configs.get(opts.topic)
        if config is None:
            config = TopicConfig(topicName=opts.topic, readQueueNums=opts.queues, writeQueueNums=opts.queues)
            await api.create_topic(opts.broker, config)
        return [QueueRef(opts.broker, q) for q in range(min(config.readQueueNums, config.writeQueueNums))]
    route = await _route(api, namesrv, opts.topic)
    if route is None:
        cluster = await api.cluster_info(namesrv)
        masters = [addr for b in cluster.brokerAddrTable.values() if (addr := b.brokerAddrs.get(0))]
        if not masters:
            raise OperationFailed(f"no broker is registered with {';'.join(namesrv)}")
        config = TopicConfig(topicName=opts.topic, readQueueNums=opts.queues, writeQueueNums=opts.queues)
        for addr in masters:
            await api.create_topic(addr, config)
        deadline = time.monotonic() + _ROUTE_WAIT
        while route is None:
            if time.monotonic() > deadline:
                raise Timeout(
                    f"topic {opts.topic} was created but its route did not appear in {_ROUTE_WAIT:g} s"
                )
            await asyncio.sleep(0.1)
            route = await _route(api, namesrv, opts.topic)
    masters_by_name = {b.brokerName: b.brokerAddrs.get(0) for b in route.brokerDatas}
    refs: list[QueueRef] = []
    for qd in sorted(route.queueDatas, key=lambda q: q.brokerName or ""):
        addr = masters_by_name.get(qd.brokerName)
        if addr:
            refs += [QueueRef(addr, q) for q in range(min(qd.readQueueNums, qd.writeQueueNums))]
    if not refs:
        raise OperationFailed(f"topic {opts.topic} has no queue on a master broker")
    return refs


@contextlib.asynccontextmanager
async def _target(opts: BenchOptions) -> AsyncIterator[tuple[AdminApi, list[str], str]]:
    """The admin API, the NameServer addresses (empty with --broker) and a description of the target."""
    client = RemotingClient()
    api = AdminApi(client)
    try:
        if opts.embedded:
            async with embedded_cluster(opts.flush) as namesrv:
                yield api, [namesrv], "embedded"
        elif opts.broker:
            yield api, [], opts.broker
        else:
            assert opts.namesrv is not None
            addrs = [a.strip() for a in opts.namesrv.split(";") if a.strip()]
            yield api, addrs, opts.namesrv
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def _baseline(opts: BenchOptions, pull_body: int = 0, pull_msgs: int = 0) -> AsyncIterator[str]:
    if opts.baseline is Baseline.INLINE:
        async with BaselineServer(pull_body, pull_msgs) as server:
            yield server.address
    else:
        async with BaselineProcess(pull_body, pull_msgs) as proc:
            yield proc.address


# -- driving ----------------------------------------------------------------------------------------
Worker = Callable[[int, Recorder], Awaitable[None]]


class _Phase:
    """Runs ``workers`` coroutines until the deadline, ticking once a second."""

    def __init__(self, label: str, opts: BenchOptions, on_tick: OnTick) -> None:
        self.label = label
        self.opts = opts
        self.on_tick = on_tick
        self.recorder = Recorder()
        self.stop_at = 0.0

    @property
    def running(self) -> bool:
        return asyncio.get_running_loop().time() < self.stop_at

    async def run(self, worker: Worker, count: int) -> tuple[Rates, list[Rates], str | None]:
        loop = asyncio.get_running_loop()
        began = loop.time()
        self.stop_at = began + self.opts.warmup + self.opts.duration
        tasks = {asyncio.create_task(self._loop(worker, i)) for i in range(count)}
        intervals: list[Rates] = []
        try:
            if self.opts.warmup > 0:
                await self._wait(tasks, began + self.opts.warmup)
                self.recorder = Recorder()
            # seconds counted from the window's planned start: a warm-up that overran its sleep
            # must not push the last tick past the end (then the last second would not be shown)
            tick = began + self.opts.warmup
            while not all(t.done() for t in tasks):
                tick += 1.0
                await self._wait(tasks, min(tick, self.stop_at))
                if loop.time() >= tick - 1e-3:
                    rates = self.recorder.tick()
                    intervals.append(rates)
                    self.on_tick(self.label, rates)
                if loop.time() >= self.stop_at:
                    await self._wait(tasks, self.stop_at + 30)  # the last requests in flight
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return self.recorder.total(), intervals, self.recorder.first_error

    async def _loop(self, worker: Worker, index: int) -> None:
        while self.running:
            await worker(index, self.recorder)

    @staticmethod
    async def _wait(tasks: set[asyncio.Task[None]], until: float) -> None:
        """Sleep until ``until``, or raise at once when a worker failed for good."""
        timeout = max(0.0, until - asyncio.get_running_loop().time())
        done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error


def _sender(load: Load, queues: list[QueueRef], connections: int, payload: int) -> Worker:
    nqueues = len(queues)
    counters: dict[int, int] = {}

    async def send(index: int, rec: Recorder) -> None:
        k = counters.get(index, index)
        counters[index] = k + 1
        began = time.perf_counter_ns()
        try:
            await load.send(index % connections, queues[k % nqueues])
        except (RequestFailed, RemotingTimeoutError) as exc:
            rec.fail(str(exc))
            return
        rec.add(load.batch, payload, time.perf_counter_ns() - began)

    return send


def _puller(
    load: Load, queues: list[QueueRef], bounds: list[tuple[int, int]], connections: int, max_nums: int
) -> Worker:
    cursors = [lo for lo, _ in bounds]
    nqueues = len(queues)
    counters: dict[int, int] = {}

    async def pull(index: int, rec: Recorder) -> None:
        k = counters.get(index, index)
        counters[index] = k + 1
        q = k % nqueues
        offset = cursors[q]
        lo, hi = bounds[q]
        cursors[q] = offset + max_nums if offset + max_nums < hi else lo  # page-cache data: read it again
        began = time.perf_counter_ns()
        try:
            got = await load.pull(index % connections, queues[q], offset, max_nums)
        except (RequestFailed, RemotingTimeoutError) as exc:
            rec.fail(str(exc))
            return
        rec.add(got.messages, got.nbytes, time.perf_counter_ns() - began)

    return pull


def _ratio(a: Rates | None, b: Rates | None) -> float | None:
    if a is None or b is None or b.msgs_per_sec <= 0:
        return None
    return round(a.msgs_per_sec / b.msgs_per_sec, 3)


def _result(
    mode: str, opts: BenchOptions, target: str, nqueues: int, runs: list[Measured], baseline: Rates | None,
    workers: int,
) -> BenchResult:  # fmt: skip
    rates, intervals, _ = runs[0]
    sdk = runs[1][0] if len(runs) > 1 else None
    return BenchResult(
        mode=mode, target=target, topic=opts.topic, queues=nqueues, connections=opts.connections,
        workers=workers, size=opts.size, batch=opts.batch if mode == "produce" else opts.pull_batch,
        flush=opts.flush.value, embedded=opts.embedded, client=opts.client.value, broker=rates,
        intervals=intervals, sdk=sdk, baseline=baseline, ratio=_ratio(rates, baseline),
        sdk_ratio=_ratio(sdk, rates), first_error=next((error for *_, error in runs if error), None),
    )  # fmt: skip


def _phases(client: Client) -> list[tuple[str, Client]]:
    """(label, client) of each measured phase; the first is reported as ``broker``."""
    if client is Client.BOTH:
        return [("broker", Client.REMOTING), ("sdk", Client.SDK)]
    return [("sdk" if client is Client.SDK else "broker", client)]


async def _open(client: Client, opts: BenchOptions, namesrv: list[str], batch: int) -> Load:
    if client is Client.SDK:
        return await SdkLoad.open(opts.topic, namesrv, connections=opts.connections, size=opts.size,
                                  batch=batch)  # fmt: skip
    return RemotingLoad(opts.topic, connections=opts.connections, size=opts.size, batch=batch)


async def _measure(phase: _Phase, load: Load, worker: Worker, count: int) -> Measured:
    """Run ``phase`` with ``count`` copies of ``worker``, then close ``load``."""
    try:
        return await phase.run(worker, count)
    finally:
        await load.close()


async def _produce(opts: BenchOptions, on_tick: OnTick) -> BenchResult:
    payload = opts.size * opts.batch
    async with _target(opts) as (api, namesrv, target):
        queues = await resolve_queues(api, opts, namesrv)
        runs: list[Measured] = []
        for label, client in _phases(opts.client):
            load = await _open(client, opts, namesrv, opts.batch)
            worker = _sender(load, queues, opts.connections, payload)
            runs.append(await _measure(_Phase(label, opts, on_tick), load, worker, opts.workers))
    base: Rates | None = None
    if opts.baseline is not Baseline.OFF:
        async with _baseline(opts) as addr:
            refs = [QueueRef(addr, q.queue_id) for q in queues]
            load = await _open(Client.REMOTING, opts, [], opts.batch)
            worker = _sender(load, refs, opts.connections, payload)
            base = (await _measure(_Phase("baseline", opts, on_tick), load, worker, opts.workers))[0]
    return _result("produce", opts, target, len(queues), runs, base, opts.workers)


async def _fill(opts: BenchOptions, queues: list[QueueRef], missing: int) -> None:
    """Send ``missing`` messages in batches of 32 over the topic's queues; a failed send (the broker
    busy, say) is retried after a pause, up to ``_FILL_TRIES`` times in a row."""
    batch = max(1, min(_FILL_BATCH, MAX_BODY // opts.size))
    load = RemotingLoad(opts.topic, connections=opts.connections, size=opts.size, batch=batch)
    sent = 0

    async def worker(index: int) -> None:
        nonlocal sent
        failures = 0
        while sent < missing:
            queue = queues[sent // batch % len(queues)]  # every queue in turn, whichever worker sends
            sent += batch
            try:
                await load.send(index % opts.connections, queue)
                failures = 0
            except (RequestFailed, RemotingTimeoutError) as exc:
                sent -= batch
                failures += 1
                if failures >= _FILL_TRIES:
                    raise OperationFailed(f"filling topic {opts.topic} failed: {exc}") from None
                await asyncio.sleep(0.05 * failures)

    try:
        await asyncio.gather(*(worker(i) for i in range(opts.connections * min(opts.inflight, 8))))
    finally:
        await load.close()


async def _consume(opts: BenchOptions, on_tick: OnTick) -> BenchResult:
    workers = opts.connections * opts.inflight
    async with _target(opts) as (api, namesrv, target):
        queues = await resolve_queues(api, opts, namesrv)
        for addr in sorted({q.addr for q in queues}):
            await api.create_group(addr, SubscriptionGroupConfig(groupName=CONSUMER_GROUP))
        bounds = await _offsets(api, opts.topic, queues)
        held = sum(hi - lo for lo, hi in bounds)
        if held < opts.prefill:
            await _fill(opts, queues, opts.prefill - held)
            bounds = await _offsets(api, opts.topic, queues)
        filled = [(q, b) for q, b in zip(queues, bounds, strict=True) if b[1] > b[0]]
        if not filled:
            raise OperationFailed(f"topic {opts.topic} holds no message to pull; use --prefill N")
        runs: list[Measured] = []
        for label, client in _phases(opts.client):
            load = await _open(client, opts, namesrv, 1)
            worker = _puller(
                load, [q for q, _ in filled], [b for _, b in filled], opts.connections, opts.pull_batch
            )
            runs.append(await _measure(_Phase(label, opts, on_tick), load, worker, workers))
        shape = None
        if opts.baseline is not Baseline.OFF:
            low = runs[0][0] if opts.client is not Client.SDK else None
            shape = await _pull_shape(opts, low, filled[0][0], filled[0][1][0])
    base: Rates | None = None
    if shape is not None:
        async with _baseline(opts, *shape) as addr:
            refs = [QueueRef(addr, q.queue_id) for q, _ in filled]
            load = await _open(Client.REMOTING, opts, [], 1)
            worker = _puller(load, refs, [(0, 1 << 62)] * len(refs), opts.connections, opts.pull_batch)
            base = (await _measure(_Phase("baseline", opts, on_tick), load, worker, workers))[0]
    return _result("consume", opts, target, len(queues), runs, base, workers)


async def _pull_shape(
    opts: BenchOptions, low: Rates | None, queue: QueueRef, offset: int
) -> tuple[int, int] | None:
    """Response body bytes and messages of the broker's pulls, for the baseline to answer alike: the
    low-level run's averages, or one low-level pull when only the SDK ran (it counts body bytes only)."""
    if low is not None:
        if not low.requests:
            return None
        return low.bytes // low.requests, max(1, round(low.messages / low.requests))
    load = RemotingLoad(opts.topic, connections=1, size=opts.size, batch=1)
    try:
        got = await load.pull(0, queue, offset, opts.pull_batch)
    except RequestFailed:
        return None
    finally:
        await load.close()
    return (got.nbytes, got.messages) if got.messages else None


async def _offsets(api: AdminApi, topic: str, queues: list[QueueRef]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for q in queues:
        out.append(
            (await api.min_offset(q.addr, topic, q.queue_id), await api.max_offset(q.addr, topic, q.queue_id))
        )
    return out
