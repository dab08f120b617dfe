"""The SDK against a real NameServer and broker on loopback."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from broker.client import (
    BlockingLitePullConsumer,
    BlockingProducer,
    ConsumeConcurrentlyStatus,
    ConsumeFrom,
    ConsumeOrderlyStatus,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageModel,
    MessageQueue,
    Producer,
    PushConsumer,
    SendStatus,
    TransactionProducer,
    hash_selector,
)
from broker.client.api import request
from broker.protocol import headers as H
from broker.protocol.codes import RequestCode
from tests.broker.client.conftest import FAST_DELAY_LEVELS, async_test, needs_servers, running_cluster

pytestmark = needs_servers

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


async def until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Wait for ``condition``; the timeout only ever fires when something is broken."""
    try:
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def collector(store: list[MessageExt]) -> Callable[[list[MessageExt]], Awaitable[ConsumeConcurrentlyStatus]]:
    async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        store.extend(msgs)
        return OK

    return listen


def push_consumer(group: str, namesrv: str, **kwargs: Any) -> PushConsumer:
    kwargs.setdefault("consume_from", ConsumeFrom.FIRST_OFFSET)
    return PushConsumer(group, namesrv, rebalance_interval=2.0, **kwargs)


@async_test()
async def test_produce_and_consume_with_tags(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        async with Producer("pg", cluster.namesrv) as producer:
            sent = {}
            for i in range(30):
                msg = Message("TagTopic", f"m{i}".encode(), tags="abc"[i % 3], keys=[f"k{i}"])
                result = await producer.send(msg)  # the topic is auto-created from TBW102
                assert result.status is SendStatus.SEND_OK and result.msg_id == msg.uniq_key
                sent[result.msg_id] = msg
            big = Message("TagTopic", b"z" * 10_000, tags="a")
            sent[(await producer.send(big)).msg_id] = big
            batch = [Message("TagTopic", f"b{i}".encode(), tags="b") for i in range(5)]
            (batch_result,) = await producer.send_batch(batch)
            assert batch_result.msg_id.split(",") == [m.uniq_key for m in batch]
            sent.update({m.uniq_key: m for m in batch if m.uniq_key})
            await producer.send_oneway(Message("TagTopic", b"oneway", tags="c"))
        got: list[MessageExt] = []
        consumer = push_consumer("cg-tags", cluster.namesrv)
        consumer.subscribe("TagTopic", "a || b")
        consumer.register_message_listener_concurrently(collector(got))
        async with consumer:
            wanted = {mid for mid, m in sent.items() if m.tags in ("a", "b")}
            await until(lambda: {m.msg_id for m in got} >= wanted, "the a/b messages")
            await asyncio.sleep(0.3)
        assert all(m.tags in ("a", "b") for m in got)
        by_id = {m.msg_id: m for m in got}
        assert by_id[big.uniq_key or ""].body == big.body
        assert by_id[batch[0].uniq_key or ""].body == b"b0"


async def kill(consumer: PushConsumer) -> None:
    """A crash: background work stops and connections drop, nothing is committed or unregistered."""
    await consumer.instance.stop_tasks()
    for task in list(consumer._consumes):
        task.cancel()
    await consumer.instance.remoting.close()


@async_test(90)
async def test_ordered_messages_stay_in_order_while_consumers_come_and_go(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("OrderTopic", 8)
        deliveries: list[tuple[str, str, int]] = []  # (consumer, key, seq) in processing order

        def make(name: str) -> PushConsumer:
            async def listen(msgs: list[MessageExt]) -> ConsumeOrderlyStatus:
                for m in msgs:
                    key, seq = m.body.decode().split(":")
                    deliveries.append((name, key, int(seq)))
                await asyncio.sleep(0.002)
                return ConsumeOrderlyStatus.SUCCESS

            consumer = push_consumer("cg-order", cluster.namesrv, persist_interval=1.0)
            consumer.subscribe("OrderTopic")
            consumer.register_message_listener_orderly(listen)
            return consumer

        keys = [f"order-{k}" for k in range(6)]
        per_key = 30
        c1, c2, c3 = make("c1"), make("c2"), make("c3")

        async def send(seqs: range) -> None:
            for seq in seqs:
                for key in keys:
                    msg = Message("OrderTopic", f"{key}:{seq}".encode())
                    msg.sharding_key = key
                    await producer.send(msg, selector=hash_selector)

        def first_seen() -> dict[str, list[int]]:
            seen: dict[str, list[int]] = collections.defaultdict(list)
            for _, key, seq in deliveries:
                if seq not in seen[key]:
                    seen[key].append(seq)
            return seen

        async with Producer("pg-order", cluster.namesrv) as producer:
            await c1.start()
            await c2.start()
            await send(range(10))
            await until(
                lambda: all(len(v) == 10 for v in first_seen().values()) and len(first_seen()) == 6, "1st"
            )
            await c3.start()  # joins, and gets its share once the others let go
            await until(lambda: len(c3.rebalancer.table) >= 2, "c3 to own queues")
            await send(range(10, 20))
            await until(lambda: all(len(v) == 20 for v in first_seen().values()), "2nd third")
            await c1.shutdown()  # leaves: its queues move to c2 and c3
            await until(
                lambda: len(c2.rebalancer.table) + len(c3.rebalancer.table) == 9, "c1's queues to move"
            )
            await send(range(20, per_key))
            await until(lambda: all(len(v) == per_key for v in first_seen().values()), "everything")
        await c2.shutdown()
        await c3.shutdown()
        for key, seqs in first_seen().items():
            assert seqs == list(range(per_key)), key
        for name in ("c1", "c2", "c3"):
            for key in keys:
                mine = [seq for who, k, seq in deliveries if who == name and k == key]
                assert all(a < b for a, b in itertools.pairwise(mine)) or _restarts_only(mine), (
                    name,
                    key,
                    mine,
                )


def _restarts_only(seqs: list[int]) -> bool:
    """A queue that came back to a consumer restarts at its committed offset: never skips forward."""
    return all(b <= a + 1 for a, b in itertools.pairwise(seqs))


def has_all(store: list[MessageExt], ids: set[str]) -> bool:
    return {m.msg_id for m in store} >= ids


@async_test()
async def test_broadcasting_delivers_everything_to_everyone(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("BcTopic", 2)
        received: dict[str, list[MessageExt]] = {"x": [], "y": []}
        consumers = []
        for name, store in received.items():
            consumer = push_consumer(
                "cg-bc", cluster.namesrv, message_model=MessageModel.BROADCASTING, offset_dir=tmp_path / name
            )
            consumer.subscribe("BcTopic")
            consumer.register_message_listener_concurrently(collector(store))
            await consumer.start()
            consumers.append(consumer)
        async with Producer("pg-bc", cluster.namesrv) as producer:
            ids = {(await producer.send(Message("BcTopic", f"{i}".encode()))).msg_id for i in range(10)}
        for name, store in received.items():
            await until(functools.partial(has_all, store, ids), f"consumer {name}")
        for consumer in consumers:
            await consumer.shutdown()
        assert all(any((tmp_path / name).rglob("cg-bc.json")) for name in received)


@async_test()
async def test_failed_messages_come_back_through_the_retry_topic(tmp_path: Path) -> None:
    async with running_cluster(tmp_path, message_delay_level=FAST_DELAY_LEVELS) as cluster:
        assert await cluster.supports(RequestCode.CONSUMER_SEND_MSG_BACK), (
            f"the broker lost its handler of {RequestCode.CONSUMER_SEND_MSG_BACK!r}"
        )
        await cluster.create_topic("RetryTopic", 2)
        attempts: list[MessageExt] = []

        async def fail_first(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
            attempts.extend(msgs)
            if all(m.reconsume_times == 0 for m in msgs):
                return ConsumeConcurrentlyStatus.RECONSUME_LATER
            return OK

        consumer = push_consumer("cg-retry", cluster.namesrv)
        consumer.subscribe("RetryTopic")
        consumer.register_message_listener_concurrently(fail_first)
        async with Producer("pg-retry", cluster.namesrv) as producer, consumer:
            ids = {(await producer.send(Message("RetryTopic", f"{i}".encode()))).msg_id for i in range(3)}
            await until(lambda: {m.msg_id for m in attempts if m.reconsume_times == 1} >= ids, "retries", 30)
        retried = [m for m in attempts if m.reconsume_times == 1]
        assert all(m.topic == "RetryTopic" for m in retried)  # shown with the original topic


@async_test()
async def test_a_killed_consumer_loses_nothing(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("KillTopic", 4)
        done: dict[str, str] = {}
        stalled: set[str] = set()
        hang = asyncio.Event()

        def listener(
            name: str, stall_after: int | None
        ) -> Callable[[list[MessageExt]], Awaitable[ConsumeConcurrentlyStatus]]:
            async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
                if stall_after is not None and len(done) >= stall_after:
                    stalled.update(m.msg_id for m in msgs)
                    await hang.wait()  # in flight when the process dies: never acknowledged
                for m in msgs:
                    done.setdefault(m.msg_id, name)
                return OK

            return listen

        victim = push_consumer("cg-kill", cluster.namesrv)
        victim.subscribe("KillTopic")
        victim.register_message_listener_concurrently(listener("victim", stall_after=5))
        survivor = push_consumer("cg-kill", cluster.namesrv)
        survivor.subscribe("KillTopic")
        survivor.register_message_listener_concurrently(listener("survivor", stall_after=None))
        async with Producer("pg-kill", cluster.namesrv) as producer:
            await victim.start()
            ids = {(await producer.send(Message("KillTopic", f"{i}".encode()))).msg_id for i in range(40)}
            await until(lambda: len(done) >= 5, "the victim to consume a few")
            await survivor.start()
            await kill(victim)
            more = {
                (await producer.send(Message("KillTopic", f"late{i}".encode()))).msg_id for i in range(10)
            }
            await until(lambda: set(done) >= ids | more, "every message to be consumed")
        await survivor.shutdown()
        assert stalled and all(done[mid] == "survivor" for mid in stalled)


def decide(state: LocalTransactionState) -> Callable[[Message], LocalTransactionState]:
    return lambda _msg: state


@async_test()
async def test_transactions(tmp_path: Path) -> None:
    broker = {"transaction_check_interval": 1000, "transaction_time_out": 1000}
    async with running_cluster(tmp_path, broker) as cluster:
        assert await cluster.supports(RequestCode.END_TRANSACTION), (
            f"the broker lost its handler of {RequestCode.END_TRANSACTION!r}"
        )
        await cluster.create_topic("TxTopic", 2)
        checked: list[MessageExt] = []

        def checker(msg: MessageExt) -> LocalTransactionState:
            checked.append(msg)
            return LocalTransactionState.COMMIT_MESSAGE

        got: list[MessageExt] = []
        consumer = push_consumer("cg-tx", cluster.namesrv)
        consumer.subscribe("TxTopic")
        consumer.register_message_listener_concurrently(collector(got))
        async with TransactionProducer("pg-tx", cluster.namesrv, checker) as producer, consumer:
            outcomes = {}
            for body, state in (
                (b"commit", LocalTransactionState.COMMIT_MESSAGE),
                (b"rollback", LocalTransactionState.ROLLBACK_MESSAGE),
                (b"unknown", LocalTransactionState.UNKNOW),
            ):
                result = await producer.send_message_in_transaction(Message("TxTopic", body), decide(state))
                assert result.local_state is state
                outcomes[body] = result.send_result.msg_id
            await until(lambda: any(m.body == b"commit" for m in got), "the committed message")
            await until(lambda: bool(checked), "a transaction check", timeout=10)
            assert checked[0].msg_id == outcomes[b"unknown"] and checked[0].topic == "TxTopic"
            await until(lambda: any(m.body == b"unknown" for m in got), "the checked-and-committed message")
        assert not any(m.body == b"rollback" for m in got)


@async_test()
async def test_transaction_check_reaches_another_producer_when_the_first_dies(tmp_path: Path) -> None:
    broker = {"transaction_check_interval": 1000, "transaction_time_out": 1000}
    async with running_cluster(tmp_path, broker) as cluster:
        await cluster.create_topic("TxFailover", 1)
        asked: dict[str, list[MessageExt]] = {"first": [], "second": []}

        def checker(name: str) -> Callable[[MessageExt], LocalTransactionState]:
            def check(msg: MessageExt) -> LocalTransactionState:
                asked[name].append(msg)
                return LocalTransactionState.COMMIT_MESSAGE

            return check

        got: list[MessageExt] = []
        consumer = push_consumer("cg-tx-failover", cluster.namesrv)
        consumer.subscribe("TxFailover")
        consumer.register_message_listener_concurrently(collector(got))
        first = TransactionProducer("pg-tx-failover", cluster.namesrv, checker("first"))
        await first.start()
        second = TransactionProducer("pg-tx-failover", cluster.namesrv, checker("second"))
        async with second, consumer:
            # a live member of the group: it has sent, so the broker knows it
            await second.send_message_in_transaction(
                Message("TxFailover", b"warm-up"), decide(LocalTransactionState.COMMIT_MESSAGE)
            )
            result = await first.send_message_in_transaction(
                Message("TxFailover", b"orphan"), decide(LocalTransactionState.UNKNOW)
            )
            # the first producer dies: its connections drop without an unregister
            await first.instance.remoting.close()
            await until(lambda: bool(asked["second"]), "a check at the surviving producer", timeout=30)
            assert asked["second"][0].msg_id == result.send_result.msg_id
            await until(
                lambda: any(m.body == b"orphan" for m in got), "the message committed by the survivor"
            )
        assert not asked["first"]
        with contextlib.suppress(Exception):
            await first.shutdown()


@async_test()
async def test_lite_pull_consumer_seek_poll_commit(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("LiteTopic", 2)
        async with Producer("pg-lite", cluster.namesrv) as producer:
            mq = (
                await producer.send(
                    Message("LiteTopic", b"0"), queue=MessageQueue("LiteTopic", cluster.broker_name, 0)
                )
            ).message_queue
            for i in range(1, 10):
                await producer.send(Message("LiteTopic", f"{i}".encode()), queue=mq)
        consumer = LitePullConsumer(
            "cg-lite", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, auto_commit=False
        )
        consumer.assign([mq])
        async with consumer:
            got: list[MessageExt] = []
            while len(got) < 10:
                got += await consumer.poll(5.0)
            assert [m.body for m in got] == [f"{i}".encode() for i in range(10)]
            await consumer.seek(mq, 3)
            assert (await consumer.poll(5.0))[0].queue_offset == 3
            await consumer.commit_sync({mq: 5})
            committed = -1
            for _ in range(100):
                committed = await consumer.committed(mq)
                if committed == 5:
                    break
                await asyncio.sleep(0.05)
            assert committed == 5
            assert await consumer.offset_for_timestamp(mq, 0) == 0
            await consumer.seek_to_end(mq)
            assert await consumer.poll(0.5) == []
            await consumer.seek_to_begin(mq)
            assert (await consumer.poll(5.0))[0].queue_offset == 0


@async_test()
async def test_blocking_facades(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("BlockTopic", 1)

        def produce() -> str:
            with BlockingProducer("pg-block", cluster.namesrv) as producer:
                return producer.send(Message("BlockTopic", b"hi", tags="a")).msg_id

        def consume() -> list[MessageExt]:
            with BlockingLitePullConsumer(
                "cg-block", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET
            ) as c:
                c.subscribe("BlockTopic")
                got = c.poll(10.0)
                assert [mq.topic for mq in c.assignment()] == ["BlockTopic"]
                c.unsubscribe("BlockTopic")
                assert c.client.rebalancer.subscriptions == {}
                return got

        msg_id = await asyncio.to_thread(produce)
        got = await asyncio.to_thread(consume)
        assert [m.msg_id for m in got] == [msg_id]


@pytest.mark.parametrize("server_side", [True, False], ids=["offset-moved", "client-reset"])
@async_test()
async def test_operator_reset_rewinds_the_consumer(
    tmp_path: Path, server_side: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Either way the broker pushes the reset to the online consumer, which moves without waiting for
    its held pull and without an "offset is illegal" complaint."""
    async with running_cluster(tmp_path, {"use_server_side_reset_offset": server_side}) as cluster:
        assert await cluster.supports(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET), (
            f"the broker lost its handler of {RequestCode.INVOKE_BROKER_TO_RESET_OFFSET!r}"
        )
        await cluster.create_topic("ResetTopic", 1)
        got: list[MessageExt] = []
        consumer = push_consumer("cg-reset", cluster.namesrv)
        consumer.subscribe("ResetTopic")
        consumer.register_message_listener_concurrently(collector(got))
        async with Producer("pg-reset", cluster.namesrv) as producer, consumer:
            for i in range(5):
                await producer.send(Message("ResetTopic", f"{i}".encode()))
            await until(lambda: len(got) == 5, "the first pass")
            header = H.ResetOffsetRequestHeader(
                group="cg-reset", topic="ResetTopic", timestamp=0, isForce=True
            )
            await cluster.api.invoke(
                cluster.broker_addr, request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
            )
            await until(lambda: [m.body for m in got].count(b"0") == 2, "the rewound pass")
        assert not [r for r in caplog.records if "is illegal" in r.getMessage()]
