"""Each screen against a real NameServer + broker: what it shows equals what the admin service says."""

from __future__ import annotations

from admin.models import MessageRange, TopicKind
from admin.service import AdminService
from admin.tui.screens.broker import BrokerScreen
from admin.tui.screens.message import MessageScreen
from admin.units import size
from tests.admin.tui.conftest import DEAD, DLQ_GROUP, GROUP, MESSAGES, TOPIC, TuiCluster, run, until
from tests.admin.tui.helpers import app_for, column, rows
from tests.cli.online.conftest import heartbeat


def test_cluster_screen_shows_the_brokers_as_the_service_does(tui_cluster: TuiCluster) -> None:
    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: app.screen.latest is not None, pilot, what="cluster data")
            async with AdminService([tui_cluster.namesrv], 5) as service:
                expected = (await service.cluster_list()).brokers
            shown = rows(app, "brokers")
            assert list(shown) == [b.address for b in expected]
            for b in expected:
                row = shown[b.address]
                assert row[0] == "UP"
                assert row[1:7] == [b.cluster, b.broker_name, str(b.broker_id), b.role, b.address, b.version]
                assert row[10] == size(b.commitlog_min_offset or 0)
            assert rows(app, "namesrvs")[tui_cluster.namesrv][1] == "UP"
            assert "connected" in app.status
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, BrokerScreen) and app.screen.latest is not None, pilot)
            runtime = column(app, "runtime", "value")
            assert runtime["brokerActive"] == "true"
            assert runtime["commitLogMaxOffset"].endswith(("B", "KiB", "MiB"))  # bytes in units
            assert column(app, "config", "value")["brokerName"] == "broker-a"
            await pilot.press("escape")
            assert not isinstance(app.screen, BrokerScreen)

    run(scenario())


def test_topics_screen_list_filter_and_detail(tui_cluster: TuiCluster) -> None:
    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("2")
            await until(lambda: app.screen.latest is not None, pilot, what="topics")
            async with AdminService([tui_cluster.namesrv], 5) as service:
                listing = (await service.topic_list()).topics
                status = await service.topic_status(TOPIC)
                described = await service.topic_describe(TOPIC)
            normal = [t.name for t in listing if t.kind is TopicKind.NORMAL]
            assert list(rows(app, "topics")) == normal
            await pilot.press("s")  # show system topics too
            assert set(rows(app, "topics")) == {
                t.name for t in listing if t.kind in (TopicKind.NORMAL, TopicKind.SYSTEM)
            }
            await pilot.press("slash", *"Ord", "enter")
            assert list(rows(app, "topics")) == [TOPIC]
            await pilot.press("enter")
            await until(lambda: app.screen.latest.detail is not None, pilot, what="topic detail")
            queues = rows(app, "queues")
            assert list(queues) == [f"{q.broker_name}/{q.queue_id}" for q in status.queues]
            for q in status.queues:
                assert queues[f"{q.broker_name}/{q.queue_id}"][2:5] == [
                    str(q.min_offset),
                    str(q.max_offset),
                    str(q.messages),
                ]
            assert sum(q.messages for q in status.queues) == MESSAGES
            route = rows(app, "route")["broker-a"]
            assert route[3:6] == ["4", "4", "RW-"]
            assert GROUP in str(app.screen.query_one("#topic-groups").render())
            assert described.groups == [GROUP]

    run(scenario())


def test_groups_screen_lag_per_queue_and_clients(tui_cluster: TuiCluster) -> None:
    # the session's client heartbeats once; after a long session the broker would have let it go
    tui_cluster.call(heartbeat(tui_cluster.client, tui_cluster.broker, "10.0.0.9@tui", GROUP, TOPIC))

    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("colon", *f"group {GROUP}", "enter")
            await until(
                lambda: (
                    getattr(app.screen, "latest", None) is not None and app.screen.latest.detail is not None
                ),
                pilot,
                what="group detail",
            )
            async with AdminService([tui_cluster.namesrv], 5) as service:
                groups = (await service.group_list(include_system=False)).groups
                lag = await service.group_lag(GROUP)
                conns = await service.group_connections(GROUP)
            assert sorted(rows(app, "groups")) == [g.name for g in groups]  # the screen: worst lag first
            shown_lag = column(app, "groups", "lag")
            assert shown_lag[GROUP] == f"{lag.diff_total:,}"
            assert rows(app, "groups")[GROUP][1:3] == ["online", "1"]
            shown = rows(app, "lag")
            for q in lag.queues:
                row = shown[f"{q.topic}/{q.broker_name}/{q.queue_id}"]
                assert row[3:7] == [
                    f"{q.broker_offset:,}",
                    f"{q.consumer_offset:,}",
                    f"{q.diff:,}",
                    f"{q.inflight:,}",
                ]
            assert lag.diff_total == MESSAGES - 4 * 2
            assert list(rows(app, "clients")) == [c.client_id for c in conns.clients]
            assert list(rows(app, "subscriptions")) == [TOPIC]
            await pilot.press("r")
            await until(lambda: len(app.screen.history) >= 2, pilot, what="lag history")
            assert list(app.screen.history)[-1] == lag.diff_total

    run(scenario())


