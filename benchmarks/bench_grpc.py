"""gRPC benchmark: the official Python 5 client over gRPC against our SDK over remoting, one broker.

The broker runs as ``rmq up`` in its own process. Each round measures four windows of the same
length after a warm-up: gRPC sends (rocketmq-python-client 5.1.2, ``send_async`` with 64 in
flight), remoting sends (``broker.client.Producer``, 64 in flight, in this process), gRPC receives
(the official SimpleConsumer: 4 receiving threads, batches of 32, a batch's messages acked at once,
asynchronously, before its thread receives again) and remoting receives the same way (the SDK's
``SimpleConsumer``: 4 receiving tasks, POP_MESSAGE batches of 32, one ACK_MESSAGE per message, all of
a batch's at once). Each gRPC window runs two processes of the official client, in its own venv: one
is bound by its interpreter lock to a few thousand messages a second, and a broker's CPU per message
falls as its load grows. A fifth window reads with the SDK's ``LitePullConsumer`` (batches of 32,
offsets committed, no per-message ack), for scale. All receive from one backlog topic, each round with
new groups. All bodies are 1 KiB.

Two figures per direction compare the paths: throughput (msg/s) and the broker process's CPU time
per message (utime + stime from ``/proc/<pid>/stat`` across the window). The client of either path
may be the bottleneck, so CPU per message is the fairer "broker side" cost. Values are medians of the
rounds; each gRPC/remoting ratio is the median of the rounds' own ratios (both paths measured back to
back), so a machine that slows down during the run does not tilt it.

A third figure per direction is gRPC's own floor, measured in the same rounds: the broker's gRPC
server (:mod:`broker.grpc.calls`) bare, in its own process on the broker's event loop, answering
the same call pattern with canned bytes, driven by plain grpcio: one unary call per send; per 32
received messages one server stream of 34 responses and 32 unary acks sent at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]

from broker.client import Message, Producer
from broker.client.admin_api import AdminApi
from broker.client.consumer_base import ConsumeFrom
from broker.client.lite_consumer import LitePullConsumer
from broker.client.message import SendStatus
from broker.client.remoting_client import RemotingClient
from broker.client.simple_consumer import SimpleConsumer
from broker.grpc.calls import NativeGrpcServer
from broker.protocol.bodies import TopicConfig
from broker.remoting.server import install_uvloop
from tests.broker.grpc.attacks import Node, rmq_up

Result = dict[str, object]
DRIVER = Path(__file__).resolve().parents[1] / "tests" / "broker" / "grpc" / "drivers" / "py5_bench.py"
BODY = b"x" * 1024
INFLIGHT = 64
RECEIVE_THREADS = 4
CLIENT_PROCESSES = 2  # of the official client, in each gRPC window
BATCH = 32
QUEUES = 8
WARMUP_S = 1.0
TICKS = os.sysconf("SC_CLK_TCK")
FLOOR_SERVICE = "bench.Floor"


@dataclass(frozen=True, slots=True)
class Window:
    """Messages done in a measured window and the broker's CPU seconds over it."""

    count: int
    seconds: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds

    @property
    def cpu_us(self) -> float:
        return self.cpu / max(self.count, 1) * 1e6


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15)


