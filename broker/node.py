"""One process running a NameServer, a broker or both, with their HTTP endpoint, until a signal.

``rmq namesrv``, ``rmq broker`` and ``rmq up`` are thin front ends over :class:`Node`; tests drive
it directly. Stopping follows the order that loses nothing: the broker stops accepting, finishes
in-flight requests, flushes and persists offsets, unregisters, then the NameServer goes.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.server.config import BrokerConfig
from broker.server.http_endpoint import HttpEndpoint, HttpResponse, Route
from broker.store.config import StoreConfig

if TYPE_CHECKING:
    from broker.controller.config import ControllerConfig
    from broker.controller.server import Controller
    from broker.namesrv.config import NamesrvConfig
    from broker.namesrv.server import NameServer
    from broker.server.broker import Broker

log = logging.getLogger(__name__)


@dataclass(slots=True)
class NodePlan:
    """What to run. ``http_port`` None turns the HTTP endpoint off; 0 picks a free port."""

    namesrv: NamesrvConfig | None = None
    controller: ControllerConfig | None = None
    broker: BrokerConfig | None = None
    store: StoreConfig | None = None
    http_host: str = "0.0.0.0"
    http_port: int | None = None
    advertise_host: str = "127.0.0.1"
    extra: dict[str, str] = field(default_factory=dict)


class NodeStartError(Exception):
    """A server of the node could not start (port in use, store locked ...); the message says which."""


async def _start(what: str, where: str, starter: Awaitable[None]) -> None:
    try:
        await starter
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise NodeStartError(f"{what} cannot listen on {where}: {reason.lower()}") from exc


async def _serve_grpc(broker: Broker) -> None:
    """The RocketMQ 5 gRPC API beside the broker's remoting port (grpcPort < 0: off)."""
    if broker.config.grpc_port < 0:
        return
    try:
        from broker.grpc.service import serve_grpc
    except ImportError as exc:  # grpcio, protobuf and hpack are the optional ``grpc`` extra
        log.warning("gRPC port not served: %s (install rmqkit[grpc])", exc)
        return
    await serve_grpc(broker)


