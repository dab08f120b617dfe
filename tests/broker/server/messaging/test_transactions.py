"""Transactional messages over TCP: half messages, END_TRANSACTION, the check service, restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from broker.protocol import properties as P
from broker.protocol.codes import ResponseCode
from broker.protocol.message import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_MASK,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from broker.protocol.remoting import RemotingCommand
from broker.server.topic_config import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from broker.server.transaction_service import SYS_TRANS_GROUP
from tests.broker.server.messaging.conftest import (
    Cluster,
    FakeProducer,
    async_test,
    pull_all,
    running,
    send,
    wait_for,
)

TOPIC = "TxTopic"
GROUP = "TxGroup"
FAST_CHECK: dict[str, Any] = {"transaction_check_interval": 200, "transaction_time_out": 300}


async def send_half(cluster: Cluster, body: bytes, queue_id: int = 1, **props: str) -> RemotingCommand:
    response = await send(
        cluster,
        TOPIC,
        body,
        queue_id=queue_id,
        sys_flag=TRANSACTION_PREPARED_TYPE,
        group=GROUP,
        props={P.TRAN_MSG: "true", P.PGROUP: GROUP, **props},
    )
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response


def half_position(response: RemotingCommand) -> tuple[int, int, str]:
    """(commitLogOffset, tranStateTableOffset, transactionId) as a Java producer derives them."""
    return (
        int(response.ext_fields["msgId"][-16:], 16),
        int(response.ext_fields["queueOffset"]),
        response.ext_fields["transactionId"],
    )


async def end(producer: FakeProducer, half: RemotingCommand, state: int) -> RemotingCommand:
    phys, queue_offset, tx = half_position(half)
    response = await producer.end(
        commit_log_offset=phys, queue_offset=queue_offset, msg_id=tx, state=state, from_check=False
    )
    assert response is not None
    return response


async def count(cluster: Cluster, topic: str, queue_id: int = 1) -> int:
    return len(await pull_all(cluster, topic, queue_id))


@async_test()
async def test_half_is_parked_then_commit_writes_the_real_message_once(tmp_path: Path) -> None:
    async with running(tmp_path) as cluster:
        cluster.broker.topics.ensure(TOPIC, 4)
        producer = FakeProducer(cluster.addr, GROUP, "p1")
        await producer.start()
        half = await send_half(cluster, b"order-1", KEYS="k1")
        assert await count(cluster, TOPIC) == 0
        parked = await pull_all(cluster, TRANS_HALF_TOPIC, 0)
        assert len(parked) == 1
        stored = parked[0]
        assert stored.properties[P.REAL_TOPIC] == TOPIC and stored.properties[P.REAL_QID] == "1"
        assert stored.properties[P.TRANSACTION_ID] == stored.uniq_key == half.ext_fields["transactionId"]
        assert stored.sys_flag & TRANSACTION_MASK == TRANSACTION_NOT_TYPE
        assert half.ext_fields["queueId"] == "1"

        assert (await end(producer, half, TRANSACTION_COMMIT_TYPE)).code == ResponseCode.SUCCESS
        [real] = await pull_all(cluster, TOPIC, 1)
        assert real.body == b"order-1" and real.uniq_key == stored.uniq_key
        assert real.sys_flag & TRANSACTION_MASK == TRANSACTION_COMMIT_TYPE
        assert real.prepared_transaction_offset == stored.physical_offset
        assert real.store_timestamp == stored.store_timestamp
        assert P.TRAN_MSG not in real.properties and P.REAL_TOPIC not in real.properties
        [op] = await pull_all(cluster, TRANS_OP_HALF_TOPIC, 0)
        assert op.tags == "d" and op.body == b"0,"

        # a repeated commit (or a late check answer) is answered without a second message
        assert (await end(producer, half, TRANSACTION_COMMIT_TYPE)).code == ResponseCode.SUCCESS
        assert (await end(producer, half, TRANSACTION_ROLLBACK_TYPE)).code == ResponseCode.SUCCESS
        assert await count(cluster, TOPIC) == 1
        await producer.close()


@async_test()
async def test_rollback_writes_only_the_op_record_and_bad_requests_get_upstream_remarks(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as cluster:
        cluster.broker.topics.ensure(TOPIC, 4)
        producer = FakeProducer(cluster.addr, GROUP, "p1")
        half = await send_half(cluster, b"cancel-me")
        assert (await end(producer, half, TRANSACTION_ROLLBACK_TYPE)).code == ResponseCode.SUCCESS
        assert await count(cluster, TOPIC) == 0
        assert len(await pull_all(cluster, TRANS_OP_HALF_TOPIC, 0)) == 1

        other = await send_half(cluster, b"second")
        phys, queue_offset, tx = half_position(other)
        cases = [
            (FakeProducer(cluster.addr, "WrongGroup", "p2"), phys, queue_offset, "The producer group wrong"),
            (producer, phys, queue_offset + 5, "The transaction state table offset wrong"),
            (producer, phys + 1, queue_offset, "Find prepared transaction message failed"),
        ]
        wrong_group = cases[0][0]
        for who, p, q, remark in cases:
            response = await who.end(
                commit_log_offset=p,
                queue_offset=q,
                msg_id=tx,
                state=TRANSACTION_COMMIT_TYPE,
                from_check=False,
            )
            assert response is not None
            assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)
        assert await count(cluster, TOPIC) == 0
        await wrong_group.close()
        await producer.close()


@async_test()
async def test_reject_transaction_message_switch(tmp_path: Path) -> None:
    async with running(tmp_path, reject_transaction_message=True) as cluster:
        response = await send(
            cluster, TOPIC, sys_flag=TRANSACTION_PREPARED_TYPE, props={P.TRAN_MSG: "true", P.PGROUP: GROUP}
        )
        assert response.code == ResponseCode.NO_PERMISSION
        assert "sending transaction message is forbidden" in (response.remark or "")


@async_test()
async def test_unknown_state_is_checked_and_the_check_answer_commits(tmp_path: Path) -> None:
    async with running(tmp_path, **FAST_CHECK) as cluster:
        cluster.broker.topics.ensure(TOPIC, 4)
        producer = FakeProducer(cluster.addr, GROUP, "p1")
        await producer.start()
        half = await send_half(cluster, b"pending")
        phys, _, tx = half_position(half)
        await producer.end(
            commit_log_offset=phys, queue_offset=0, msg_id=tx, state=TRANSACTION_NOT_TYPE, from_check=False,
            oneway=True,
        )  # fmt: skip
        check = await producer.next_check()
        assert check.header.msgId == tx and check.header.transactionId == tx
        assert check.header.topic == TOPIC
        assert check.header.commitLogOffset != phys  # the re-appended copy is what is checked
        assert check.message.topic == TOPIC and check.message.queue_id == 1
        assert check.message.body == b"pending"
        assert check.message.properties[P.TRANSACTION_CHECK_TIMES] == "1"
        await producer.answer(check, TRANSACTION_COMMIT_TYPE)

        async def committed() -> bool:
            return await count(cluster, TOPIC) == 1

        await wait_for(committed)
        await asyncio.sleep(0.6)  # further passes neither check again nor commit twice
        assert producer.checks.empty() and await count(cluster, TOPIC) == 1
        broker = cluster.broker
        assert broker.offsets.query(SYS_TRANS_GROUP, TRANS_HALF_TOPIC, 0) == 2
        assert broker.offsets.query(SYS_TRANS_GROUP, TRANS_OP_HALF_TOPIC, 0) == 1
        await producer.close()


@async_test()
async def test_check_reaches_another_producer_when_the_first_one_left(tmp_path: Path) -> None:
    async with running(tmp_path, **FAST_CHECK) as cluster:
        cluster.broker.topics.ensure(TOPIC, 4)
        first = FakeProducer(cluster.addr, GROUP, "p1")
        await first.start()
        await first.close()
        second = FakeProducer(cluster.addr, GROUP, "p2")
        await second.start()
        await send_half(cluster, b"who-knows")
        check = await second.next_check()
        await second.answer(check, TRANSACTION_ROLLBACK_TYPE)

        async def rolled_back() -> bool:
            return len(await pull_all(cluster, TRANS_OP_HALF_TOPIC, 0)) == 1

        await wait_for(rolled_back)
        assert await count(cluster, TOPIC) == 0 and first.checks.empty()
        await second.close()


@async_test(timeout=90)
async def test_fifteen_unanswered_checks_move_the_half_to_trans_check_max_time_topic(tmp_path: Path) -> None:
    async with running(tmp_path, transaction_check_interval=100, transaction_time_out=100) as cluster:
        cluster.broker.topics.ensure(TOPIC, 4)
        producer = FakeProducer(cluster.addr, GROUP, "p1")
        await producer.start()
        await send_half(cluster, b"never-answered")

        async def discarded() -> bool:
            return cluster.broker.topics.get(TRANS_CHECK_MAX_TIME_TOPIC) is not None and bool(
                await pull_all(cluster, TRANS_CHECK_MAX_TIME_TOPIC, 0)
            )

        await wait_for(discarded, timeout=30)
        [dead] = await pull_all(cluster, TRANS_CHECK_MAX_TIME_TOPIC, 0)
        assert dead.body == b"never-answered" and dead.properties[P.TRANSACTION_CHECK_TIMES] == "15"
        await asyncio.sleep(0.4)
        assert producer.checks.qsize() == 15
        times = [
            producer.checks.get_nowait().message.properties[P.TRANSACTION_CHECK_TIMES] for _ in range(15)
        ]
        assert times == [str(n) for n in range(1, 16)]
        assert await count(cluster, TOPIC) == 0
        await producer.close()


@async_test()
async def test_commit_survives_a_restart_and_is_not_repeated(tmp_path: Path) -> None:
    async with running(tmp_path) as cluster:
        cluster.broker.topics.ensure(TOPIC, 4)
        producer = FakeProducer(cluster.addr, GROUP, "p1")
        committed = await send_half(cluster, b"committed")
        rolled_back = await send_half(cluster, b"rolled-back")
        pending = await send_half(cluster, b"pending")
        assert (await end(producer, committed, TRANSACTION_COMMIT_TYPE)).code == ResponseCode.SUCCESS
        assert (await end(producer, rolled_back, TRANSACTION_ROLLBACK_TYPE)).code == ResponseCode.SUCCESS
        await producer.close()
    async with running(tmp_path, **FAST_CHECK) as cluster:
        producer = FakeProducer(cluster.addr, GROUP, "p1")
        await producer.start()
        for half in (committed, rolled_back):  # already resolved before the restart
            assert (await end(producer, half, TRANSACTION_COMMIT_TYPE)).code == ResponseCode.SUCCESS
        assert [m.body for m in await pull_all(cluster, TOPIC, 1)] == [b"committed"]
        check = await producer.next_check()  # only the pending one is checked
        assert check.message.body == b"pending"
        assert half_position(pending)[2] == check.header.msgId
        await producer.answer(check, TRANSACTION_COMMIT_TYPE)

        async def both() -> bool:
            return await count(cluster, TOPIC) == 2

        await wait_for(both)
        await asyncio.sleep(0.6)
        assert producer.checks.empty()
        assert [m.body for m in await pull_all(cluster, TOPIC, 1)] == [b"committed", b"pending"]
        await producer.close()