# == gRPC: the official client in its own process ================================================
def _grpc_window(python: Path, node: Node, mode: str, topic: str, seconds: float, group: str) -> Window:
    """Runs the driver; the broker's CPU is read when it reports the window's start and end."""
    args = [str(python), str(DRIVER), "--endpoints", node.grpc, "--topic", topic, mode, "--group", group,
            "--seconds", f"{seconds:g}", "--inflight", str(INFLIGHT), "--threads", str(RECEIVE_THREADS),
            "--batch", str(BATCH), "--size", str(len(BODY)),
            "--processes", str(CLIENT_PROCESSES)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    with tempfile.TemporaryDirectory(prefix="bench-grpc-home-") as home:
        env["HOME"] = home  # the client writes its logs under $HOME/logs
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=DRIVER.parent)  # fmt: skip
        assert proc.stdout is not None
        cpu: dict[str, float] = {}
        summary: dict[str, object] = {}
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("event")
            if kind in ("go", "done"):
                cpu[kind] = _cpu_seconds(node.pid)
            elif kind == "summary":
                summary = event
        _, stderr = proc.communicate(timeout=60)
    if proc.returncode != 0 or len(cpu) != 2:
        raise RuntimeError(f"py5 {mode} driver failed ({proc.returncode}): {summary} {stderr[-2000:]}")
    count, elapsed = summary["count"], summary["elapsed"]
    assert isinstance(count, int) and isinstance(elapsed, float)
    return Window(count, elapsed, cpu["done"] - cpu["go"])