def test_dlq_screen_depths_and_browse(tui_cluster: TuiCluster) -> None:
    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv, read_only=True)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("4")
            await until(lambda: app.screen.latest is not None, pilot, what="dlq")
            async with AdminService([tui_cluster.namesrv], 5) as service:
                dlq = {t.group: t.messages for t in (await service.dlq_list()).topics}
                browsed = (await service.dlq_browse(DLQ_GROUP, MessageRange())).messages
            assert dlq[DLQ_GROUP] == DEAD
            assert column(app, "special", "DLQ")[DLQ_GROUP] == str(DEAD)
            app.screen.focus_object(DLQ_GROUP)
            await until(lambda: app.screen.latest.browse is not None, pilot, what="browse")
            shown = rows(app, "browse")
            assert len(shown) == DEAD
            for m in browsed:
                row = next(r for r in shown.values() if r[2] == m.msg_id)
                assert row[3] == "Payments" and row[1] == str(m.queue_offset)
            # read-only: no resend key in the footer, and pressing it changes nothing
            assert not app.screen.check_action("resend_all", ())
            await pilot.press("a")
            assert len(app.screen_stack) == 1

    run(scenario())


def test_lookup_by_id_and_by_key_and_tracks(tui_cluster: TuiCluster) -> None:
    async def scenario() -> None:
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("5")
            msg_id = tui_cluster.sent_ids[3]
            app.screen.query_one("#msgid").value = msg_id
            await pilot.press("enter")
            await until(lambda: app.screen.latest is not None, pilot, what="by id")
            assert list(rows(app, "found")) == [msg_id]
            await pilot.press("enter")
            await until(
                lambda: isinstance(app.screen, MessageScreen) and app.screen.latest is not None, pilot
            )
            assert column(app, "properties", "value")["KEYS"] == "order-3 all"
            assert rows(app, "tracks")[GROUP][1], rows(app, "tracks")
            assert "order 3" in str(app.screen.query_one("#message-body").render())
            await pilot.press("b", "b")
            assert "6f 72 64" in str(app.screen.query_one("#message-body").render())
            await pilot.press("escape")
            lookup = app.screen
            lookup.query_one("#msgid").value = ""
            lookup.query_one("#topic").value = TOPIC
            lookup.query_one("#key").value = "order-5"
            lookup.query_one("#begin").value = "-1h"
            lookup.query_one("#key").focus()
            await pilot.press("enter")
            await until(
                lambda: lookup.latest is not None and len(lookup.latest.messages) == 1, pilot, what="by key"
            )
            assert list(rows(app, "found")) == [tui_cluster.sent_ids[5]]
            lookup.query_one("#key").value = ""
            lookup.query_one("#msgid").value = tui_cluster.uniq_keys[7]
            lookup.query_one("#msgid").focus()
            await pilot.press("enter")
            await until(
                lambda: list(rows(app, "found")) == [tui_cluster.sent_ids[7]], pilot, what="by UNIQ_KEY"
            )

    run(scenario())


def test_clients_screen_shows_what_each_client_reports(tui_cluster: TuiCluster) -> None:
    from broker.client import ConsumeFrom, LitePullConsumer

    async def scenario() -> None:
        lite = LitePullConsumer("tui-lite", tui_cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
        lite.subscribe(TOPIC)
        async with lite:
            polled = 0
            while polled < 1:
                polled += len(await lite.poll(5.0))
            app = app_for(tui_cluster.namesrv)
            async with app.run_test(size=(140, 40)) as pilot:
                await pilot.press("colon", *"group tui-lite", "enter")
                await until(lambda: getattr(app.screen, "selected", None) == "tui-lite", pilot, what="group")
                await pilot.press("c")
                await until(
                    lambda: (
                        getattr(app.screen, "group", None) == "tui-lite" and app.screen.latest is not None
                    ),
                    pilot,
                    what="the clients' answers",
                )
                clients = rows(app, "client-list")
                assert list(clients) == [lite.client_id]
                assert clients[lite.client_id][3:5] == ["PULL", "4"] and clients[lite.client_id][-1] == "ok"
                queues = rows(app, "client-queues")
                assert sorted(int(r[3]) for r in queues.values()) == [0, 1, 2, 3]
                assert {r[1] for r in queues.values()} == {TOPIC}
                await pilot.press("escape")
                await until(lambda: getattr(app.screen, "selected", None) == "tui-lite", pilot, what="back")

    run(scenario())


def test_trace_screen_shows_a_traced_send_and_says_when_there_is_none(tui_cluster: TuiCluster) -> None:
    from admin.models import TopicSpec
    from admin.tui.screens.trace import TraceScreen
    from broker.client import Message, Producer

    async def scenario() -> None:
        async with AdminService([tui_cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec("Traced", 1, 1))
        async with Producer("tui-traced", tui_cluster.namesrv, trace=True) as producer:
            sent = await producer.send(Message("Traced", b"traced body", tags="T", keys=["k-1"]))
        app = app_for(tui_cluster.namesrv)
        async with app.run_test(size=(140, 40)) as pilot:
            app.push_screen(MessageScreen(sent.offset_msg_id, "Traced"))
            await until(
                lambda: isinstance(app.screen, MessageScreen) and app.screen.latest is not None, pilot
            )
            await pilot.press("t")
            await until(
                lambda: isinstance(app.screen, TraceScreen) and app.screen.latest is not None,
                pilot,
                what="trace",
            )
            (pub,) = rows(app, "trace-entries").values()
            assert pub[0] == "Pub" and pub[2] == "tui-traced" and pub[6] == "success"
            assert "Traced" in str(app.screen.query_one("#trace-facts").render())
            await pilot.press("escape")
            app.pop_screen()
            app.push_screen(TraceScreen(tui_cluster.uniq_keys[0]))  # sent without tracing
            await until(lambda: isinstance(app.screen, TraceScreen) and app.screen.latest is not None, pilot)
            assert rows(app, "trace-entries") == {}
            assert "trace=True" in str(app.screen.query_one("#trace-facts").render())

    run(scenario())
