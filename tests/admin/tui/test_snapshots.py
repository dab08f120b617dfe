"""Each screen at 120x40 with fixed data (a fake admin service), compared with the SVG screenshots in
tests/admin/tui/snapshots/. A missing snapshot fails; ``RMQ_UPDATE_SNAPSHOTS=1 pytest tests/admin/tui``
writes or rewrites them after a deliberate change; look at the SVGs before committing them."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from admin.tui import DashboardApp
from admin.tui.screens.broker import BrokerScreen
from admin.tui.screens.message import MessageScreen
from tests.admin.tui.conftest import run, until
from tests.admin.tui.fakes import T0, FakeService

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def normalized(svg: str) -> str:
    """Textual names the SVG's CSS classes after a hash of the whole screen; make them stable."""
    names: dict[str, str] = {}
    return re.sub(r"terminal-\d+", lambda m: names.setdefault(m.group(0), f"terminal-{len(names)}"), svg)


async def _loaded(app: DashboardApp, pilot: Any) -> None:
    await until(lambda: getattr(app.screen, "latest", None) is not None and not app.screen.busy, pilot)
    await pilot.pause(0.1)


def snapshot(
    name: str, steps: Callable[[DashboardApp, Any], Awaitable[None]], read_only: bool = False
) -> None:
    async def scenario() -> str:
        app = DashboardApp(FakeService, target="10.0.0.1:9876", refresh=0, read_only=read_only,  # type: ignore[arg-type]
                           clock=lambda: T0 / 1000)  # fmt: skip
        async with app.run_test(size=(120, 40)) as pilot:
            await _loaded(app, pilot)
            await steps(app, pilot)
            await until(lambda: getattr(app.screen, "latest", True) is not None, pilot)
            await until(lambda: not getattr(app.screen, "busy", False), pilot)
            await pilot.pause(0.1)
            return normalized(app.export_screenshot(title=name))

    svg = run(scenario())
    path = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("RMQ_UPDATE_SNAPSHOTS"):
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg)
    assert path.exists(), f"{name} has no snapshot: RMQ_UPDATE_SNAPSHOTS=1 writes it (look at it first)"
    assert svg == path.read_text(), f"{name} changed: RMQ_UPDATE_SNAPSHOTS=1 to accept, after looking at it"


async def nothing(app: DashboardApp, pilot: Any) -> None:
    pass


async def topics(app: DashboardApp, pilot: Any) -> None:
    await pilot.press("2")
    await _loaded(app, pilot)
    await pilot.press("down", "enter")


async def groups(app: DashboardApp, pilot: Any) -> None:
    await pilot.press("3")
    await _loaded(app, pilot)
    await pilot.press("s", "end", "enter")


async def dlq(app: DashboardApp, pilot: Any) -> None:
    await pilot.press("4")
    await _loaded(app, pilot)
    await pilot.press("down", "enter")
    await _loaded(app, pilot)
    await pilot.press("space")


async def lookup(app: DashboardApp, pilot: Any) -> None:
    await pilot.press("5", *"0A00000100002A9F0000000000001000", "enter")


async def message(app: DashboardApp, pilot: Any) -> None:
    app.push_screen(MessageScreen("0A00000100002A9F0000000000000000"))
    await _loaded(app, pilot)
    await pilot.press("b")


async def broker(app: DashboardApp, pilot: Any) -> None:
    app.push_screen(BrokerScreen("10.0.0.1:10911"))
    # until the pushed screen is current, app.screen is the previous, already loaded one
    await until(lambda: isinstance(app.screen, BrokerScreen), pilot)
    await _loaded(app, pilot)


async def help_(app: DashboardApp, pilot: Any) -> None:
    await pilot.press("question_mark")


@pytest.mark.parametrize(
    ("name", "steps"),
    [("cluster", nothing), ("topics", topics), ("groups", groups), ("dlq", dlq), ("lookup", lookup),
     ("message", message), ("broker", broker)],
)  # fmt: skip
def test_screen_snapshot(name: str, steps: Callable[[DashboardApp, Any], Awaitable[None]]) -> None:
    snapshot(name, steps)


def test_read_only_help_and_dlq_snapshot() -> None:
    snapshot("help-read-only", help_, read_only=True)
    snapshot("dlq-read-only", dlq, read_only=True)
