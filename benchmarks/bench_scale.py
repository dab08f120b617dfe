"""Scale benchmark: cost curves as the metadata grows, against ``rmq up`` in a process of its own.

For 100, 1 000 and 10 000 topics (8 queues each) with a fifth as many groups, on a fresh store:
``rmq metadata apply`` of an export (the whole CLI process, per item), GET_ROUTEINFO_BY_TOPIC p99
asked of the same process's NameServer every 20 ms while the apply runs (by a raw socket client in
a process of its own: :mod:`benchmarks.raw_probe`), the node's RSS after it, ``rmq
topic|group|cluster list`` (whole processes), then with every group's retry topic added one fetch of
each dashboard screen's data, and the restart of that node (SIGTERM, start on the same store, until
it is ready). Per-item costs must stay flat: the largest size's over the smallest's <= 2.

Then a NameServer of its own holding 100 brokers x 10 000 topics (every topic on every broker,
registered as brokers do, in the compressed form) answers route lookups (target p99 <= 1 ms), and
1 000 idle clients (half of them consumers of one group, heartbeats every 30 s) cost the broker at
most 5 % of one core.

Pending timer messages (10^5 .. 10^7) have a benchmark of their own (``python -m benchmarks timers``);
its curves join these as one more of :data:`SECTIONS`.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from admin.service import AdminService
from benchmarks import raw_probe
from benchmarks.bench_cli import rmq_up
from broker.client.remoting_client import RemotingClient
from broker.protocol.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicRouteData,
)
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from broker.protocol.headers import (
    GetRouteInfoRequestHeader,
    RegisterBrokerRequestHeader,
)
from broker.protocol.message import body_crc
from broker.protocol.remoting import make_request

Result = dict[str, object]
SIZES = (100, 1000, 10_000)
QUICK_SIZES = (100, 1000, 2000)
QUEUES = 8
APPLY_TARGET_US = 30e6  # 10 000 topics + 2 000 groups
RESTART_TARGET_US = 5e6
PROBE_TARGET_US = 50_000.0  # NameServer p99 during an apply
ROUTE_TARGET_US = 1000.0  # NameServer p99 holding 100 brokers x 10 000 topics
VIEW_TARGET_US = 1e6
FLAT_TARGET = 2.0
CLIENTS_CPU_TARGET = 5.0  # % of one core
PROBE_GAP = 0.02
_RMQ = "import sys, cli.main; sys.exit(cli.main.main())"


def _us(name: str, value: float, target: float | None, note: str) -> Result:
    return {"name": name, "value": round(value, 1), "unit": "us", "target": target, "note": note}


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _export(topics: int, groups: int) -> dict[str, object]:
    """What ``mqadmin exportMetadata`` writes for a cluster of that many topics and groups."""
    return {
        "topicConfigTable": {
            f"scale-topic-{i:05d}": {
                "topicName": f"scale-topic-{i:05d}",
                "readQueueNums": QUEUES,
                "writeQueueNums": QUEUES,
                "perm": 6,
                "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": 0,
                "order": False,
            }
            for i in range(topics)
        },
        "subscriptionGroupTable": {
            f"scale-group-{i:05d}": {"groupName": f"scale-group-{i:05d}", "retryMaxTimes": 16}
            for i in range(groups)
        },
    }


def _route_probe(namesrv: str, topic: str) -> raw_probe.ProbeSpec:
    """GET_ROUTEINFO_BY_TOPIC every PROBE_GAP seconds until stopped, from a process of its own."""
    return raw_probe.ProbeSpec(
        namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, [{"topic": topic}], gap_s=PROBE_GAP
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli_us(env: dict[str, str], node: int, *args: str, runs: int = 1) -> tuple[float, float]:
    """Median wall time of ``rmq ARGS`` as a process of its own, and the CPU time it and the node
    (process ``node``) spent on it, in microseconds: on a machine others load, the CPU time says
    what the wall time would be on an idle one."""
    times, cpu = [], []
    for _ in range(runs):
        cpu_before = _children_cpu() + _cpu_seconds(node)
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", _RMQ, *args], check=True, capture_output=True, env=env)
        times.append((time.perf_counter() - began) * 1e6)
        cpu.append((_children_cpu() + _cpu_seconds(node) - cpu_before) * 1e6)
    return statistics.median(times), statistics.median(cpu)


async def _screen_fetches(namesrv: str, node: int, group: str) -> dict[str, tuple[float, float]]:
    """One fetch of each dashboard screen's data (what a refresh waits for): wall and CPU time (this
    process and the node's), in microseconds."""
    try:
        from admin.tui.live import LiveScreen
        from admin.tui.screens.broker import BrokerScreen
        from admin.tui.screens.clients import ClientsScreen
        from admin.tui.screens.cluster import ClusterScreen
        from admin.tui.screens.dlq import DlqScreen
        from admin.tui.screens.groups import GroupsScreen
        from admin.tui.screens.topics import TopicsScreen
    except ImportError:  # textual is the optional ``tui`` extra
        return {}
    out: dict[str, tuple[float, float]] = {}
    async with AdminService([namesrv], 10) as service:
        broker = (await service.cluster_list()).brokers[0].address
        screens: dict[str, LiveScreen[Any]] = {
            "topics": TopicsScreen(),
            "groups": GroupsScreen(),
            "cluster": ClusterScreen(),
            "broker": BrokerScreen(broker),
            "dlq": DlqScreen(),
            "clients": ClientsScreen(group),
        }
        for name, screen in screens.items():
            cpu_before = time.process_time() + _cpu_seconds(node)
            began = time.perf_counter()
            await screen.fetch(service)
            cpu = time.process_time() + _cpu_seconds(node) - cpu_before
            out[name] = ((time.perf_counter() - began) * 1e6, cpu * 1e6)
    return out


