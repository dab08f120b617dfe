"""rocketmq-python-client 5.x load generator for ``benchmarks/bench_grpc.py``.

python py5_bench.py --endpoints E --topic T send [--seconds 5] [--inflight 64] [--size 1024]
python py5_bench.py --endpoints E --topic T receive --group G [--seconds 5] [--threads 4] [--batch 32]
(either with [--processes 1])

send: ``send_async`` with ``inflight`` sends outstanding at any time. receive: ``threads`` threads of
one SimpleConsumer, each receiving a batch, acking all of its messages at once through the client's
asynchronous ack and receiving the next batch once they are all acked, as a consumer that processes
what it receives does. (Without that wait the receivers run ahead of the acks: the broker hands out
several messages per one acked in the window, and the unacked rest piles up in the client.) The
client's ``ack_async`` of 5.1.2 builds its result on the calling thread's asyncio loop and returns
nothing, so the driver takes the future of the same AckMessage call one level down
(``Consumer.__ack``): the same requests on the wire, with an end to wait for.
``processes`` runs that many clients, each in its own process (one is bound by its interpreter lock),
counting into one shared window.
After start-up and one second of warm-up the driver prints ``{"event": "go"}``, runs for ``seconds``,
then prints ``{"event": "done"}`` and the summary ``{"count": N, "elapsed": s}`` of that window only,
so the caller can read the broker's CPU time at "go" and "done".
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import threading
import time
from concurrent.futures import Future, wait
from typing import Any

from _py5kit import config, emit, load_client

WARMUP_S = 1.0
CODE_OK = 20000  # apache.rocketmq.v2.Code.OK
STARTUP_S = 60.0  # for the first completion: a receive group that starts at a queue's end gets none


class Window:
    """Counts completions of all the driver's processes; only those inside the measured window are
    reported."""

    def __init__(self, context: Any) -> None:
        self._total = context.Value("q", 0)
        self._errors = context.Value("q", 0)

    def add(self, n: int = 1) -> None:
        with self._total.get_lock():
            self._total.value += n

    def failed(self) -> None:
        with self._errors.get_lock():
            self._errors.value += 1

    def take(self) -> int:
        return int(self._total.value)

    @property
    def errors(self) -> int:
        return int(self._errors.value)


def run_worker(mode: str, args: argparse.Namespace, stop: Any, window: Window) -> None:
    """One more client, in a process of its own."""
    work_of(mode)(load_client(), args, stop, window)


def run_send(rocketmq: Any, args: argparse.Namespace, stop: Any, window: Window) -> None:
    producer = rocketmq.Producer(config(rocketmq, args.endpoints), (args.topic,))
    producer.startup()
    body = b"x" * args.size
    slots = threading.Semaphore(args.inflight)

    def done(future: Future[Any]) -> None:
        slots.release()
        if future.exception() is None:
            window.add()
        else:
            window.failed()

    try:
        while not stop.is_set():
            slots.acquire()
            msg = rocketmq.Message()
            msg.topic = args.topic
            msg.body = body
            producer.send_async(msg).add_done_callback(done)
        for _ in range(args.inflight):  # let the last sends finish before shutting down
            slots.acquire(timeout=10)
    finally:
        producer.shutdown()


def run_receive(rocketmq: Any, args: argparse.Namespace, stop: Any, window: Window) -> None:
    consumer = rocketmq.SimpleConsumer(
        config(rocketmq, args.endpoints),
        args.group,
        {args.topic: rocketmq.FilterExpression("*")},
        await_duration=2,
    )
    consumer.startup()

    ack_async = consumer._Consumer__ack  # see the module's text

    def acked(future: Future[Any]) -> None:
        if future.exception() is None and future.result().status.code == CODE_OK:
            window.add()
        else:
            window.failed()

    def loop() -> None:
        while not stop.is_set():
            try:
                messages = consumer.receive(args.batch, 30)
            except Exception:
                continue  # no new message within the long-polling time
            acks = [ack_async(msg) for msg in messages]
            for ack in acks:
                ack.add_done_callback(acked)
            wait(acks)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(args.threads)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        consumer.shutdown()


def work_of(mode: str) -> Any:
    return run_send if mode == "send" else run_receive


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("mode", choices=["send", "receive"])
    ap.add_argument("--group", default="py5-bench")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--inflight", type=int, default=64)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--processes", type=int, default=1)
    args = ap.parse_args()
    context = multiprocessing.get_context("spawn")  # started before this process loads the client
    stop = context.Event()
    window = Window(context)
    others = [
        context.Process(target=run_worker, args=(args.mode, args, stop, window), daemon=True)
        for _ in range(args.processes - 1)
    ]
    for other in others:
        other.start()
    rocketmq = load_client()
    work = work_of(args.mode)
    failure: list[BaseException] = []

    def target() -> None:
        try:
            work(rocketmq, args, stop, window)
        except BaseException as exc:
            failure.append(exc)
            stop.set()

    worker = threading.Thread(target=target, daemon=True)
    worker.start()

    def others_failed() -> bool:
        return any(other.exitcode not in (None, 0) for other in others)

    started = time.monotonic()
    while window.take() == 0 and not failure and not others_failed():  # start-up, route, settings
        if time.monotonic() - started > STARTUP_S:
            failure.append(TimeoutError(f"nothing completed within {STARTUP_S:g} s of starting"))
            break
        time.sleep(0.05)
    time.sleep(WARMUP_S)
    first, began = window.take(), time.perf_counter()
    emit("go")
    time.sleep(args.seconds)
    count, elapsed = window.take() - first, time.perf_counter() - began
    emit("done")
    stop.set()
    worker.join(30)
    for other in others:
        other.join(30)
    if others_failed():
        failure.append(RuntimeError("a client process failed: see its traceback on stderr"))
    if failure:
        emit("error", error=f"{type(failure[0]).__name__}: {failure[0]}")
    emit("summary", count=count, elapsed=elapsed, errors=window.errors, ok=not failure and count > 0)
    return 0 if not failure and count > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
