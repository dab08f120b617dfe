"""GET_CONSUMER_RUNNING_INFO (307) end to end: an admin asks a broker, the broker asks the client over
the client's own connection and relays its answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from admin.errors import NotFound, OperationFailed
from admin.models import GroupClients, GroupSpec
from admin.service import AdminService
from broker.client import (
    ConsumeConcurrentlyStatus,
    ConsumeFrom,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from broker.client.remoting_client import RemotingChannel, RemotingClient
from broker.protocol.bodies import MessageQueue
from broker.protocol.codes import CURRENT_VERSION, RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionData
from broker.protocol.remoting import RemotingCommand, make_request
from broker.protocol.running_info import (
    CLIENT_VERSION_NAME,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
    ProcessQueueInfo,
)
from broker.server import consumer_admin_processor
from cli.mqadmin.render import version_desc
from tests.broker.conftest import heartbeat_body
from tests.client.conftest import Cluster, async_test, running_cluster

TOPIC = "RunTopic"


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``check``; the timeout only fires when something is broken."""
    try:
        async with asyncio.timeout(20):
            while not await check():
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


@asynccontextmanager
async def cluster_with_messages(tmp: Path, count: int) -> AsyncIterator[Cluster]:
    async with running_cluster(tmp) as cluster:
        await cluster.create_topic(TOPIC, 4)
        async with Producer("pg-run", cluster.namesrv) as producer:
            for i in range(count):
                await producer.send(Message(TOPIC, f"m{i}".encode(), tags="t"))
        yield cluster


async def ask(cluster: Cluster, group: str, client_id: str) -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(consumerGroup=group, clientId=client_id)
    request = make_request(RequestCode.GET_CONSUMER_RUNNING_INFO, header)
    return await cluster.api.remoting.invoke(cluster.broker_addr, request, 10)


def test_body_reads_fastjson_object_keys_and_loose_property_values() -> None:
    # as a Java client writes it: MessageQueue objects as map keys, a Long among the properties
    java = (
        b'{"jstack":"main","mqPopTable":{},"mqTable":{{"brokerName":"b","queueId":3,"topic":"T"}:'
        b'{"cachedMsgCount":2,"commitOffset":7,"droped":false,"lastPullTimestamp":1700000000000,"locked":true}},'
        b'"properties":{"PROP_CONSUMER_START_TIMESTAMP":1700000000000,"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},'
        b'"statusTable":{"T":{"consumeFailedMsgs":1,"pullRT":1.5,"pullTPS":2.25}},'
        b'"subscriptionSet":[{"subString":"*","topic":"T"}]}'
    )
    info = ConsumerRunningInfo.from_json(java)
    assert info.mqTable == {
        MessageQueue("T", "b", 3): ProcessQueueInfo(
            commitOffset=7, cachedMsgCount=2, locked=True, lastPullTimestamp=1700000000000
        )
    }
    assert info.properties["PROP_CONSUMER_START_TIMESTAMP"] == "1700000000000"
    assert info.statusTable["T"].pullTPS == 2.25 and info.statusTable["T"].consumeFailedMsgs == 1
    assert info.jstack == "main" and info.subscriptionSet[0].topic == "T"
    assert ConsumerRunningInfo.from_json(info.to_json()) == info
    assert b'{"brokerName":"b","queueId":3,"topic":"T"}:{' in info.to_json()


def test_reported_client_version_is_the_announced_one() -> None:
    assert version_desc(CURRENT_VERSION) == CLIENT_VERSION_NAME


