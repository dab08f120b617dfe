"""Dashboard benchmark: with 1 000 topics and 200 groups, the time one refresh of the topics and the
groups screens spends in the admin service, and how long a key press waits while a refresh runs.

The node runs as ``rmq up`` in its own process, as it does for a real dashboard, so its request
handling does not compete with the app for the GIL. The app runs under Textual's Pilot. Keys are
pressed from a thread at a steady rate, as a terminal's input thread delivers a held key, alternately
down and up on the screen's table; a key's wait runs from posting it to its action running. Each
refresh follows a change on the node (40 rows changed, 1 added in the middle), and keys go on for a
moment after it, while the table draws what it was given. The baseline is the same key probe on the
idle screen, in the same run.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from admin.bench.runner import Flush
from benchmarks.bench_remoting import broker_process

if TYPE_CHECKING:
    from textual.app import App
    from textual.widgets import DataTable

    from admin.service import AdminService

Result = dict[str, object]
SERVICE_TARGET_US = 500_000.0  # 500 ms
KEY_TARGET_US = 100_000.0  # a key handled within 100 ms is handled "at once" for a person
KEY_GAP = 0.03  # seconds between key presses (a held key repeats about 30 times a second)
IDLE_KEYS = 50
SETTLE = 0.3  # seconds keys go on after a refresh: the table draws (and measures) what it was given
TOPICS, GROUPS, CHANGED = 1000, 200, 40


def _result(
    name: str, value: float, unit: str, target: float | None = None, note: str = "", base: float | None = None
) -> Result:
    return {
        "name": name,
        "value": round(value, 1),
        "unit": unit,
        "target": target,
        "baseline": "idle_screen" if base is not None else None,
        "baseline_value": round(base, 1) if base is not None else None,
        "note": note,
    }


class Catalog:
    """Creates and changes the benchmark's topics and groups on the node's one broker."""

    def __init__(self, service: AdminService, broker: str) -> None:
        self.service = service
        self.broker = broker
        self.limit = asyncio.Semaphore(32)

    async def topic(self, i: int, queues: int = 4, suffix: str = "") -> None:
        from broker.protocol.bodies import TopicConfig

        name = f"bench-topic-{i:04d}{suffix}"
        config = TopicConfig(topicName=name, readQueueNums=queues, writeQueueNums=queues)
        async with self.limit:
            await self.service.api.create_topic(self.broker, config)

    async def group(self, i: int, retries: int = 16, suffix: str = "") -> None:
        from broker.protocol.group_bodies import SubscriptionGroupConfig

        config = SubscriptionGroupConfig(groupName=f"bench-cg-{i:03d}{suffix}", retryMaxTimes=retries)
        async with self.limit:
            await self.service.api.create_group(self.broker, config)

    async def fill(self) -> None:
        await asyncio.gather(*(self.topic(i) for i in range(TOPICS)), *(self.group(i) for i in range(GROUPS)))
        # the NameServer learns the new topics at the broker's next registration
        deadline = time.monotonic() + 60
        while len((await self.service.topic_list()).topics) < TOPICS and time.monotonic() < deadline:
            await asyncio.sleep(0.5)

    async def change(self, screen: str, round_no: int) -> None:
        """Change what ``screen`` shows in CHANGED rows and add a row in the middle, so a refresh
        has cells to update and the table to rebuild."""
        picked = range(round_no % 5, TOPICS if screen == "topics" else GROUPS, 5)[:CHANGED]
        if screen == "topics":
            await asyncio.gather(
                *(self.topic(i, 4 + round_no % 2 * 4) for i in picked),
                self.topic(TOPICS // 2, suffix=f"-{round_no}"),
            )
        else:
            await asyncio.gather(
                *(self.group(i, 16 + round_no % 2) for i in picked),
                self.group(GROUPS // 2, suffix=f"-{round_no}"),
            )


class KeyProbe:
    """Presses down and up on ``table`` from a thread at a steady rate, as a terminal's input thread
    delivers a held key, whether or not the app keeps up; each key's wait runs from posting it to its
    action running (keys are handled in the order they come)."""

    def __init__(self, app: App[None], table: DataTable[Any]) -> None:
        self.app = app
        self.sent: deque[float] = deque()
        self.waits: list[float] = []
        for name in ("action_cursor_down", "action_cursor_up"):
            setattr(table, name, self._timed(getattr(table, name)))

    def _timed(self, action: Callable[[], None]) -> Callable[[], None]:
        def timed() -> None:  # on the app's loop
            self.waits.append((time.perf_counter() - self.sent.popleft()) * 1000)
            action()

        return timed

    def press(self, sink: list[float], keep_going: Callable[[], bool], at_most: int = 1_000_000) -> None:
        """Press keys while ``keep_going()``, then wait for them all, adding their waits to ``sink``."""
        from textual import events

        self.waits = sink
        for pressed in range(at_most):
            if not keep_going():
                break
            self.sent.append(time.perf_counter())
            self.app.post_message(events.Key("up" if pressed % 2 else "down", None))
            time.sleep(KEY_GAP)
        deadline = time.monotonic() + 30
        while self.sent:
            if time.monotonic() > deadline:
                raise RuntimeError("key presses not handled within 30 s")
            time.sleep(0.005)


@dataclass
class Figures:
    topics_ms: list[float] = field(default_factory=list)
    groups_ms: list[float] = field(default_factory=list)
    busy_keys: list[float] = field(default_factory=list)
    idle_keys: list[float] = field(default_factory=list)


async def _measure(namesrv: str, rounds: int) -> Figures:
    from admin.service import AdminService
    from admin.tui import DashboardApp

    figures = Figures()
    async with AdminService([namesrv], 30) as service:
        await service.wait_ready(30)
        catalog = Catalog(service, next(iter((await service.cluster_list()).brokers)).address)
        await catalog.fill()
        app = DashboardApp(lambda: AdminService([namesrv], 10), target=namesrv, refresh=0, deadline=30)
        async with app.run_test(size=(120, 40)) as pilot:
            for screen, service_ms in (("topics", figures.topics_ms), ("groups", figures.groups_ms)):
                await pilot.press("2" if screen == "topics" else "3")
                await _refreshes(
                    app, pilot, rounds, service_ms, figures, functools.partial(catalog.change, screen)
                )
    return figures


async def _refreshes(
    app: App[None],
    pilot: Any,
    rounds: int,
    service_ms: list[float],
    into: Figures,
    change: Callable[[int], Awaitable[None]],
) -> None:
    """Idle keys, then ``rounds`` refreshes of the current screen, each after a change on the node
    and with keys pressed while it runs."""
    from admin.tui.table import LiveTable

    screen: Any = app.screen
    while screen.latest is None or screen.busy:
        await pilot.pause(0.01)
    table = screen.query_one(LiveTable)
    probe = KeyProbe(app, table)
    await asyncio.to_thread(probe.press, into.idle_keys, lambda: True, IDLE_KEYS // 2)

    def refreshing() -> bool:  # until the whole answer is in the table
        return bool(screen.busy or table.filling)

    for round_no in range(rounds):
        await change(round_no)
        screen.action_refresh_now()
        await asyncio.to_thread(probe.press, into.busy_keys, refreshing)
        await asyncio.to_thread(probe.press, into.busy_keys, _for(SETTLE))
        service_ms.append(screen.service_ms)


def _for(seconds: float) -> Callable[[], bool]:
    """True for the next ``seconds``."""
    end = time.monotonic() + seconds
    return lambda: time.monotonic() < end


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


def run(quick: bool = False) -> list[Result]:
    rounds = 10 if quick else 30
    with broker_process(Flush.ASYNC) as namesrv:
        f = asyncio.run(_measure(namesrv, rounds))
    note = (
        f"{TOPICS} topics, {GROUPS} groups, {CHANGED} rows changed + 1 added per refresh, median of {rounds}"
    )
    keys = f"{len(f.busy_keys)} keys while refreshing (idle: {len(f.idle_keys)})"
    service = [("topics", f.topics_ms), ("groups", f.groups_ms)]
    waits = [("p50", 0.5), ("p95", 0.95), ("max", 1.0)]
    return [
        *(
            _result(f"tui {name} refresh in service", statistics.median(ms) * 1e3, "us",
                    SERVICE_TARGET_US, note)
            for name, ms in service
        ),
        *(
            _result(f"tui key wait during refresh {name}", _pct(f.busy_keys, q) * 1000, "us",
                    KEY_TARGET_US if name == "p95" else None, keys, _pct(f.idle_keys, q) * 1000)
            for name, q in waits
        ),
    ]  # fmt: skip
