"""Ordered topics (ORDER_TOPIC_CONFIG routes, broker-side queue locks) and send-path flow control."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

from broker.client.admin_api import AdminApi, RemoteError
from broker.protocol.bodies import MessageQueue
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import LockBatchRequestBody, LockBatchResponseBody
from broker.server.flow_control import PC_SYNCHRONIZED
from broker.server.metrics import render_metrics
from tests.features2.conftest import Cluster, async_test, running, send

TOPIC = "Ordered"


@async_test()
async def test_route_carries_order_topic_conf_only_when_the_namesrv_enables_it(tmp_path: Path) -> None:
    for enabled in (True, False):
        async with running(tmp_path / str(enabled), namesrv={"order_message_enable": enabled}) as cluster:
            cluster.broker.topics.ensure(TOPIC, 4)
            await send(cluster, TOPIC)  # any change re-registers the topic
            admin = AdminApi(cluster.client)
            await admin.put_kv(cluster.namesrv, "ORDER_TOPIC_CONFIG", TOPIC, "broker-f:4;broker-g:2")
            while True:
                try:
                    route = await admin.topic_route([cluster.namesrv], TOPIC)
                    break
                except RemoteError:  # not registered yet
                    await asyncio.sleep(0.05)
            assert route.orderTopicConf == ("broker-f:4;broker-g:2" if enabled else None)


async def lock(
    cluster: Cluster, client_id: str, queues: list[MessageQueue], *, unlock: bool = False
) -> set[int]:
    body = LockBatchRequestBody(consumerGroup="OrderGroup", clientId=client_id, mqSet=queues).to_json()
    code = RequestCode.UNLOCK_BATCH_MQ if unlock else RequestCode.LOCK_BATCH_MQ
    response = await cluster.call(code, body=body)
    assert response.code == ResponseCode.SUCCESS
    return (
        set()
        if unlock
        else {mq.queueId for mq in LockBatchResponseBody.from_json(response.body or b"{}").lockOKMQSet}
    )


@async_test()
async def test_two_consumers_cannot_lock_the_same_queue_and_locks_expire(tmp_path: Path) -> None:
    async with running(tmp_path) as cluster:
        cluster.broker.locks.max_live_seconds = 0.3
        queues = [MessageQueue(topic=TOPIC, brokerName="broker-f", queueId=i) for i in range(4)]
        assert await lock(cluster, "c1", queues[:2]) == {0, 1}
        assert await lock(cluster, "c2", queues) == {2, 3}  # c1's queues stay c1's
        assert await lock(cluster, "c1", queues) == {0, 1}  # renewal; c2's are refused
        await lock(cluster, "c2", queues[:2], unlock=True)  # not the owner: no effect
        assert await lock(cluster, "c2", queues[:2]) == set()
        await asyncio.sleep(0.4)  # nobody renewed: every lock expired
        assert await lock(cluster, "c2", queues[:2]) == {0, 1}
        assert await lock(cluster, "c1", queues) == {2, 3}
        await lock(cluster, "c2", queues[:1], unlock=True)
        assert await lock(cluster, "c1", queues[:1]) == {0}


@async_test()
async def test_a_send_that_waited_too_long_in_the_send_queue_is_refused(tmp_path: Path) -> None:
    for on_loop in (False, True):  # appends on the loop still queue behind a write on the thread
        async with running(
            tmp_path / str(on_loop), wait_time_mills_in_send_queue=200, append_on_event_loop=on_loop
        ) as cluster:
            broker = cluster.broker
            stall = asyncio.create_task(broker.write(time.sleep, 0.6))  # the store-writer thread is busy
            await asyncio.sleep(0.05)
            response = await send(cluster, TOPIC)
            await stall
            assert response.code == ResponseCode.SYSTEM_BUSY, on_loop
            assert (response.remark or "").startswith("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control")
            assert (await send(cluster, TOPIC)).code == ResponseCode.SUCCESS  # and then the queue is clear


@async_test()
async def test_append_on_event_loop_moves_appends_to_the_loop_at_runtime(tmp_path: Path) -> None:
    async with running(tmp_path, append_on_event_loop=False) as cluster:
        store = cluster.broker.store
        clock = store.clock
        appended_on: list[int] = []

        def noting_clock() -> float:  # read under the write lock, by whichever thread appends
            appended_on.append(threading.get_ident())
            return clock()

        store.clock = noting_clock
        loop_thread = threading.get_ident()
        assert (await send(cluster, TOPIC, b"on the writer thread")).code == ResponseCode.SUCCESS
        await AdminApi(cluster.client).update_broker_config(cluster.addr, {"appendOnEventLoop": "true"})
        assert (await send(cluster, TOPIC, b"on the loop")).code == ResponseCode.SUCCESS
        store.clock = clock
        assert appended_on[0] != loop_thread
        assert appended_on[-1] == loop_thread
        # any other write (recovery, deletion, cleanup) stays on the writer thread
        assert await cluster.broker.write(threading.get_ident) != loop_thread


@async_test()
async def test_a_stalled_append_turns_new_sends_away_with_pc_synchronized(tmp_path: Path) -> None:
    async with running(tmp_path, wait_time_mills_in_send_queue=5000, append_on_event_loop=False) as cluster:
        store = cluster.broker.store
        cluster.broker.store_config.os_page_cache_busy_time_out_mills = 200
        clock = store.clock

        def slow_clock() -> float:  # read under the write lock: an append stuck inside it
            time.sleep(0.7)
            return clock()

        store.clock = slow_clock
        stalled = asyncio.create_task(send(cluster, TOPIC, b"slow"))
        while store.lock_held_ms() < 300:
            await asyncio.sleep(0.02)
        response = await send(cluster, TOPIC, b"turned away")
        assert (response.code, response.remark) == (ResponseCode.SYSTEM_BUSY, PC_SYNCHRONIZED)
        assert (await stalled).code == ResponseCode.SUCCESS
        store.clock = clock
        assert (await send(cluster, TOPIC)).code == ResponseCode.SUCCESS


@async_test()
async def test_a_stalled_append_on_the_loop_sends_later_appends_to_the_writer_thread(tmp_path: Path) -> None:
    async with running(tmp_path, wait_time_mills_in_send_queue=5000) as cluster:  # appends on the loop
        store = cluster.broker.store
        cluster.broker.store_config.os_page_cache_busy_time_out_mills = 200
        clock = store.clock
        loop_thread = threading.get_ident()
        appended_on: list[int] = []
        stall_s = [0.2]

        def stalling_clock() -> float:  # read under the write lock, by whichever thread appends
            appended_on.append(threading.get_ident())
            time.sleep(stall_s[0])
            return clock()

        store.clock = stalling_clock
        admin = AdminApi(cluster.client)
        assert (await admin.runtime_info(cluster.addr))["appendsOnEventLoop"] == "true"
        assert (await send(cluster, TOPIC, b"stalls the loop")).code == ResponseCode.SUCCESS
        assert appended_on[-1] == loop_thread
        # operators see the switch: the runtime info and /metrics
        assert (await admin.runtime_info(cluster.addr))["appendsOnEventLoop"] == "false"
        assert re.search(
            r"^rocketmq_appends_on_event_loop\{[^}]*\} 0$", render_metrics(cluster.broker, None), re.M
        )
        # the next spell of the stall is on the writer thread: the loop turns sends away meanwhile
        stall_s[0] = 0.7
        stalled = asyncio.create_task(send(cluster, TOPIC, b"stalls the thread"))
        deadline = time.monotonic() + 5
        while store.lock_held_ms() < 300:  # an append stalled on the loop would never be seen held
            assert time.monotonic() < deadline, "the loop never saw the stalled append"
            await asyncio.sleep(0.02)
        response = await send(cluster, TOPIC, b"turned away")
        assert (response.code, response.remark) == (ResponseCode.SYSTEM_BUSY, PC_SYNCHRONIZED)
        assert (await stalled).code == ResponseCode.SUCCESS
        assert appended_on[-1] != loop_thread
        # once the spell is over, appends are back on the loop
        stall_s[0] = 0.0
        cluster.broker._writes.stalled_until = 0.0
        assert (await send(cluster, TOPIC, b"quick again")).code == ResponseCode.SUCCESS
        assert appended_on[-1] == loop_thread
        assert re.search(
            r"^rocketmq_appends_on_event_loop\{[^}]*\} 1$", render_metrics(cluster.broker, None), re.M
        )
        store.clock = clock


@async_test()
async def test_a_full_disk_answers_service_not_available(tmp_path: Path) -> None:
    async with running(tmp_path) as cluster:
        cluster.broker.store.disk_full = True
        response = await send(cluster, TOPIC)
        assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE
        cluster.broker.store.disk_full = False
        assert (await send(cluster, TOPIC)).code == ResponseCode.SUCCESS