@async_test(90)
async def test_admin_sees_push_and_lite_consumers_through_the_broker(tmp_path: Path) -> None:
    async with cluster_with_messages(tmp_path, 8) as cluster:
        got: list[MessageExt] = []

        async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
            got.extend(msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        push = PushConsumer("cg-run", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
        push.subscribe(TOPIC, "t")
        push.register_message_listener_concurrently(listen)
        lite = LitePullConsumer(
            "cg-run-lite", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, auto_commit_interval=0.1
        )
        lite.subscribe(TOPIC)
        async with push, lite, AdminService([cluster.namesrv], 10) as service:
            polled: list[MessageExt] = []
            while len(polled) < 8:
                polled += await lite.poll(5.0)

            async def push_done() -> bool:
                clients = await service.group_clients("cg-run")
                return sum(q.commit_offset for q in clients.clients[0].queues if q.topic == TOPIC) == 8

            await until(push_done, "the push consumer to commit every message")
            result = await service.group_clients("cg-run")
            (client,) = result.clients
            assert client.client_id == push.client_id and client.error is None
            assert client.consume_type == "PUSH" and not client.orderly
            assert client.client_version == CLIENT_VERSION_NAME and client.start_timestamp > 0
            assert client.namesrv_addr == f"{cluster.namesrv};"
            assert {(s.topic, s.expression) for s in client.subscriptions} >= {(TOPIC, "t")}
            assert "%RETRY%cg-run" in {s.topic for s in client.subscriptions}
            queues = [q for q in client.queues if q.topic == TOPIC]
            assert [q.queue_id for q in queues] == [0, 1, 2, 3]
            assert all(q.last_pull_timestamp > 0 and not q.dropped for q in queues)
            assert all(
                q.cached_count == 0 and q.last_consume_timestamp > 0 for q in queues if q.commit_offset
            )
            rates = {r.topic: r for r in client.rates}
            assert rates[TOPIC].pull_tps > 0 and rates[TOPIC].consume_ok_tps > 0
            assert rates[TOPIC].consume_failed_msgs == 0
            assert client.properties["consumerGroup"] == "cg-run"
            assert client.problems == [] and result.same_subscriptions

            async def lite_committed() -> bool:
                info = (await service.group_clients("cg-run-lite", lite.client_id)).clients[0]
                return sum(q.commit_offset for q in info.queues) == 8

            await until(lite_committed, "the lite consumer's auto commit")
            (pull,) = (await service.group_clients("cg-run-lite", lite.client_id, jstack=True)).clients
            assert pull.consume_type == "PULL" and pull.client_id == lite.client_id
            assert [q.queue_id for q in pull.queues] == [0, 1, 2, 3]
            assert [s.topic for s in pull.subscriptions] == [TOPIC]
            assert pull.jstack is not None and "Task" in pull.jstack


@async_test()
async def test_a_client_not_online_is_refused(tmp_path: Path) -> None:
    async with cluster_with_messages(tmp_path, 0) as cluster:
        response = await ask(cluster, "cg-run", "10.0.0.1@nobody")
        assert response.code == ResponseCode.CONSUMER_NOT_ONLINE
        assert response.remark == "The Consumer <cg-run> <10.0.0.1@nobody> not online"
        async with AdminService([cluster.namesrv], 10) as service:
            with pytest.raises(NotFound, match="consumer group cg-run not found"):
                await service.group_clients("cg-run", "10.0.0.1@nobody")
            await service.group_create(GroupSpec("cg-run"))
            with pytest.raises(OperationFailed, match=r"<10\.0\.0\.1@nobody> not online"):
                await service.group_clients("cg-run", "10.0.0.1@nobody")
            assert await service.group_clients("cg-run") == GroupClients(
                "cg-run", [], same_subscriptions=True
            )


@async_test()
async def test_a_silent_client_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumer_admin_processor, "CLIENT_ANSWER_TIMEOUT", 0.5)
    async with cluster_with_messages(tmp_path, 0) as cluster:
        silent = RemotingClient()

        async def ignore(cmd: RemotingCommand, channel: RemotingChannel) -> RemotingCommand | None:
            return None  # never answers

        silent.register(RequestCode.GET_CONSUMER_RUNNING_INFO, ignore)
        try:
            body = heartbeat_body("10.0.0.2@silent", "cg-silent", {TOPIC: "*"})
            beat = await silent.invoke(cluster.broker_addr, make_request(RequestCode.HEART_BEAT, body=body))
            assert beat.code == ResponseCode.SUCCESS
            response = await ask(cluster, "cg-silent", "10.0.0.2@silent")
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert response.remark == "consumer <cg-silent> <10.0.0.2@silent> did not answer within 0.5 s"
            async with AdminService([cluster.namesrv], 10) as service:
                listing: GroupClients = await service.group_clients("cg-silent")
                (client,) = listing.clients
                assert client.client_id == "10.0.0.2@silent" and client.queues == []
                assert client.error is not None and "did not answer within 0.5 s" in client.error
        finally:
            await silent.close()


def test_stuck_queues_and_differing_subscriptions_are_pointed_out() -> None:
    from admin.models import ClientInfo, ProblemKind, QueueProblem
    from admin.service.groups import _running_view, _same_subscriptions

    now = int(time.time() * 1000)
    long_ago = now - 5 * 60_000

    def answer(orderly: bool, expression: str, queue: ProcessQueueInfo) -> ConsumerRunningInfo:
        props = {
            "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
            "PROP_CONSUMEORDERLY": str(orderly).lower(),
            "PROP_CONSUMER_START_TIMESTAMP": str(long_ago),
        }
        subs = [SubscriptionData(topic="T", subString=expression)]
        return ConsumerRunningInfo(props, subs, {MessageQueue("T", "b", 0): queue})

    client = ClientInfo("c1", "127.0.0.1:1", "JAVA", 479, "b")
    stuck = ProcessQueueInfo(cachedMsgCount=3, lastConsumeTimestamp=long_ago)
    blocked = _running_view(client, answer(False, "*", stuck))
    (problem,) = blocked.problems
    assert problem.kind is ProblemKind.BLOCKED and problem.for_ms >= 5 * 60_000
    unlocked = _running_view(client, answer(True, "a", ProcessQueueInfo(lastLockTimestamp=long_ago)))
    assert [(p.kind, p.queue_id) for p in unlocked.problems] == [(ProblemKind.NOT_LOCKED, 0)]
    dropped = ProcessQueueInfo(locked=True, droped=True, tryUnlockTimes=2)
    assert _running_view(client, answer(True, "a", dropped)).problems == [
        QueueProblem("T", "b", 0, ProblemKind.UNLOCK_FAILED, 0, 2)
    ]
    assert not _same_subscriptions([blocked, unlocked], now)
    assert _same_subscriptions([blocked, blocked], now)


def _mqadmin(namesrv: str, *args: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from cli.mqadmin import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "-n", namesrv])
    return code, out.getvalue(), err.getvalue()


