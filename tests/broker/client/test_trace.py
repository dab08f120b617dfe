"""Message traces: the SDK's trace records against a real broker, and their text encoding."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.client import (
    ConsumeConcurrentlyStatus,
    ConsumeFrom,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageExt,
    MQClientError,
    Producer,
    PushConsumer,
    TransactionProducer,
)
from broker.client.admin_api import AdminApi
from broker.protocol.trace import (
    TRACE_TOPIC,
    ConsumeReturnType,
    MessageType,
    TraceFormatError,
    TraceRecord,
    TraceType,
    decode,
    encode,
    encode_all,
)
from tests.broker.client.conftest import Cluster, async_test, needs_servers, running_cluster

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


async def until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Wait for ``condition``; the timeout only ever fires when something is broken."""
    try:
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def trace_records(
    cluster: Cluster, msg_id: str, wanted: Iterable[TraceType], topic: str = TRACE_TOPIC
) -> list[TraceRecord]:
    """The records of ``msg_id`` found through the broker's index of ``topic`` (keyed by msgId), once
    every ``wanted`` type is there."""
    api = AdminApi(cluster.api.remoting, 5.0)
    records: list[TraceRecord] = []

    async def look() -> bool:
        found = await api.query_message(cluster.broker_addr, topic, msg_id)
        records[:] = [r for m in found for r in decode(MessageExt(m).body.decode()) if r.msg_id == msg_id]
        return set(wanted) <= {r.type for r in records}

    async with asyncio.timeout(20):
        while not await look():
            await asyncio.sleep(0.1)
    return records


def listener(
    got: list[MessageExt], status: Callable[[MessageExt], ConsumeConcurrentlyStatus]
) -> Callable[[list[MessageExt]], Awaitable[ConsumeConcurrentlyStatus]]:
    async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return status(msgs[0])

    return listen


def one(records: list[TraceRecord], kind: TraceType) -> TraceRecord:
    matching = [r for r in records if r.type is kind]
    assert len(matching) == 1, records
    return matching[0]


