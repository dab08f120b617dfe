"""The dashboard's actions, driven through Pilot against a real node, checked against the node's state
afterwards: offset reset and skip (after a dry-run preview and the typed name), group and topic
create/update/delete, a test message, and delivering one message to one client; none with --read-only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from admin.errors import NotFound
from admin.models import GroupSpec
from admin.service import AdminService
from admin.tui import DashboardApp
from admin.tui.screens.confirm import ConfirmScreen
from admin.tui.screens.form import FormScreen
from admin.tui.screens.message import MessageScreen
from broker.client import ConsumeConcurrentlyStatus, MessageExt, PushConsumer
from broker.protocol.codes import RequestCode
from broker.protocol.headers import UpdateConsumerOffsetRequestHeader
from broker.protocol.remoting import make_request
from tests.admin.tui.conftest import TuiCluster, run, until
from tests.admin.tui.helpers import app_for
from tests.cli.online.conftest import send

pytestmark = pytest.mark.servers
TOPIC, PER_QUEUE = "ActShipments", 3  # a topic of these tests only: the session's Orders stays as it was


@pytest.fixture(scope="module")
def sent_ids(tui_cluster: TuiCluster) -> list[str]:
    """``ActShipments``: 4 queues of 3 messages each (``act N``); their offset MessageIds."""
    from admin.models import TopicSpec

    async def prepare() -> list[str]:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            await service.topic_create(TopicSpec(TOPIC, 4, 4))
        return [
            (await send(tui_cluster.client, tui_cluster.broker, TOPIC, f"act {i}".encode(), i % 4)).msgId
            for i in range(4 * PER_QUEUE)
        ]

    return tui_cluster.call(prepare())


async def fill(app: DashboardApp, pilot: Any, **values: str) -> None:
    """Answer the form on top: set its fields, then enter on the last one."""
    await until(lambda: isinstance(app.screen, FormScreen), pilot, what="the form")
    form = app.screen
    for key, value in values.items():
        form.query_one(f"#field-{key}").value = value  # type: ignore[attr-defined]
    form.query(f"#field-{form.fields[-1][0]}").first().focus()  # type: ignore[attr-defined]
    await pilot.press("enter")


async def confirm(app: DashboardApp, pilot: Any, name: str) -> str:
    """Type ``name`` into the confirmation on top; returns the text it showed."""
    await until(lambda: isinstance(app.screen, ConfirmScreen), pilot, what="the confirmation")
    shown = app.screen.action_text  # type: ignore[attr-defined]
    await pilot.press(*name, "enter")
    await until(lambda: not isinstance(app.screen, ConfirmScreen), pilot)
    return str(shown)


async def eventually(check: Any, pilot: Any, what: str) -> None:
    """Wait until the coroutine function ``check`` returns true (the node's state, asked anew)."""
    for _ in range(100):
        if await check():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def jump(pilot: Any, text: str) -> None:
    await pilot.press("colon", *text, "enter")
    await pilot.pause(0.2)


def test_reset_and_skip_preview_then_move_the_offsets(tui_cluster: TuiCluster, sent_ids: list[str]) -> None:
    group = "act-reset-cg"

    async def prepare() -> None:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            await service.group_create(GroupSpec(group))
        for qid in range(4):
            header = UpdateConsumerOffsetRequestHeader(
                consumerGroup=group, topic=TOPIC, queueId=qid, commitOffset=2
            )
            request = make_request(RequestCode.UPDATE_CONSUMER_OFFSET, header)
            assert (await tui_cluster.client.invoke(tui_cluster.broker, request, 10)).code == 0

    tui_cluster.call(prepare())

    async def offsets(service: AdminService) -> list[int]:
        return [q.consumer_offset for q in (await service.group_lag(group, TOPIC)).queues]

    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot, AdminService([tui_cluster.namesrv], 5) as service:
            await jump(pilot, f"group {group}")
            await pilot.press("f")
            await fill(app, pilot, to="earliest", topic=TOPIC)
            shown = await confirm(app, pilot, group)
            assert f"{TOPIC} broker-a/0: 2 -> 0" in shown  # the dry run's preview

            async def rewound() -> bool:
                return await offsets(service) == [0] * 4

            await eventually(rewound, pilot, "the reset")
            await pilot.press("k")
            shown = await confirm(app, pilot, group)
            assert f"0 -> {PER_QUEUE}" in shown

            async def skipped() -> bool:
                return await offsets(service) == [PER_QUEUE] * 4

            await eventually(skipped, pilot, "the skip")
            await pilot.press("z")  # undo the skip: back to where the reset left them
            shown = await confirm(app, pilot, group)
            assert f"{PER_QUEUE} -> 0" in shown
            await eventually(rewound, pilot, "the undo")

    run(scenario())


def test_group_create_update_delete(tui_cluster: TuiCluster) -> None:
    group = "act-made-cg"

    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot, AdminService([tui_cluster.namesrv], 5) as service:

            async def retry_max(expected: int) -> bool:
                try:
                    config = (await service.group_describe(group)).config
                except NotFound:
                    return False
                return config is not None and config.retry_max_times == expected

            await pilot.press("3")
            await pilot.press("n")
            await fill(app, pilot, name=group, retry="5")
            await eventually(lambda: retry_max(5), pilot, "the new group")
            await jump(pilot, f"group {group}")
            await pilot.press("u")
            await fill(app, pilot, retry="7", consume="no")
            await eventually(lambda: retry_max(7), pilot, "the update")
            config = (await service.group_describe(group)).config
            assert config is not None and config.consume_enable is False
            await pilot.press("d")
            await confirm(app, pilot, group)

            async def gone() -> bool:
                return group not in await service.group_names()

            await eventually(gone, pilot, "the deletion")

    run(scenario())


def test_topic_create_update_send_delete(tui_cluster: TuiCluster) -> None:
    topic = "ActMadeTopic"

    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot, AdminService([tui_cluster.namesrv], 5) as service:

            async def queues(expected: int) -> bool:
                try:
                    route = await service.topic_route(topic)
                except NotFound:
                    return False
                return [q.write_queues for q in route.queues] == [expected]

            await pilot.press("2")
            await pilot.press("n")
            await fill(app, pilot, name=topic, queues="2")
            await eventually(lambda: queues(2), pilot, "the new topic")
            await jump(pilot, f"topic {topic}")
            await pilot.press("u")
            await fill(app, pilot, read="3", write="3", perm="6")
            await eventually(lambda: queues(3), pilot, "the update")
            await pilot.press("m")
            await fill(app, pilot, body="ping", tags="probe", keys="k1")

            async def sent() -> bool:
                return (await service.topic_status(topic)).total_messages == 1

            await eventually(sent, pilot, "the test message")
            found = (await service.message_query(topic, key="k1")).messages
            assert [(m.body, m.tags) for m in found] == [(b"ping", "probe")]
            await pilot.press("d")
            await confirm(app, pilot, topic)

            async def gone() -> bool:
                return not await queues(3)

            await eventually(gone, pilot, "the deletion")

    run(scenario())


def test_deliver_one_message_to_one_client(tui_cluster: TuiCluster, sent_ids: list[str]) -> None:
    group, got = "act-deliver-cg", []

    async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        got.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, tui_cluster.namesrv, rebalance_interval=1.0)
    consumer.subscribe(TOPIC)
    consumer.register_message_listener_concurrently(listen)

    async def start() -> None:
        async with AdminService([tui_cluster.namesrv], 5) as service:
            await service.group_create(GroupSpec(group))
        await consumer.start()

    tui_cluster.call(start())
    try:

        async def scenario() -> None:
            app = app_for(tui_cluster.namesrv)
            async with app.run_test(size=(120, 40)) as pilot:
                await until(lambda: len(got) == len(sent_ids), pilot, what="the group's first pass")
                got.clear()
                app.push_screen(MessageScreen(sent_ids[5]))
                await until(lambda: getattr(app.screen, "latest", None) is not None, pilot, what="message")
                await pilot.press("v")
                await fill(app, pilot, group=group, client="")
                for _ in range(100):
                    if got:
                        break
                    await pilot.pause(0.1)
                assert got == [b"act 5"]

        run(scenario())
    finally:
        tui_cluster.call(consumer.shutdown())


def test_read_only_hides_every_action(tui_cluster: TuiCluster) -> None:
    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv, read_only=True)
        async with app.run_test(size=(120, 40)) as pilot:
            for key, actions in (("2", ("new", "update", "delete", "send")),
                                 ("3", ("reset", "skip", "new", "update", "delete"))):  # fmt: skip
                await pilot.press(key)
                await pilot.pause(0.1)
                assert not any(app.screen.check_action(a, ()) for a in actions)
                await pilot.press("n")
                assert len(app.screen_stack) == 1  # no form opened
            app.push_screen(MessageScreen(tui_cluster.sent_ids[0]))
            await pilot.pause(0.1)
            assert not app.screen.check_action("deliver", ())

    run(scenario())


def test_a_bad_number_in_a_form_is_reported_not_sent(tui_cluster: TuiCluster) -> None:
    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot, AdminService([tui_cluster.namesrv], 5) as service:
            await pilot.press("2", "n")
            await fill(app, pilot, name="ActBadTopic", queues="many")
            await pilot.pause(0.3)
            with pytest.raises(NotFound):
                await service.topic_route("ActBadTopic")
            await asyncio.sleep(0)

    run(scenario())