async def _retry_topics(namesrv: str, groups: int) -> None:
    """Every group's retry topic, as a group that has had a consumer online has (``metadata apply``
    leaves them to the broker): the DLQ screen lists them with what each holds."""
    async with AdminService([namesrv], 30) as service:
        broker = (await service.cluster_list()).brokers[0].address
        configs = [TopicConfig(f"%RETRY%scale-group-{i:05d}", 1, 1) for i in range(groups)]
        for start in range(0, groups, 250):
            await service.api.create_topics(broker, configs[start : start + 250])


async def _ready(namesrv: str) -> None:
    async with AdminService([namesrv], 10) as service:
        await service.wait_ready(60)


def _topic_curve(size: int, env: dict[str, str]) -> dict[str, float]:
    groups = size // 5
    with tempfile.TemporaryDirectory(prefix="bench_scale_", dir=os.environ.get("RMQ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        env = {**env, "RMQ_CONFIG": str(root / "config.toml")}
        export = root / "metadata.json"
        export.write_text(json.dumps(_export(size, groups)))
        out: dict[str, float] = {}
        with rmq_up(root, env) as (namesrv, pid):
            asyncio.run(_ready(namesrv))
            probe = raw_probe.start(_route_probe(namesrv, "TBW102"))
            out["apply"], out["apply_cpu"] = _cli_us(
                env, pid, "metadata", "apply", str(export), "-o", "json", "--timeout", "30"
            )
            samples = raw_probe.finish(probe, interrupt=True)["samples"]
            out["probe_p99"] = _p(samples, 0.99)
            out["probe_max"] = max(samples)
            out["rss"] = _rss_mib(pid)
            for view in ("topic", "group", "cluster"):
                out[f"{view}_list"], out[f"{view}_list_cpu"] = _cli_us(
                    env, pid, view, "list", "-o", "json", runs=3
                )
            asyncio.run(_retry_topics(namesrv, groups))
            for screen, (us, cpu) in asyncio.run(_screen_fetches(namesrv, pid, "scale-group-00000")).items():
                out[f"screen_{screen}"], out[f"cpu_screen_{screen}"] = us, cpu
        began = time.perf_counter()
        with rmq_up(root, env) as (namesrv, _):
            asyncio.run(_ready(namesrv))
            out["restart"] = (time.perf_counter() - began) * 1e6
    out["items"] = size + groups
    return out


def _topic_rows(quick: bool) -> list[Result]:
    env = {k: v for k, v in os.environ.items() if k not in ("RMQ_PROFILE", "NAMESRV_ADDR")}
    sizes = QUICK_SIZES if quick else SIZES
    curves = {size: _topic_curve(size, env) for size in sizes}
    rows: list[Result] = []
    largest = sizes[-1]
    for size, c in curves.items():
        label = f"{size} topics + {size // 5} groups"
        total_target = APPLY_TARGET_US if size == 10_000 else None
        rows += [
            _us(
                f"scale_apply_{size}",
                c["apply"],
                total_target,
                f"{label}: rmq metadata apply, whole CLI (CPU, CLI + node: {c['apply_cpu'] / 1e6:.2f} s)",
            ),
            _us(f"scale_apply_per_item_{size}", c["apply"] / c["items"], None, label),
            _us(
                f"scale_namesrv_p99_during_apply_{size}",
                c["probe_p99"],
                PROBE_TARGET_US,
                f"{label}: route lookups of the same process (max {c['probe_max'] / 1000:.0f} ms)",
            ),
            {"name": f"scale_rss_{size}", "value": round(c["rss"], 1), "unit": "MiB", "note": label},
            _us(
                f"scale_restart_{size}",
                c["restart"],
                RESTART_TARGET_US if size == largest else None,
                f"{label}: SIGTERM, start on the same store, ready",
            ),
        ]
        for view in ("topic", "group", "cluster"):
            rows.append(
                _us(
                    f"scale_{view}_list_{size}",
                    c[f"{view}_list"],
                    VIEW_TARGET_US,
                    f"{label}: rmq {view} list -o json, whole process "
                    f"(CPU, CLI + node: {c[f'{view}_list_cpu'] / 1000:.0f} ms)",
                )
            )
        for key in sorted(k for k in c if k.startswith("screen_")):
            note = f"{label}: one data fetch (CPU, dashboard + node: {c['cpu_' + key] / 1000:.0f} ms)"
            rows.append(_us(f"scale_{key}_{size}", c[key], VIEW_TARGET_US, note))
    # per-item cost flat: the largest size's over the smallest's (which carries the CLI's own start
    # over few items), and over the middle size's
    per = {s: curves[s]["apply"] / curves[s]["items"] for s in sizes}
    ratio = per[largest] / per[sizes[0]]
    rows.append(
        {
            "name": "scale_apply_per_item_flatness",
            "value": round(ratio, 2),
            "unit": "x",
            "target": None,
            "met": ratio <= FLAT_TARGET and per[largest] / per[sizes[1]] <= FLAT_TARGET,
            "note": f"apply per item at {largest} over {sizes[0]} topics (<= {FLAT_TARGET:g}); "
            f"over {sizes[1]}: {per[largest] / per[sizes[1]]:.2f}",
        }
    )
    return rows


# -- a NameServer holding 100 brokers x 10 000 topics ----------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _register_fleet(namesrv: str, brokers: int, topics: int) -> tuple[float, list[RemotingClient]]:
    """Register ``brokers`` brokers of one cluster, each on a connection of its own (a NameServer drops
    a broker with its connection, so they stay open: the caller closes them), with the same ``topics``
    topics, and check that a route names every broker; the seconds the registrations took."""
    table = {f"fleet-{i:05d}": TopicConfig(f"fleet-{i:05d}", QUEUES, QUEUES) for i in range(topics)}
    version = DataVersion(counter=1)
    wrapper = TopicConfigAndMappingSerializeWrapper(topicConfigTable=table, dataVersion=version)
    body = RegisterBrokerBody(topicConfigSerializeWrapper=wrapper).encode(True)
    fleet = [RemotingClient() for _ in range(brokers)]
    began = time.perf_counter()
    for b, conn in enumerate(fleet):
        header = RegisterBrokerRequestHeader(
            brokerName=f"fleet-broker-{b:03d}",
            brokerAddr=f"127.0.0.1:{20000 + b}",
            clusterName="fleet",
            haServerAddr=f"127.0.0.1:{30000 + b}",
            brokerId=0,
            heartbeatTimeoutMillis=600_000,
            compressed=True,
            bodyCrc32=body_crc(body),
        )
        answer = await conn.invoke(namesrv, make_request(RequestCode.REGISTER_BROKER, header, body=body), 60)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
    registered = time.perf_counter() - began
    lookup = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="fleet-00000"))
    answer = await fleet[0].invoke(namesrv, lookup, 5)
    assert len(TopicRouteData.from_json(answer.body or b"").brokerDatas) == brokers
    return registered, fleet


