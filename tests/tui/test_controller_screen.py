"""The controller screen against a real controller-mode cluster (`rmq cluster up --controllers 1`, one
master and two replicas): it finds the controller through the brokers, shows the leader and the group's
master, epoch and SyncStateSet, and follows an election after the master is killed; without controller
mode it says so."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from admin.tui.screens.controller import ASKING, NO_CONTROLLER, ControllerScreen
from tests.controller.harness import GROUP, Cluster, until
from tests.tui.conftest import TuiCluster, run
from tests.tui.conftest import until as shown
from tests.tui.helpers import app_for, column, rows

pytestmark = pytest.mark.servers

SHOWN_WITHIN = 60.0  # a loaded machine answers slowly; nothing here is timed


def test_the_controller_screen_shows_each_group_and_follows_an_election(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = await Cluster.start(tmp_path, 1)
        try:
            await until(cluster.all_in_sync, "a SyncStateSet of all three brokers")
            first = await cluster.master()
            app = app_for(cluster.namesrv, refresh=1)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.press("6")
                await shown(lambda: isinstance(app.screen, ControllerScreen), pilot, what="the screen")
                table = "controller-groups"
                await shown(lambda: GROUP in rows(app, table), pilot, SHOWN_WITHIN, "the group's row")
                assert column(app, table, "master address")[GROUP] == first
                assert column(app, table, "epoch")[GROUP] == "1"
                assert column(app, table, "SyncStateSet")[GROUP] == "1, 2, 3"
                first_id = column(app, table, "master")[GROUP]
                leader = str(app.screen.query_one("#controller-leader").render())
                assert "Controller leader n0" in leader

                os.kill(cluster.broker(first).pid, signal.SIGKILL)
                await until(lambda: cluster.master_is_not(first), "an election after the kill")
                second = await cluster.master()

                def elected() -> bool:
                    return column(app, table, "master address").get(GROUP) == second

                await shown(elected, pilot, SHOWN_WITHIN, "the new master on the screen")
                assert column(app, table, "epoch")[GROUP] == "2"
                assert first_id not in column(app, table, "SyncStateSet")[GROUP].split(", ")
        finally:
            await cluster.stop()

    run(scenario())


def test_without_controller_mode_the_screen_says_so(tui_cluster: TuiCluster) -> None:
    async def scenario() -> str:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("colon", *"controller", "enter")
            await shown(lambda: isinstance(app.screen, ControllerScreen), pilot, what="the screen")

            def title() -> str:
                return str(app.screen.query_one("#controller-leader").render())

            await shown(lambda: title() != ASKING, pilot, SHOWN_WITHIN, "an answer")
            return title()

    assert run(scenario()) == NO_CONTROLLER