# -- against a broker ---------------------------------------------------------------------------------
@needs_servers
@async_test(90)
async def test_traced_send_and_consume_record_pub_sub_before_and_sub_after(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("Orders")
        got: list[MessageExt] = []
        consumer = PushConsumer(
            "order-service", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, trace=True
        )
        consumer.subscribe("Orders")
        # the first delivery of "retry-me" fails: a failed consumption is traced too
        consumer.register_message_listener_concurrently(
            listener(got, lambda m: LATER if m.body == b"retry-me" and m.reconsume_times == 0 else OK)
        )
        async with Producer("order-app", cluster.namesrv, trace=True) as producer:
            sent = await producer.send(Message("Orders", b"hello", tags="created", keys=["order-1", "o1"]))
            failed = await producer.send(Message("Orders", b"retry-me"))
        async with consumer:  # both consumed (one failing) before the consumer stops
            await until(lambda: {b"hello", b"retry-me"} <= {m.body for m in got}, "both messages")

        records = await trace_records(cluster, sent.msg_id, [TraceType.Pub, TraceType.SubAfter])
        pub = one(records, TraceType.Pub)
        assert (pub.topic, pub.group, pub.tags, pub.keys) == ("Orders", "order-app", "created", "order-1 o1")
        assert pub.success and pub.offset_msg_id == sent.offset_msg_id
        assert pub.store_host == cluster.broker_addr and pub.body_length == 5
        assert pub.msg_type is MessageType.Normal_Msg and pub.region_id == "DefaultRegion"
        before, after = one(records, TraceType.SubBefore), one(records, TraceType.SubAfter)
        assert before.group == after.group == "order-service"
        assert before.request_id == after.request_id and before.retry_times == 0
        assert after.success and after.context_code == ConsumeReturnType.SUCCESS
        assert after.keys == "order-1 o1"

        # the message's keys find its trace messages too
        api = AdminApi(cluster.api.remoting, 5.0)
        by_key = await api.query_message(cluster.broker_addr, TRACE_TOPIC, "order-1")
        assert any(r.msg_id == sent.msg_id for m in by_key for r in decode(m.body.decode()))

        failures = await trace_records(cluster, failed.msg_id, [TraceType.SubAfter])
        outcomes = [(r.success, r.context_code) for r in failures if r.type is TraceType.SubAfter]
        assert (False, ConsumeReturnType.FAILED) in outcomes


@needs_servers
@async_test(90)
async def test_tracing_off_sends_nothing(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("Quiet")
        got: list[MessageExt] = []
        consumer = PushConsumer("quiet-cg", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
        consumer.subscribe("Quiet")
        consumer.register_message_listener_concurrently(listener(got, lambda m: OK))
        async with Producer("quiet-app", cluster.namesrv) as producer, consumer:
            await producer.send(Message("Quiet", b"x"))
            await until(lambda: bool(got), "the message")
        # nothing was sent to the trace topic, so the broker never created it
        assert await cluster.api.route([cluster.namesrv], TRACE_TOPIC) is None
        assert TRACE_TOPIC not in cluster.node.broker.topics.table


@needs_servers
@async_test(90)
async def test_batch_transaction_and_lite_pull_traces_in_a_custom_topic(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("Batch")
        await cluster.create_topic("Tx")
        topic = "AppTraces"
        async with Producer("batch-app", cluster.namesrv, trace=True, trace_topic=topic) as producer:
            batch = await producer.send_batch([Message("Batch", b"a", keys="k-a"), Message("Batch", b"b")])
        ids = batch[0].msg_id.split(",")

        def commit(msg: Message) -> LocalTransactionState:
            return LocalTransactionState.COMMIT_MESSAGE

        tx = TransactionProducer("tx-app", cluster.namesrv, commit, trace=True, trace_topic=topic)
        async with tx:
            committed = (
                await tx.send_message_in_transaction(Message("Tx", b"t", tags="pay"), commit)
            ).send_result

        polled: list[MessageExt] = []
        async with LitePullConsumer(
            "lite-cg", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, trace=True, trace_topic=topic
        ) as lite:
            lite.subscribe("Batch")
            while len(polled) < 2:
                polled += await lite.poll(1.0)

        # each message of the batch has its own Pub record, found by its own id
        for msg_id, keys in zip(ids, ["k-a", None], strict=True):
            records = await trace_records(cluster, msg_id, [TraceType.Pub, TraceType.SubAfter], topic)
            pub = one(records, TraceType.Pub)
            assert pub.topic == "Batch" and pub.keys == keys and pub.success
            assert one(records, TraceType.SubAfter).group == "lite-cg"
        tx_records = await trace_records(cluster, committed.msg_id, [TraceType.EndTransaction], topic)
        assert one(tx_records, TraceType.Pub).msg_type is MessageType.Trans_Msg_Half
        end = one(tx_records, TraceType.EndTransaction)
        assert (end.transaction_state, end.from_transaction_check, end.tags) == (
            "COMMIT_MESSAGE",
            False,
            "pay",
        )
        assert end.msg_type is MessageType.Trans_msg_Commit and end.store_host == cluster.broker_addr


def test_a_trace_topic_without_tracing_is_refused() -> None:
    with pytest.raises(MQClientError, match="trace=True"):
        Producer("g", "127.0.0.1:9876", trace_topic="T")


# -- the encoding -------------------------------------------------------------------------------------
JAVA_PUB = "\x01".join(
    [
        *("Pub", "1700000000000", "DefaultRegion", "pg", "Orders", "MSGID", "TagA", "k1 k2"),
        *("10.0.0.1:10911", "5", "3", "0", "OFFSETID", "true"),
    ]
)


def test_records_are_written_as_the_java_client_writes_them() -> None:
    pub = TraceRecord(
        TraceType.Pub, "MSGID", 1700000000000, "DefaultRegion", "pg", topic="Orders", tags="TagA",
        keys="k1 k2", store_host="10.0.0.1:10911", body_length=5, cost_ms=3, offset_msg_id="OFFSETID",
    )  # fmt: skip
    assert encode(pub) == JAVA_PUB + "\x02"
    sub_after = TraceRecord(
        TraceType.SubAfter, "MSGID", 1700000000009, group="cg", request_id="REQ", cost_ms=2
    )
    assert (
        encode(sub_after) == "SubAfter\x01REQ\x01MSGID\x012\x01true\x01null\x010\x011700000000009\x01cg\x02"
    )
    # no tags or keys: written as Java writes a null
    sub_before = TraceRecord(TraceType.SubBefore, "MSGID", 1, group="cg", request_id="REQ")
    assert encode(sub_before).endswith("\x01MSGID\x010\x01null\x02")
    assert pub.index_keys == ["MSGID", "k1", "k2"]


def test_older_and_cloud_layouts_decode() -> None:
    old_pub = JAVA_PUB.rsplit("\x01", 2)[0] + "\x01true"  # 13 fields: no offsetMsgId yet
    with_host = JAVA_PUB + "\x0110.0.0.7"  # 15 fields: the client host
    cloud_after = "SubAfter\x01REQ\x01MSGID\x012\x01false\x01k\x014\x01"  # no timestamp and group
    first, second, third = decode("\x02".join([old_pub, with_host, cloud_after]) + "\x02")
    assert (first.offset_msg_id, first.success, first.topic) == ("", True, "Orders")
    assert second.client_host == "10.0.0.7" and second.offset_msg_id == "OFFSETID"
    assert (third.success, third.context_code, third.group, third.timestamp) == (False, 4, "", 0)
    assert decode("") == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Pub\x01123\x02", "Pub record #1: 2 fields, at least 13 expected"),
        ("Hello world", "record #1: unknown trace type 'Hello world'"),
        (
            JAVA_PUB.replace("1700000000000", "soon") + "\x02",
            "Pub record #1: timestamp 'soon' is not a number",
        ),
        (JAVA_PUB.replace("\x010\x01OFF", "\x019\x01OFF") + "\x02", "message type 9 is not one of 0..4"),
        ("SubAfter\x01R\x01M\x01x\x01true\x01k\x02", "SubAfter record #1: cost time 'x' is not a number"),
    ],
)
def test_malformed_trace_text_is_a_clear_error(text: str, problem: str) -> None:
    with pytest.raises(TraceFormatError) as failure:
        decode(text)
    assert problem in str(failure.value)


_field = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=12)
_present = _field.filter(lambda s: s not in ("", "null"))
_optional = st.none() | _present
_ms = st.integers(0, 2**62)
_count = st.integers(0, 2**31 - 1)


@st.composite
def records(draw: st.DrawFn) -> TraceRecord:
    """A record of any type with every field its type writes drawn, the others at their defaults."""
    kind = draw(st.sampled_from(TraceType))
    msg_id, ts, group = draw(_present), draw(_ms), draw(_present)
    if kind is TraceType.Pub:
        return TraceRecord(
            kind, msg_id, ts, draw(_field), group, topic=draw(_field), tags=draw(_optional),
            keys=draw(_optional), store_host=draw(_field), body_length=draw(_count), cost_ms=draw(_count),
            msg_type=draw(st.sampled_from(MessageType)), offset_msg_id=draw(_field),
            success=draw(st.booleans()),
        )  # fmt: skip
    if kind is TraceType.SubBefore:
        return TraceRecord(
            kind,
            msg_id,
            ts,
            draw(_field),
            group,
            draw(_field),
            retry_times=draw(_count),
            keys=draw(_optional),
        )
    if kind is TraceType.SubAfter:
        return TraceRecord(
            kind, msg_id, ts, "", group, draw(_field), keys=draw(_optional), cost_ms=draw(_count),
            success=draw(st.booleans()), context_code=draw(st.sampled_from(ConsumeReturnType)),
        )  # fmt: skip
    if kind is TraceType.EndTransaction:
        return TraceRecord(
            kind, msg_id, ts, draw(_field), group, topic=draw(_field), tags=draw(_optional),
            keys=draw(_optional), store_host=draw(_field), msg_type=draw(st.sampled_from(MessageType)),
            transaction_id=draw(_optional), from_transaction_check=draw(st.booleans()),
            transaction_state=draw(st.sampled_from(["COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"])),
        )  # fmt: skip
    return TraceRecord(kind, msg_id, ts, draw(_field), group, topic=draw(_field), success=draw(st.booleans()))


@given(st.lists(records(), max_size=5))
def test_records_round_trip(batch: list[TraceRecord]) -> None:
    assert decode(encode_all(batch)) == batch


@given(st.text(max_size=200))
def test_any_text_decodes_or_fails_cleanly(text: str) -> None:
    with contextlib.suppress(TraceFormatError):  # anything else fails the test
        decode(text)
