"""Online offset reset: how long an operator waits for a running consumer to move, and what the pull
path's rebalance-history hook costs.

``rmq up`` runs in a process of its own; an SDK push consumer (long polling, 15 s suspend as Java's
default) consumes a topic of 4 queues in this process. Each run resets the group to the earliest
offset while the consumer runs and times, from the start of the reset, the moment the consumer has
received the first message of every queue again: through ``rmq group reset-offset ... --yes`` (a
process of its own, as an operator types it) and through the admin service in this process. The
ratio is against the 15 s suspend a reset used to wait for (a held pull returning) before the
broker pushed RESET_CONSUMER_CLIENT_OFFSET. Also counted: "offset ... is illegal" warnings from the
consumer (none expected). A client that ignores that push (ali-ons) learns of a reset from a pull's
answer: the held-pull row times, from the start of a reset, the answer to a pull the broker was
holding for it (PULL_OFFSET_MOVED).

The hook row times :meth:`RebalanceHistory.pulled` for a queue whose holder did not change (the
common case on every pull) beside one ``dict.get`` on a table of the same size.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

from admin.models import GroupSpec, ResetKind, ResetTarget, TopicSpec
from admin.service import AdminService
from benchmarks.bench_cli import _result, _rmq, _wait_ready, rmq_up
from broker.client import ConsumeConcurrentlyStatus, Message, MessageExt, Producer, PushConsumer
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import PullMessageRequestHeader
from broker.protocol.remoting import make_request
from broker.remoting.client import RemotingClient
from broker.server.rebalance_history import RebalanceHistory

Result = dict[str, object]
TOPIC, GROUP, DEAF_GROUP = "bench-reset", "bench-reset-cg", "bench-reset-deaf-cg"
QUEUES, MESSAGES = 4, 40
SUSPEND_US = 15_000_000  # the consumer's long-polling suspend (Java's brokerSuspendMaxTimeMillis)
SEEN_TARGET_US = 1_000_000


class _Illegal(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "is illegal" in record.getMessage():
            self.count += 1


class _Consumed:
    """What the consumer received: how often each body, and a waiter for "every queue's first again"."""

    def __init__(self) -> None:
        self.times: dict[bytes, int] = {}
        self.changed = asyncio.Event()

    async def listen(self, msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            self.times[m.body] = self.times.get(m.body, 0) + 1
        self.changed.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def until(self, rounds: int, bodies: list[bytes]) -> None:
        while any(self.times.get(b, 0) < rounds for b in bodies):
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 60)


async def _reset_runs(
    namesrv: str, runs: int, env: dict[str, str]
) -> tuple[list[float], list[float], list[float], list[float], int]:
    async with AdminService([namesrv], 10) as service:
        await service.topic_create(TopicSpec(TOPIC, QUEUES, QUEUES))
        await service.group_create(GroupSpec(GROUP))
    producer = Producer("bench-reset-pg", namesrv)
    await producer.start()
    bodies = [f"m-{i}".encode() for i in range(MESSAGES)]
    for i, body in enumerate(bodies):
        await producer.send(Message(TOPIC, body), selector=lambda mqs, _msg, n: mqs[n % len(mqs)], arg=i)
    await producer.shutdown()
    consumed = _Consumed()
    consumer = PushConsumer(GROUP, namesrv)
    consumer.subscribe(TOPIC)
    consumer.register_message_listener_concurrently(consumed.listen)
    illegal = _Illegal()
    logging.getLogger("broker.client").addHandler(illegal)
    firsts = bodies[:QUEUES]  # offset 0 of every queue
    cli_seen: list[float] = []
    cli_exit: list[float] = []
    cli_list: list[float] = []  # rmq topic list, the same process start and one request
    service_seen: list[float] = []
    await consumer.start()
    try:
        await consumed.until(1, bodies)
        rounds = 1
        for _ in range(runs):
            began = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                *_rmq(), "group", "reset-offset", GROUP, "-t", TOPIC, "--to-earliest", "--yes", "-n", namesrv,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env=env,
            )  # fmt: skip
            rounds += 1
            await consumed.until(rounds, firsts)
            cli_seen.append((time.perf_counter() - began) * 1e6)
            if await proc.wait():
                raise RuntimeError(f"rmq group reset-offset exited {proc.returncode}")
            cli_exit.append((time.perf_counter() - began) * 1e6)
            began = time.perf_counter()
            listing = await asyncio.create_subprocess_exec(
                *_rmq(), "topic", "list", "-n", namesrv,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env=env,
            )  # fmt: skip
            await listing.wait()
            cli_list.append((time.perf_counter() - began) * 1e6)
            await consumed.until(rounds, bodies)
            async with AdminService([namesrv], 10) as service:
                began = time.perf_counter()
                await service.group_reset_offset(GROUP, ResetTarget(ResetKind.EARLIEST), TOPIC)
                rounds += 1
                await consumed.until(rounds, firsts)
                service_seen.append((time.perf_counter() - began) * 1e6)
            await consumed.until(rounds, bodies)
    finally:
        await consumer.shutdown()
        logging.getLogger("broker.client").removeHandler(illegal)
    return cli_seen, cli_exit, cli_list, service_seen, illegal.count


async def _held_pull_runs(namesrv: str, runs: int) -> list[float]:
    """Reset while the broker holds a pull of the group at the end of queue 0: until it is answered."""
    client = RemotingClient()
    times = []
    async with AdminService([namesrv], 10) as service:
        await service.group_create(GroupSpec(DEAF_GROUP))
        broker = (await service.cluster_list()).brokers[0].address
        try:
            for _ in range(runs):
                header = PullMessageRequestHeader(
                    consumerGroup=DEAF_GROUP, topic=TOPIC, queueId=0, queueOffset=MESSAGES // QUEUES,
                    maxMsgNums=32, sysFlag=0x6, commitOffset=0, suspendTimeoutMillis=SUSPEND_US // 1000,
                    subVersion=0, subscription="*",
                )  # fmt: skip
                request = make_request(RequestCode.PULL_MESSAGE, header)
                pulled = asyncio.ensure_future(client.invoke(broker, request, 30))
                await asyncio.sleep(0.5)  # held by now
                began = time.perf_counter()
                await service.group_reset_offset(DEAF_GROUP, ResetTarget(ResetKind.EARLIEST), TOPIC)
                answer = await pulled
                times.append((time.perf_counter() - began) * 1e6)
                if answer.code != ResponseCode.PULL_OFFSET_MOVED:
                    raise RuntimeError(f"the held pull was answered {answer.code} {answer.remark}")
        finally:
            await client.close()
    return times


def _hook_rows(repeat: int) -> list[Result]:
    with tempfile.TemporaryDirectory() as tmp:
        history = RebalanceHistory(Path(tmp))
    for g in range(100):
        for qid in range(16):
            history.pulled(f"group-{g}", "topic", qid, f"client-{qid % 4}")
    table = {f"group-{g}": g for g in range(100)}
    number = 200_000
    hook = min(
        timeit.repeat(lambda: history.pulled("group-7", "topic", 3, "client-3"), number=number, repeat=repeat)
    )
    probe = min(timeit.repeat(lambda: table.get("group-7"), number=number, repeat=repeat))
    per_call_ns = 1e9 / number
    return [
        {
            "name": "rebalance_hook_unchanged_holder",
            "value": round(hook * per_call_ns, 1),
            "unit": "ns",
            "target": None,
            "baseline": "one dict.get",
            "baseline_value": round(probe * per_call_ns, 1),
            "note": "per pull, 100 groups x 16 queues followed; both through a lambda call",
        }
    ]


def run(quick: bool) -> list[Result]:
    runs = 3 if quick else 7
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench_reset_", dir=os.environ.get("RMQ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k not in ("RMQ_PROFILE", "NAMESRV_ADDR")}
        env["RMQ_CONFIG"] = str(root / "config.toml")
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        with rmq_up(root, env) as (namesrv, _pid):
            asyncio.run(_wait_ready(namesrv))
            cli_seen, cli_exit, cli_list, service_seen, illegal = asyncio.run(_reset_runs(namesrv, runs, env))
            held = asyncio.run(_held_pull_runs(namesrv, runs))
        note = f"{QUEUES} queues, consumer running; {runs} runs; 'is illegal' warnings: {illegal}"
        suspend = ("15 s held pull", SUSPEND_US)
        results += [
            _result("online_reset_seen_cli", statistics.median(cli_seen), None, suspend,
                    f"rmq group reset-offset started -> every queue's first message again; {note}"),
            _result("online_reset_cli_exit", statistics.median(cli_exit), None,
                    ("rmq topic list", statistics.median(cli_list)), "rmq group reset-offset, whole process"),
            _result("online_reset_seen_service", statistics.median(service_seen), SEEN_TARGET_US, suspend,
                    f"admin service in this process; {note}"),
            _result("online_reset_held_pull_answered", statistics.median(held), SEEN_TARGET_US, suspend,
                    f"a pull held for a consumer deaf to the push (ali-ons) answered; {runs} runs"),
        ]  # fmt: skip
    results += _hook_rows(3 if quick else 7)
    print(f"python {sys.version.split()[0]}", file=sys.stderr)
    return results