def _timed_probe(spec: raw_probe.ProbeSpec, pid: int) -> tuple[list[float], float]:
    """A counted probe's round trips (microseconds) and the server's CPU per request (microseconds)."""
    began = _cpu_seconds(pid)
    result = raw_probe.run(spec)
    assert set(result["codes"]) == {str(ResponseCode.SUCCESS)} or spec.code == RequestCode.GET_KV_CONFIG
    samples: list[float] = result["samples"]
    # the warm-up requests' CPU is counted too: a few percent at most
    return samples, (_cpu_seconds(pid) - began) / (spec.count + spec.warmup) * 1e6


async def _fleet(
    namesrv: str, pid: int, brokers: int, topics: int, lookups: int
) -> tuple[float, list[float], list[float], float, float]:
    """The fleet registered (its connections held open meanwhile), then the round trips of a raw
    socket client in a process of its own, requests encoded beforehand: random topics' routes, then
    the cheapest request there is (a KV lookup that finds nothing) as this machine's floor. Seconds
    the registrations took, each lookup's and each floor request's microseconds, the NameServer's
    CPU per lookup (microseconds) and its RSS (MiB) with the fleet registered."""
    registered, fleet = await _register_fleet(namesrv, brokers, topics)
    try:
        picks = [{"topic": f"fleet-{random.randrange(topics):05d}"} for _ in range(1000)]
        route = raw_probe.ProbeSpec(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, picks, lookups, 200)
        samples, cpu = await asyncio.to_thread(_timed_probe, route, pid)
        nothing = raw_probe.ProbeSpec(
            namesrv, RequestCode.GET_KV_CONFIG, [{"namespace": "SCALE", "key": "none"}], lookups, 200
        )
        floor, _ = await asyncio.to_thread(_timed_probe, nothing, pid)
        return registered, samples, floor, cpu, _rss_mib(pid)
    finally:
        await asyncio.gather(*(c.close() for c in fleet))