# == remoting: our SDK in this process ===========================================================
class _Meter:
    """Counts completions from the first one on; :meth:`window` measures after the warm-up.

    With a ``limit`` (a backlog of that many messages), a window in which the backlog runs dry ends
    with its last message, so the rate is not diluted by the idle rest.
    """

    def __init__(self, pid: int, limit: int | None = None) -> None:
        self.pid = pid
        self.limit = limit
        self.count = 0
        self.last = 0.0  # perf_counter of the last completion
        self.started = asyncio.Event()

    def add(self, n: int = 1) -> None:
        self.count += n
        if n:
            self.last = time.perf_counter()
            self.started.set()

    async def window(self, seconds: float) -> Window:
        await self.started.wait()
        # A fast consumer can drain a backlog within the warm-up: with a limit, measuring starts once a
        # tenth of it is read, if that comes first, so most of the backlog falls inside the window.
        warm_until = time.perf_counter() + WARMUP_S
        while time.perf_counter() < warm_until and not (self.limit and self.count >= self.limit // 10):
            await asyncio.sleep(0.01)
        first, cpu, began = self.count, _cpu_seconds(self.pid), time.perf_counter()
        await asyncio.sleep(seconds)
        end = time.perf_counter()
        if self.limit is not None and self.count >= self.limit:
            if self.count == first:
                raise RuntimeError(f"the backlog of {self.limit:,} ran dry before the window; raise it")
            end = self.last
        return Window(self.count - first, end - began, _cpu_seconds(self.pid) - cpu)


async def _remoting_send(node: Node, topic: str, seconds: float) -> Window:
    meter = _Meter(node.pid)
    stop = asyncio.Event()
    async with Producer("bench-grpc-pg", node.namesrv, compress_over=len(BODY) + 1) as producer:

        async def sender() -> None:
            while not stop.is_set():
                result = await producer.send(Message(topic, BODY))
                if result.status is not SendStatus.SEND_OK:
                    raise RuntimeError(f"send answered {result.status}")
                meter.add()

        tasks = [asyncio.create_task(sender()) for _ in range(INFLIGHT)]
        try:
            window = await meter.window(seconds)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
    return window


async def _remoting_receive(node: Node, topic: str, group: str, seconds: float, backlog: int) -> Window:
    meter = _Meter(node.pid, backlog)
    consumer = LitePullConsumer(
        group, node.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, pull_batch_size=BATCH
    )
    consumer.subscribe(topic)
    async with consumer:

        async def poller() -> None:
            while True:
                meter.add(len(await consumer.poll(1.0)))

        task = asyncio.create_task(poller())
        try:
            window = await meter.window(seconds)
        finally:
            task.cancel()
    return window


async def _remoting_pop(node: Node, topic: str, group: str, seconds: float, backlog: int) -> Window:
    """The SimpleConsumer as the gRPC driver consumes: receivers of batches, each acking every
    message (concurrently) before receiving again."""
    meter = _Meter(node.pid, backlog)
    consumer = SimpleConsumer(group, node.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, await_duration=1.0)
    consumer.subscribe(topic)
    async with consumer:

        async def receiver() -> None:
            while True:
                messages = await consumer.receive(BATCH, 30.0)
                await asyncio.gather(*map(consumer.ack, messages))
                meter.add(len(messages))

        tasks = [asyncio.create_task(receiver()) for _ in range(RECEIVE_THREADS)]
        try:
            window = await meter.window(seconds)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return window


async def _prepare(node: Node, topics: list[str], backlog_topic: str, backlog: int) -> None:
    """Creates the topics, waits until the NameServer routes them (consumers rebalance on the
    route) and fills the backlog the receive windows read from."""
    api = AdminApi(RemotingClient(), timeout=10.0)
    try:
        for topic in topics:
            await api.create_topic(
                node.broker, TopicConfig(topicName=topic, readQueueNums=QUEUES, writeQueueNums=QUEUES)
            )
        routed = set(await api.topic_list([node.namesrv]))
        while not routed.issuperset(topics):
            await asyncio.sleep(0.1)
            routed = set(await api.topic_list([node.namesrv]))
    finally:
        await api.client.close()
    async with Producer("bench-grpc-fill", node.namesrv, compress_over=len(BODY) + 1) as producer:
        for _ in range(backlog // BATCH):
            await producer.send_batch([Message(backlog_topic, BODY) for _ in range(BATCH)])


# == gRPC's floor: canned answers from the bare gRPC server ======================================
def serve_floor() -> None:
    """Prints the port, then answers until killed (run in its own process by :func:`floor_process`)."""
    install_uvloop()  # as ``rmq up`` does
    asyncio.run(_serve_floor())


async def _serve_floor() -> None:
    reply = b"r" * 64
    message = b"m" * (len(BODY) + 250)  # about a ReceiveMessageResponse carrying a 1 KiB body

    async def unary(request: bytes, context: Any) -> bytes:
        return reply

    async def stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
        for _ in range(BATCH + 2):  # status, delivery time, the messages
            yield message

    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Stream": grpc.unary_stream_rpc_method_handler(stream),
    }
    server = NativeGrpcServer([grpc.method_handlers_generic_handler(FLOOR_SERVICE, handlers)])
    print(await server.start("127.0.0.1", 0), flush=True)
    await asyncio.Event().wait()


@contextmanager
def floor_process() -> Iterator[tuple[str, int]]:
    """(address, pid) of a running :func:`serve_floor`."""
    code = "from benchmarks.bench_grpc import serve_floor; serve_floor()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"127.0.0.1:{int(proc.stdout.readline())}", proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


def _call_metadata() -> tuple[tuple[str, str], ...]:
    """The headers the official client sends with every call (request id and signature change)."""
    return (
        ("x-mq-language", "PYTHON"),
        ("x-mq-protocol", "GRPC_V2"),
        ("x-mq-client-version", "5.1.2"),
        ("x-mq-date-time", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())),
        ("x-mq-request-id", str(uuid.uuid4())),
        ("x-mq-client-id", "bench@floor"),
        ("x-mq-namespace", ""),
        (
            "authorization",
            f"MQv2-HMAC-SHA1 Credential=, SignedHeaders=x-mq-date-time, Signature={os.urandom(20).hex()}",
        ),
    )