@async_test()
async def test_mqadmin_consumer_status_details_one_client_and_lists_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.chdir(tmp_path)  # without -i, reports are written under ./<now>/<clientId>
    async with cluster_with_messages(tmp_path, 4) as cluster:
        lite = LitePullConsumer("cg-status", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
        lite.subscribe(TOPIC)
        async with lite:
            polled: list[MessageExt] = []
            while len(polled) < 4:
                polled += await lite.poll(5.0)
            code, out, _ = await asyncio.to_thread(
                _mqadmin, cluster.namesrv, "consumerStatus", "-g", "cg-status", "-i", lite.client_id
            )
            assert code == 0
            assert out.startswith("#Consumer Properties#\n")
            assert f"Topic: {TOPIC:<40} ClassFilter: false    SubExpression: *" in out
            mq_lines = [
                line for line in out.splitlines() if line.startswith(TOPIC) and "ProcessQueueInfo [" in line
            ]
            assert len(mq_lines) == 4 and all("droped=false" in line for line in mq_lines)

            code, out, _ = await asyncio.to_thread(
                _mqadmin, cluster.namesrv, "consumerStatus", "-g", "cg-status"
            )
            assert code == 0
            header, row = out.splitlines()[:2]
            assert header.split() == ["#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile"]
            index, client_id, _version, path = row.split()
            assert (index, client_id) == ("1", lite.client_id)
            assert (tmp_path / path).read_text().startswith("#Consumer Properties#")
            assert "Same subscription in the same group of consumer" in out and "Rebalance OK" in out

            await lite.commit()
            code, out, _ = await asyncio.to_thread(
                _mqadmin, cluster.namesrv, "consumerProgress", "-g", "cg-status", "-s", "true"
            )
            assert code == 0
            assert out.splitlines()[0].split()[:6] == [
                "#Topic", "#Broker", "Name", "#QID", "#Broker", "Offset"
            ]  # fmt: skip
            rows = [line.split() for line in out.splitlines() if line.startswith(TOPIC)]
            assert len(rows) == 4 and {r[5] for r in rows} == {lite.client_id.partition("@")[0]}

            code, _, err = await asyncio.to_thread(
                _mqadmin, cluster.namesrv, "consumerStatus", "-g", "cg-status", "-i", "10.0.0.1@nobody"
            )
            assert code == 1 and "not online" in err and err.count("\n") == 1