def _namesrv_rows(quick: bool) -> list[Result]:
    brokers, topics = (20, 2000) if quick else (100, 10_000)
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="bench_scale_ns_") as tmp:
        cmd = [
            sys.executable,
            "-c",
            _RMQ,
            "namesrv",
            "--port",
            str(port),
            "--no-http",
            "--dir",
            tmp,
            "--log-level",
            "WARNING",
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            namesrv = f"127.0.0.1:{port}"
            lookups = 2000 if quick else 5000
            registered, samples, floor, cpu, rss = asyncio.run(
                _fleet(namesrv, proc.pid, brokers, topics, lookups)
            )
        finally:
            # killed: a stop would first drop the fleet, whose connections have just closed
            proc.kill()
            proc.wait(30)
    label = f"{brokers} brokers x {topics} topics, every topic on every broker"
    floor_note = f"{label}; client round trip (floor: a KV lookup that finds nothing, same run)"
    return [
        {
            **_us("scale_namesrv_route_p50", statistics.median(samples), None, floor_note),
            "baseline": "floor p50",
            "baseline_value": round(statistics.median(floor), 1),
        },
        {
            **_us("scale_namesrv_route_p99", _p(samples, 0.99), ROUTE_TARGET_US, floor_note),
            "baseline": "floor p99",
            "baseline_value": round(_p(floor, 0.99), 1),
        },
        _us("scale_namesrv_route_cpu", cpu, None, f"{label}; the NameServer's CPU per lookup"),
        _us(
            "scale_namesrv_register_per_broker",
            registered / brokers * 1e6,
            None,
            f"{label}: one compressed full registration each",
        ),
        {"name": "scale_namesrv_rss", "value": round(rss, 1), "unit": "MiB", "note": label},
    ]


# -- 1 000 idle clients ------------------------------------------------------------------------------


async def _idle_clients(broker: str, pid: int, clients: int, window: float) -> float:
    """``clients`` connections, half consumers of one group, each heartbeating every 30 s (spread
    over the period, as real clients start at different times); % of one core the broker spent."""
    group = "scale-consumers"
    subscription = SubscriptionData(topic="TBW102", subString="*")

    def beat(i: int) -> HeartbeatData:
        if i % 2:
            producer = ProducerData(groupName="scale-p")
            return HeartbeatData(clientID=f"10.0.0.1@scale-{i}", producerDataSet=[producer])
        consumer = ConsumerData(groupName=group, subscriptionDataSet=[subscription])
        return HeartbeatData(clientID=f"10.0.0.1@scale-{i}", consumerDataSet=[consumer])

    conns = [RemotingClient() for _ in range(clients)]
    period = 30.0

    async def client(i: int) -> None:
        body = beat(i).to_json()
        await conns[i].invoke(broker, make_request(RequestCode.HEART_BEAT, body=body), 10)
        await asyncio.sleep(period * i / clients)
        while True:
            await conns[i].invoke(broker, make_request(RequestCode.HEART_BEAT, body=body), 10)
            await asyncio.sleep(period)

    tasks = []
    try:
        for i in range(clients):  # connected and announced before the window opens
            tasks.append(asyncio.create_task(client(i)))
            if i % 50 == 49:
                await asyncio.sleep(0.05)
        await asyncio.sleep(5)
        before, began = _cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(window)
        return (_cpu_seconds(pid) - before) / (time.monotonic() - began) * 100
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in conns))