def _floor_window(address: str, pid: int, mode: str, seconds: float) -> Window:
    stop = threading.Event()
    lock = threading.Lock()
    done = [0]

    def add(n: int) -> None:
        with lock:
            done[0] += n

    channel = grpc.insecure_channel(address)
    unary = channel.unary_unary(f"/{FLOOR_SERVICE}/Unary")
    stream = channel.unary_stream(f"/{FLOOR_SERVICE}/Stream")
    slots = threading.Semaphore(INFLIGHT)

    def sent(_: Future[Any]) -> None:
        slots.release()
        add(1)

    def sender() -> None:
        request = b"s" * (len(BODY) + 300)  # about a SendMessageRequest of a 1 KiB body
        while not stop.is_set():
            slots.acquire()
            unary.future(request, metadata=_call_metadata()).add_done_callback(sent)

    def receiver() -> None:
        while not stop.is_set():
            received = sum(1 for _ in stream(b"r", metadata=_call_metadata())) - 2
            ack = b"a" * 200
            for call in [unary.future(ack, metadata=_call_metadata()) for _ in range(received)]:
                call.result()
            add(received)

    workers = [threading.Thread(target=sender)] if mode == "send" else [
        threading.Thread(target=receiver) for _ in range(RECEIVE_THREADS)
    ]  # fmt: skip
    for worker in workers:
        worker.start()
    try:
        time.sleep(WARMUP_S)
        first, cpu, began = done[0], _cpu_seconds(pid), time.perf_counter()
        time.sleep(seconds)
        return Window(done[0] - first, time.perf_counter() - began, _cpu_seconds(pid) - cpu)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
        for _ in range(INFLIGHT):  # the last sends
            slots.acquire(timeout=10)
        channel.close()


# == results ====================================================================================
def _pair(name: str, grpc: list[float], remoting: list[float], unit: str, note: str) -> Result:
    """A gRPC figure beside its remoting baseline, with the 50 % target in the row's own sense. The
    efficiency is the median of the rounds' own ratios: each round measures both paths back to back,
    so a machine that slows down during the run (a 2-vCPU VM's neighbours) moves both sides of a ratio."""
    g, r = statistics.median(grpc), statistics.median(remoting)
    cost = unit == "us"
    ratios = [
        (rr / gg if cost else gg / rr) if gg and rr else 0.0 for gg, rr in zip(grpc, remoting, strict=True)
    ]
    efficiency = statistics.median(ratios)
    met = "meets" if efficiency >= 0.5 else "misses"
    rounds = ", ".join(f"{x:.2f}" for x in ratios)
    return {
        "name": name,
        "value": round(g, 1),
        "unit": unit,
        "target": round(2 * r if cost else 0.5 * r, 1),
        "baseline": f"remoting_{name.split('_', 1)[1]}",
        "baseline_value": round(r, 1),
        "met": efficiency >= 0.5,
        "note": f"gRPC/remoting {'CPU efficiency' if cost else 'rate'} {efficiency:.2f} "
        f"({met} 0.5; rounds {rounds}); {note}",
    }


def _check_room(folder: Path, backlog: int) -> None:
    """The broker deletes a store's oldest files once the disk is over ``diskMaxUsedSpaceRatio`` (75 %)
    full; then the gRPC receivers, new groups that start at the end of a queue that has lost
    messages, would find nothing to receive."""
    usage = shutil.disk_usage(folder)
    need = backlog * (len(BODY) + 300) * 2  # the backlog and the sends of the rounds
    if (usage.used + need) / usage.total > 0.75:
        raise RuntimeError(
            f"the disk of {folder} would be over 75 % full with the run's {need / 2**30:.1f} GiB: "
            "the broker would delete the backlog's oldest files; free some room"
        )