class Node:
    def __init__(self, plan: NodePlan) -> None:
        if plan.broker is not None and plan.store is None:
            raise ValueError("a broker needs a store configuration")
        self.plan = plan
        self.namesrv: NameServer | None = None
        self.controller: Controller | None = None
        self.broker: Broker | None = None
        self.http: HttpEndpoint | None = None

    async def start(self) -> None:
        plan = self.plan
        auth_store = None  # users and ACL policies: one store for a NameServer and a broker in one process
        if (
            plan.namesrv
            and plan.broker
            and plan.store
            and plan.namesrv.auth_enabled
            and plan.broker.auth_enabled
        ):
            auth_store = plan.broker.auth_store(plan.store.store_path / "config")
        try:
            if plan.namesrv is not None:
                from broker.namesrv.server import NameServer

                self.namesrv = NameServer(plan.namesrv, auth_store=auth_store)
                await _start("the NameServer", f"port {plan.namesrv.listen_port}", self.namesrv.start())
            if plan.controller is not None:
                from broker.controller.server import Controller

                self.controller = Controller(plan.controller)
                await _start("the controller", f"port {plan.controller.listen_port}", self.controller.start())
            if plan.broker is not None and plan.store is not None:
                from broker.server.broker import Broker

                if self.namesrv is not None and not plan.broker.namesrv_addr:
                    plan.broker.namesrv_addr = f"{plan.advertise_host}:{self.namesrv.port}"
                controller = self.controller or (
                    self.namesrv.controller if self.namesrv is not None else None
                )
                if (
                    controller is not None
                    and plan.broker.enable_controller_mode
                    and not plan.broker.controller_addr
                ):
                    plan.broker.controller_addr = controller.address
                self.broker = Broker(plan.broker, plan.store, auth_store)
                await _start("the broker", f"port {plan.broker.listen_port}", self.broker.start())
                await _serve_grpc(self.broker)
            if plan.http_port is not None:
                self.http = HttpEndpoint(plan.http_host, plan.http_port, self._routes())
                await _start("the HTTP endpoint", f"port {plan.http_port}", self.http.start())
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop in the order that loses nothing; safe to call twice or after a failed start."""
        if self.http is not None:
            await self.http.stop()
            self.http = None
        if self.broker is not None:
            await self.broker.stop()
            self.broker = None
        if self.controller is not None:
            await self.controller.stop()
            self.controller = None
        if self.namesrv is not None:
            await self.namesrv.stop()
            self.namesrv = None

    @property
    def ready(self) -> bool:
        return (self.broker is None or self.broker.ready) and (self.namesrv is None or self.namesrv.ready)

    def _routes(self) -> dict[str, Route]:
        async def healthz() -> HttpResponse:
            return HttpResponse(200, "ok\n")

        async def readyz() -> HttpResponse:
            return HttpResponse(200, "ready\n") if self.ready else HttpResponse(503, "not ready\n")

        async def metrics() -> HttpResponse:
            from broker.server.metrics import render_metrics

            text = await asyncio.get_running_loop().run_in_executor(
                None, render_metrics, self.broker, self.namesrv
            )
            return HttpResponse(200, text, "text/plain; version=0.0.4; charset=utf-8")

        return {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics}

    def describe(self) -> list[str]:
        """What is listening where, and how to point a client at it."""
        host = self.plan.advertise_host
        lines: list[str] = []
        if self.namesrv is not None:
            lines.append(f"NameServer  {host}:{self.namesrv.port}")
        if self.controller is not None:
            c = self.controller.config
            where = f"{self.controller.address}, state in {c.controller_store_path}"
            lines.append(f"Controller  {c.controller_self_id} at {where}")
        if self.broker is not None and self.plan.store is not None:
            b = self.broker.config
            lines.append(
                f"Broker      {b.broker_name} (id {b.broker_id}, cluster {b.broker_cluster_name}) at "
                f"{self.broker.address}, store {self.plan.store.store_path}"
            )
            if self.broker.ha_service.port:
                lines.append(f"HA          {host}:{self.broker.ha_service.port} (slaves replicate from here)")
        if self.broker is not None and self.broker.grpc_port:
            lines.append(f"gRPC        {host}:{self.broker.grpc_port} (RocketMQ 5 clients' endpoints)")
        if self.http is not None:
            lines.append(f"HTTP        http://{host}:{self.http.port}/metrics  /healthz  /readyz")
        if self.namesrv is not None:
            lines.append(f"Point clients at the NameServer: export NAMESRV_ADDR={host}:{self.namesrv.port}")
        return lines


# A serving process allocates short-lived containers on every request. CPython's default collector
# runs a young collection every 700 of them and, now and then, a full one over every object the process
# holds (modules, settings, topic tables): pauses that set the p99 latency of sends (docs/benchmarks.md
# has the before and after).
GC_THRESHOLDS = (20_000, 50, 50)


def settle_gc() -> None:
    """Once a node is up: move every object alive now out of the collector's sight (gc.freeze) and
    collect young objects less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


# glibc gives freed heap back to the OS once its top exceeds a threshold sized from the largest block
# freed so far: depending on what a process happened to free first, a broker answering pulls of ~1 MiB
# grew and shrank its heap on every answer (a page fault per 4 KiB, +50 % CPU per pulled message).
# Fixed thresholds keep up to HEAP_KEEP_BYTES of freed memory for reuse.
HEAP_KEEP_BYTES = 64 << 20
HEAP_MMAP_BYTES = 16 << 20  # blocks above this are mapped and unmapped on their own
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def settle_heap() -> bool:
    """Fix glibc's trim and mmap thresholds (see above); False where the C library has no mallopt."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, HEAP_KEEP_BYTES) and mallopt(_M_MMAP_THRESHOLD, HEAP_MMAP_BYTES))


async def run_until_signal(
    node: Node, on_started: list[str] | None = None, after_start: Callable[[Node], None] | None = None
) -> None:
    """Start ``node``, report, and stop it cleanly on SIGINT or SIGTERM."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await node.start()
        settle_gc()
        settle_heap()
        if after_start is not None:
            after_start(node)
        if on_started is not None:
            on_started.extend(node.describe())
            print("\n".join(on_started), flush=True)
        await stop.wait()
        log.info("signal received, shutting down")
    finally:
        await node.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