async def _broker_of(namesrv: str) -> str:
    async with AdminService([namesrv], 10) as service:
        await service.wait_ready(60)
        return (await service.cluster_list()).brokers[0].address


def _client_rows(quick: bool) -> list[Result]:
    clients, window = (1000, 30.0) if quick else (1000, 60.0)
    env = {k: v for k, v in os.environ.items() if k not in ("RMQ_PROFILE", "NAMESRV_ADDR")}
    with tempfile.TemporaryDirectory(prefix="bench_scale_cl_", dir=os.environ.get("RMQ_BENCH_DIR")) as tmp:
        env["RMQ_CONFIG"] = str(Path(tmp) / "config.toml")
        with rmq_up(Path(tmp), env) as (namesrv, pid):
            broker = asyncio.run(_broker_of(namesrv))
            idle_before, began = _cpu_seconds(pid), time.monotonic()
            time.sleep(10)
            idle = (_cpu_seconds(pid) - idle_before) / (time.monotonic() - began) * 100
            cpu = asyncio.run(_idle_clients(broker, pid, clients, window))
    return [
        {
            "name": "scale_clients_idle_cpu",
            "value": round(cpu, 2),
            "unit": "% core",
            "baseline": "no clients",
            "baseline_value": round(idle, 2),
            "target": None,
            "met": cpu <= CLIENTS_CPU_TARGET,
            "note": f"{clients} connections (half consumers of one group), heartbeats every 30 s, "
            f"{window:.0f} s window; target <= {CLIENTS_CPU_TARGET:g} %",
        },
    ]


# Sections in the order they run, each ``(quick) -> rows``. The curves of pending timer messages
# (10^5 / 10^6 / 10^7: heap, delivery lateness) belong here as one more section, taken from the
# ``timers`` benchmark's module, so that ``scale`` prints every curve of the fleet.
SECTIONS: list[Callable[[bool], list[Result]]] = [_topic_rows, _namesrv_rows, _client_rows]


def run(quick: bool) -> list[Result]:
    rows: list[Result] = []
    for section in SECTIONS:
        try:
            rows += section(quick)
        except Exception:  # one broken section must not take the others' figures with it
            traceback.print_exc()
            name = section.__name__.strip("_").removesuffix("_rows")
            rows.append({"name": f"scale_{name}", "value": "failed", "unit": "", "note": "see the traceback"})
    return rows


if __name__ == "__main__":  # one section alone: python -m benchmarks.bench_scale topics|namesrv|clients
    picked = {"topics": _topic_rows, "namesrv": _namesrv_rows, "clients": _client_rows}
    chosen: list[Callable[[bool], list[Result]]] = [picked[a] for a in sys.argv[1:] if a in picked]
    for row in [r for s in chosen or SECTIONS for r in s("--quick" in sys.argv)]:
        print(row)