def run(quick: bool) -> list[Result]:
    from tests.broker.grpc.peers5 import install_python5_client

    python = install_python5_client()
    rounds, seconds = (1, 3.0) if quick else (3, 5.0)
    backlog = 400_000 if quick else 1_000_000  # more than the pull consumer reads in a window
    windows: dict[str, dict[str, list[Window]]] = {
        kind: {"grpc": [], "remoting": [], "floor": []} for kind in ("send", "receive")
    }
    send, receive = windows["send"], windows["receive"]
    pulls: list[Window] = []
    topics = ["BenchGrpcSend", "BenchRemotingSend", "BenchBacklog"]
    with (
        tempfile.TemporaryDirectory(prefix="bench_grpc_") as tmp,
        rmq_up(Path(tmp) / "store") as node,
        floor_process() as (floor, floor_pid),
    ):
        _check_room(Path(tmp), backlog)
        asyncio.run(_prepare(node, topics, "BenchBacklog", backlog))
        for i in range(rounds):
            send["grpc"].append(_grpc_window(python, node, "send", "BenchGrpcSend", seconds, "unused"))
            send["remoting"].append(asyncio.run(_remoting_send(node, "BenchRemotingSend", seconds)))
            receive["grpc"].append(
                _grpc_window(python, node, "receive", "BenchBacklog", seconds, f"bench-grpc-{i}")
            )
            receive["remoting"].append(
                asyncio.run(_remoting_pop(node, "BenchBacklog", f"bench-pop-{i}", seconds, backlog))
            )
            pulls.append(
                asyncio.run(_remoting_receive(node, "BenchBacklog", f"bench-remoting-{i}", seconds, backlog))
            )
            for kind, pair in windows.items():
                pair["floor"].append(_floor_window(floor, floor_pid, kind, seconds))
                g, r, f = pair["grpc"][-1], pair["remoting"][-1], pair["floor"][-1]
                print(f"#   round {i + 1} {kind}: gRPC {g.rate:,.0f} msg/s {g.cpu_us:,.1f} us/msg, "
                      f"remoting {r.rate:,.0f} msg/s {r.cpu_us:,.1f} us/msg, "
                      f"bare server {f.rate:,.0f} msg/s {f.cpu_us:,.1f} us/msg",
                      file=sys.stderr)  # fmt: skip
            print(f"#   round {i + 1} pull: {pulls[-1].rate:,.0f} msg/s {pulls[-1].cpu_us:,.1f} us/msg",
                  file=sys.stderr)  # fmt: skip
    shape = f"1 KiB, median of {rounds} x {seconds:g} s"
    notes = {
        "send": f"send_async vs Producer.send, {INFLIGHT} in flight each, {CLIENT_PROCESSES} gRPC clients; "
        f"{shape}",
        "receive": f"SimpleConsumer receive+ack over gRPC vs over remoting, {RECEIVE_THREADS} receivers "
        f"each, {CLIENT_PROCESSES} gRPC clients, batches of {BATCH}, one ack per message; {shape}",
    }
    rates = [
        _pair(
            f"grpc_{kind}", [w.rate for w in p["grpc"]], [w.rate for w in p["remoting"]], "msg/s", notes[kind]
        )
        for kind, p in windows.items()
    ]
    costs = [
        _pair(f"grpc_{kind}_broker_cpu", [w.cpu_us for w in p["grpc"]], [w.cpu_us for w in p["remoting"]],
              "us", "broker CPU per message")
        for kind, p in windows.items()
    ]  # fmt: skip
    floors: list[Result] = []
    for kind, p in windows.items():
        floor_us = statistics.median(w.cpu_us for w in p["floor"])
        grpc_us = statistics.median(w.cpu_us for w in p["grpc"])
        floors.append({
            "name": f"grpc_{kind}_floor_cpu",
            "value": round(floor_us, 1),
            "unit": "us",
            "baseline": f"grpc_{kind}_broker_cpu",
            "baseline_value": round(grpc_us, 1),
            "note": f"the bare gRPC server answering the same calls with canned bytes: its CPU per message; "
                    f"the broker spends {grpc_us - floor_us:,.0f} us more",
        })  # fmt: skip
    pull_rate = statistics.median(w.rate for w in pulls)
    pull_cpu = statistics.median(w.cpu_us for w in pulls)
    pull = {
        "name": "remoting_pull_broker_cpu",
        "value": round(pull_cpu, 2),
        "unit": "us",
        "note": f"LitePullConsumer, batches of {BATCH}, offsets committed per queue (no per-message ack): "
        f"{pull_rate:,.0f} msg/s; {shape}",
    }
    return rates + costs + floors + [pull]
