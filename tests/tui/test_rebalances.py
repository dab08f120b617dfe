"""The Groups screen shows the brokers' rebalance history: moves made before the dashboard opened too."""

from __future__ import annotations

import asyncio

import pytest

from admin.models import GroupSpec, TopicSpec
from admin.service import AdminService
from broker.client import ConsumeConcurrentlyStatus, MessageExt, PushConsumer
from tests.tui.conftest import TuiCluster, run, until
from tests.tui.helpers import app_for, rows

pytestmark = pytest.mark.servers
TOPIC, GROUP = "RebalanceTopic", "rebalance-cg"


def _consumer(namesrv: str) -> PushConsumer:
    async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(GROUP, namesrv, rebalance_interval=1.0)
    consumer.subscribe(TOPIC)
    consumer.register_message_listener_concurrently(listen)
    return consumer


async def _held_by(namesrv: str, *clients: str) -> None:
    """Until the brokers saw exactly ``clients`` pulling the topic's four queues."""
    async with AdminService([namesrv], 5) as service:
        for _ in range(150):
            holders = (await service.group_rebalances(GROUP)).holders
            mine = [h for h in holders if h.topic == TOPIC]
            if len(mine) == 4 and {h.client_id for h in mine} == set(clients):
                return
            await asyncio.sleep(0.1)
    raise AssertionError(f"the queues of {TOPIC} were not held by {clients}")


def test_moves_made_before_the_dashboard_opened_are_on_the_groups_screen(tui_cluster: TuiCluster) -> None:
    first, second = _consumer(tui_cluster.namesrv), _consumer(tui_cluster.namesrv)

    async def two_consumers() -> None:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            await service.topic_create(TopicSpec(TOPIC, 4, 4))
            await service.group_create(GroupSpec(GROUP))
        await first.start()
        await _held_by(tui_cluster.namesrv, first.client_id)
        await second.start()
        await _held_by(tui_cluster.namesrv, first.client_id, second.client_id)

    try:
        tui_cluster.call(two_consumers())

        async def scenario() -> None:
            app = app_for(tui_cluster.namesrv)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.press("colon", *f"group {GROUP}", "enter")
                screen = app.screen
                await until(lambda: bool(rows(app, "rebalances")), pilot, what="the rebalances")
                await until(lambda: not screen.busy, pilot)  # type: ignore[attr-defined]
                moves = rows(app, "rebalances")
                assert len(moves) == 2  # averagely: two of the four queues moved to the newcomer
                assert all(
                    row[1].startswith(f"{TOPIC}/") and row[2:] == [first.client_id, second.client_id]
                    for row in moves.values()
                )

        run(scenario())
    finally:
        tui_cluster.call(first.shutdown())
        tui_cluster.call(second.shutdown())
