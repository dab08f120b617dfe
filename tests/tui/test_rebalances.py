"""The Groups screen records which client took which queue when, from what the clients report."""

from __future__ import annotations

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


def test_a_second_client_takes_queues_and_the_screen_says_so(tui_cluster: TuiCluster) -> None:
    first, second = _consumer(tui_cluster.namesrv), _consumer(tui_cluster.namesrv)

    async def start_first() -> None:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            await service.topic_create(TopicSpec(TOPIC, 4, 4))
            await service.group_create(GroupSpec(GROUP))
        await first.start()

    tui_cluster.call(start_first())
    try:

        async def scenario() -> None:
            app = app_for(tui_cluster.namesrv)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.press("colon", *f"group {GROUP}", "enter")
                screen = app.screen

                def owned_by(*clients: str) -> bool:
                    drawn = screen._drawn  # type: ignore[attr-defined]
                    owners = drawn.owners if drawn is not None and drawn.owners is not None else {}
                    mine = {q: c for q, c in owners.items() if q[0] == TOPIC}  # not the retry topic's
                    return len(mine) == 4 and set(mine.values()) == set(clients)

                for _ in range(100):
                    await pilot.press("r")
                    await until(lambda: not screen.busy, pilot)  # type: ignore[attr-defined]
                    if owned_by(first.client_id):
                        break
                    await pilot.pause(0.2)
                assert owned_by(first.client_id), screen._drawn  # type: ignore[attr-defined]
                tui_cluster.call(second.start())
                for _ in range(100):
                    await pilot.press("r")
                    await until(lambda: not screen.busy, pilot)  # type: ignore[attr-defined]
                    if owned_by(first.client_id, second.client_id):
                        break
                    await pilot.pause(0.2)
                moves = rows(app, "rebalances")
                assert moves and all(
                    row[2] == first.client_id and row[3] == second.client_id for row in moves.values()
                )
                assert len(moves) == 2  # averagely: two of the four queues move to the newcomer

        run(scenario())
    finally:
        tui_cluster.call(first.shutdown())
        tui_cluster.call(second.shutdown())
