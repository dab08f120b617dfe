"""mqadmin queryMsgTraceById and ``rmq message trace`` against a broker holding the traces of a message
sent and consumed by traced SDK clients."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from broker.client import ConsumeConcurrentlyStatus, ConsumeFrom, Message, MessageExt, Producer, PushConsumer
from broker.node import Node
from broker.protocol.trace import TRACE_TOPIC
from tests.cli.mqadmin.conftest import Run, captured
from tests.cli.online.conftest import Cluster, _start_loop, node_plan

if TYPE_CHECKING:
    from admin.models.traces import TraceEntry
    from admin.service import AdminService

TOPIC = "Payments"
GARBAGE_ID = "NOT-A-TRACE-0001"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A broker of its own (the shared one's topic list stays as the golden tests expect), holding the
    traces of one message sent by ``pay-app`` and consumed by ``pay-cg``, and one trace-topic message
    that is not trace text."""
    from admin.models import TopicSpec
    from admin.service import AdminService

    plan = node_plan(tmp_path_factory.mktemp("trace-store"), http=False, ha_listen_port=0, grpc_port=-1)
    node = Node(plan)
    loop = _start_loop()

    async def setup() -> str:
        await node.start()
        assert node.namesrv is not None
        namesrv = f"127.0.0.1:{node.namesrv.port}"
        async with AdminService([namesrv], 10) as service:
            await service.wait_ready(20)
            await service.topic_create(TopicSpec(TOPIC, 2, 2))
        got: list[MessageExt] = []

        async def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
            got.extend(msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = PushConsumer("pay-cg", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, trace=True)
        consumer.subscribe(TOPIC)
        consumer.register_message_listener_concurrently(listen)
        async with Producer("pay-app", namesrv, trace=True) as producer, consumer:
            sent = await producer.send(Message(TOPIC, b"paid", tags="paid", keys="invoice-7"))
            while not got:
                await asyncio.sleep(0.05)
        async with Producer("odd-app", namesrv) as plain:
            await plain.send(Message(TRACE_TOPIC, b"this is not trace text", keys=GARBAGE_ID))
        async with AdminService([namesrv], 10) as service:  # until the index has both records
            while {e.type for e in (await _trace_or_none(service, sent.msg_id))} < {"Pub", "SubAfter"}:
                await asyncio.sleep(0.1)
        return sent.msg_id

    msg_id = asyncio.run_coroutine_threadsafe(setup(), loop).result(60)
    assert node.namesrv is not None and node.broker is not None
    yield Cluster(node, loop, f"127.0.0.1:{node.namesrv.port}", node.broker.address, "", [], [msg_id])

    asyncio.run_coroutine_threadsafe(node.stop(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


async def _trace_or_none(service: AdminService, msg_id: str) -> list[TraceEntry]:
    from admin.errors import NotFound

    try:
        return list((await service.message_trace(msg_id)).entries)
    except NotFound:
        return []


@pytest.fixture
def rmq(node: Cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Run]:
    """``rmq …`` in-process with stdout and stderr."""
    from cli.main import main

    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("NAMESRV_ADDR", node.namesrv)

    return lambda *args: captured(main, *args)


def _line(*cells: str) -> str:
    return "{:<10} {:<20} {:<20} {:<20} {:<10} {:<10}".format(*cells)


def _row(kind: str, entry: dict[str, Any]) -> str:
    when = dt.datetime.fromtimestamp(entry["timestamp"] / 1000).strftime("%Y-%m-%d %H:%M:%S")
    return _line(kind, entry["group"], entry["clientHost"], when, f"{entry['costMs']}ms", "success")


def test_query_msg_trace_by_id_prints_the_java_layout(
    node: Cluster, mqadmin: Callable[..., Run], rmq: Callable[..., Run]
) -> None:
    msg_id = node.uniq_keys[0]
    document = json.loads(rmq("message", "trace", msg_id, "-o", "json").out)
    pub = next(e for e in document["entries"] if e["type"] == "Pub")
    sub = next(e for e in document["entries"] if e["type"] == "SubAfter")

    run = mqadmin("queryMsgTraceById", "-i", msg_id)

    assert run.code == 0, run.err
    assert run.out.split("\n") == [
        _line("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"),
        _row("Pub", pub),
        "",
        _line("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"),
        _row("Sub", sub),
        "",
        "",
    ]
    assert pub["group"] == "pay-app" and sub["group"] == "pay-cg"
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", pub["clientHost"])  # the host, without a port


def test_rmq_message_trace_shows_every_record(node: Cluster, rmq: Callable[..., Run]) -> None:
    msg_id = node.uniq_keys[0]

    document = json.loads(rmq("message", "trace", msg_id, "-o", "json").out)
    table = rmq("message", "trace", msg_id)

    assert (document["msgId"], document["topic"], document["traceTopic"]) == (msg_id, TOPIC, TRACE_TOPIC)
    assert [e["type"] for e in document["entries"]] == ["Pub", "SubBefore", "SubAfter"]
    pub, before, after = document["entries"]
    assert (pub["group"], pub["tags"], pub["keys"], pub["success"]) == ("pay-app", "paid", "invoice-7", True)
    assert pub["storeHost"] == node.broker and pub["msgType"] == "Normal_Msg"
    assert before["group"] == after["group"] == "pay-cg" and before["requestId"] == after["requestId"]
    assert (after["success"], after["consumeResult"], before["success"]) == (True, "SUCCESS", None)
    assert document["undecodable"] == 0
    assert table.code == 0
    for text in (
        "Message trace",
        "Pub",
        "pay-app",
        "SubBefore",
        "SubAfter",
        "pay-cg",
        "SUCCESS",
        "Normal_Msg",
    ):
        assert text in table.out


def test_a_message_without_traces_is_a_clear_error(
    mqadmin: Callable[..., Run], rmq: Callable[..., Run]
) -> None:
    unknown = "0A0000010000000000000000000000FF"

    java = mqadmin("queryMsgTraceById", "-i", unknown)
    ours = rmq("message", "trace", unknown)
    missing_topic = rmq("message", "trace", unknown, "--trace-topic", "NoSuchTraces")

    for run in (java, ours):
        assert run.code == 1 and run.out == ""
        assert run.err.strip().endswith(f"no trace of message {unknown} in {TRACE_TOPIC}")
        assert run.err.count("\n") == 1
    assert missing_topic.code == 1 and "trace topic NoSuchTraces not found" in missing_topic.err


def test_trace_messages_that_are_not_trace_text_are_counted(rmq: Callable[..., Run]) -> None:
    document = json.loads(rmq("message", "trace", GARBAGE_ID, "-o", "json").out)
    assert (document["entries"], document["undecodable"]) == ([], 1)
    assert "undecodable trace messages" in rmq("message", "trace", GARBAGE_ID).out


def test_query_msg_trace_by_id_takes_the_java_options(mqadmin: Callable[..., Run]) -> None:
    usage = mqadmin("help", "queryMsgTraceById").out
    for option in (
        "-i,--msgId",
        "-t,--traceTopic",
        "-b,--beginTimestamp",
        "-e,--endTimestamp",
        "-c,--maxNum",
    ):
        assert option in usage
    missing = mqadmin("queryMsgTraceById")
    assert missing.code == 2 and "Missing required option: i" in missing.err


def _trace_types(rmq: Callable[..., Run], msg_id: str) -> list[str]:
    """The record types of a message's trace once the broker has indexed its trace message."""
    for _ in range(50):
        run = rmq("message", "trace", msg_id, "-o", "json")
        if run.code == 0:
            return [e["type"] for e in json.loads(run.out)["entries"]]
        time.sleep(0.1)
    raise AssertionError(run.err)


def test_traced_sends_from_the_tools_leave_a_pub_record(
    mqadmin: Callable[..., Run], rmq: Callable[..., Run]
) -> None:
    untraced = mqadmin("sendMessage", "-t", TOPIC, "-p", "plain")  # first: indexed before the others
    plain_id = untraced.out.splitlines()[1].split()[-1]
    java = mqadmin("sendMessage", "-t", TOPIC, "-p", "from mqadmin", "-m", "true")
    assert java.code == 0, java.err
    java_id = java.out.splitlines()[1].split()[-1]
    ours = rmq("message", "send", TOPIC, "from rmq", "--trace", "-o", "json")
    assert ours.code == 0, ours.err
    ours_id, ours_offset_id = json.loads(ours.out)["uniqKey"], json.loads(ours.out)["msgId"]

    assert _trace_types(rmq, java_id) == ["Pub"]
    assert _trace_types(rmq, ours_id) == ["Pub"]
    assert _trace_types(rmq, ours_offset_id) == ["Pub"]  # the broker's id leads to the same trace
    assert rmq("message", "trace", plain_id).code == 1
