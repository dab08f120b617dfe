"""Resend from the DLQ, a broker that dies and comes back, a lost NameServer, refresh pausing behind
dialogs, and the command line."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from admin.errors import NotFound
from admin.models import TopicSpec
from admin.service import AdminService
from admin.tui.screens.confirm import ConfirmScreen
from admin.tui.screens.help import HelpScreen
from broker.node import Node
from tests.tui.conftest import (
    TuiCluster,
    broker_plan,
    dead_letters,
    namesrv_plan,
    run,
    start_loop,
    until,
)
from tests.tui.helpers import app_for, rows


def test_resend_dead_letters_to_the_group_after_typing_its_name(tui_cluster: TuiCluster) -> None:
    """A marked dead letter goes back to its group's retry topic (not the original topic); "resend all"
    then sends only the other one: the first was resent before."""
    group, topic = "refund-cg", "Refunds"
    retry = f"%RETRY%{group}"

    async def prepare() -> None:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            await service.topic_create(TopicSpec(topic, 1, 1))
        await dead_letters(tui_cluster.client, tui_cluster.broker, topic, group, 2)

    tui_cluster.call(prepare())

    async def counts() -> tuple[int, int]:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            original = (await service.topic_status(topic)).total_messages
            try:
                retried = (await service.topic_status(retry)).total_messages
            except NotFound:
                retried = 0
        return original, retried

    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("colon", *f"dlq {group}", "enter")
            await until(
                lambda: (
                    getattr(app.screen, "latest", None) is not None and app.screen.latest.browse is not None
                ),
                pilot,
            )
            assert len(rows(app, "browse")) == 2
            original, retried = await counts()
            # one marked message: space marks, s resends it
            await pilot.press("space", "s")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press(*"wrong", "enter")
            assert isinstance(app.screen, ConfirmScreen)  # the name must match
            app.screen.query_one("#confirm").value = ""
            await pilot.press(*group, "enter")
            for _ in range(100):
                if (await counts())[1] == retried + 1:
                    break
                await pilot.pause(0.1)
            assert await counts() == (original, retried + 1)
            await pilot.press("a")
            await pilot.press(*group, "enter")
            for _ in range(100):
                if (await counts())[1] == retried + 2:
                    break
                await pilot.pause(0.1)
            await pilot.pause(0.3)
            assert await counts() == (original, retried + 2)  # the first one was skipped

    run(scenario())


def test_export_writes_json_lines(tui_cluster: TuiCluster, tmp_path: Path) -> None:
    out = tmp_path / "dead.jsonl"

    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv, read_only=True)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("colon", *"dlq pay-cg", "enter")
            await until(
                lambda: (
                    getattr(app.screen, "latest", None) is not None and app.screen.latest.browse is not None
                ),
                pilot,
            )
            await pilot.press("e")
            app.screen.query_one("#prompt").value = str(out)
            await pilot.press("enter")
            await until(out.exists, pilot, what="export")

    run(scenario())
    import json

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 3 and all(m["properties"]["DLQ_ORIGIN_TOPIC"] == "Payments" for m in lines)


def test_a_killed_broker_is_marked_within_two_refreshes_and_recovers(tmp_path: Path) -> None:
    loop = start_loop()
    ns = Node(namesrv_plan(tmp_path / "ns"))
    asyncio.run_coroutine_threadsafe(ns.start(), loop).result(30)
    assert ns.namesrv is not None
    namesrv = f"127.0.0.1:{ns.namesrv.port}"
    brokers = [Node(broker_plan(tmp_path / "b", "broker-k", 0, namesrv))]
    asyncio.run_coroutine_threadsafe(brokers[0].start(), loop).result(30)
    assert brokers[0].broker is not None
    addr = brokers[0].broker.address
    refresh = 0.5

    async def scenario() -> None:
        app = app_for(namesrv, refresh=refresh)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen
            await until(lambda: screen.states.get(addr) == "UP", pilot, what="broker up")
            asyncio.run_coroutine_threadsafe(brokers[0].stop(), loop).result(30)
            began = asyncio.get_running_loop().time()
            await until(lambda: screen.states.get(addr) in ("DOWN", "GONE"), pilot, timeout=10, what="marked")
            assert asyncio.get_running_loop().time() - began <= 2 * refresh + app.deadline
            assert rows(app, "brokers")[addr][0] in ("DOWN", "GONE")  # marked, not hidden
            port = int(addr.rpartition(":")[2])
            brokers.append(Node(broker_plan(tmp_path / "b", "broker-k", port, namesrv)))
            asyncio.run_coroutine_threadsafe(brokers[1].start(), loop).result(30)
            await until(lambda: screen.states.get(addr) == "UP", pilot, timeout=15, what="recovered")
            assert rows(app, "brokers")[addr][0] == "UP"

    try:
        run(scenario())
    finally:
        asyncio.run_coroutine_threadsafe(brokers[-1].stop(), loop).result(30)
        asyncio.run_coroutine_threadsafe(ns.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)


def test_a_lost_connection_shows_in_the_status_bar() -> None:
    async def scenario() -> None:
        app = app_for("127.0.0.1:1", refresh=0.3)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: "connection lost" in app.status, pilot, what="lost")
            assert not app.connected

    run(scenario())


def test_refresh_pauses_behind_a_dialog(tui_cluster: TuiCluster) -> None:
    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv, refresh=0.2)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen
            await until(lambda: screen.generation >= 2, pilot, what="timer refreshes")
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.pause(0.3)
            paused_at = screen.generation
            await pilot.pause(0.8)
            assert screen.generation == paused_at
            await pilot.press("escape")
            await until(lambda: screen.generation > paused_at, pilot, what="resumed")

    run(scenario())


def test_stale_answers_are_dropped() -> None:
    class Slow:
        calls = 0

        async def cluster_status(self) -> object:
            Slow.calls += 1
            if Slow.calls == 1:
                await asyncio.sleep(0.5)
                raise AssertionError("the first, slow answer must not be shown")
            from tests.tui.fakes import FakeService

            return await FakeService().cluster_status()

        async def close(self) -> None:
            pass

    async def scenario() -> None:
        from admin.tui import DashboardApp

        app = DashboardApp(Slow, target="x", refresh=0)  # type: ignore[arg-type]
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("r")
            await until(lambda: app.screen.latest is not None, pilot, what="second answer")
            await pilot.pause(0.7)
            assert "connected" in app.status

    run(scenario())


@pytest.mark.parametrize("refresh", ["0.5", "-1"])
def test_refresh_below_one_second_is_refused(refresh: str) -> None:
    from typer.testing import CliRunner

    from cli.main import app

    result = CliRunner().invoke(app, ["dashboard", "--refresh", refresh, "-n", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output


def test_rmq_help_does_not_import_textual() -> None:
    code = "import sys, cli.main; assert 'textual' not in sys.modules, 'textual imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])
