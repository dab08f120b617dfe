"""ClientOptions: one set of client settings shared by producers and consumers, or given as keywords."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.client import (
    ClientOptions,
    ConsumeConcurrentlyStatus,
    ConsumeFrom,
    LitePullConsumer,
    Message,
    MessageExt,
    MQClientError,
    Producer,
    PushConsumer,
    SimpleConsumer,
)
from broker.protocol.trace import TraceType
from tests.client.conftest import async_test, needs_servers, running_cluster
from tests.client.test_trace import listener, trace_records, until

NAMESRV = "127.0.0.1:9876"  # never dialled: constructors do not connect


def test_options_and_keywords_name_the_same_settings() -> None:
    shared = ClientOptions(instance_name="orders")
    ids = [
        Producer("p", NAMESRV, options=shared).client_id,
        PushConsumer("c", NAMESRV, options=shared).client_id,
        LitePullConsumer("l", NAMESRV, options=shared).client_id,
        SimpleConsumer("s", NAMESRV, options=shared).client_id,
        Producer("k", NAMESRV, instance_name="orders").client_id,
    ]
    assert {i.rpartition("@")[2] for i in ids} == {"orders"}
    # a keyword given beside the options wins over the field it names; the others stay
    both = Producer(
        "p", NAMESRV, options=ClientOptions(instance_name="a", rpc_timeout=9.0), instance_name="b"
    )
    assert both.client_id.endswith("@b")
    assert both.options == ClientOptions(instance_name="b", rpc_timeout=9.0)


def test_a_simple_consumer_refuses_tracing() -> None:
    with pytest.raises(MQClientError, match="no message traces"):
        SimpleConsumer("s", NAMESRV, options=ClientOptions(trace=True))


@pytest.mark.servers
@needs_servers
@async_test(90)
async def test_one_options_object_traces_a_producer_and_a_consumer(tmp_path: Path) -> None:
    async with running_cluster(tmp_path) as cluster:
        await cluster.create_topic("Shared")
        traced = ClientOptions(trace=True)
        got: list[MessageExt] = []
        consumer = PushConsumer(
            "shared-cg", cluster.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, options=traced
        )
        consumer.subscribe("Shared")
        consumer.register_message_listener_concurrently(
            listener(got, lambda m: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        )
        async with Producer("shared-app", cluster.namesrv, options=traced) as producer, consumer:
            sent = await producer.send(Message("Shared", b"x"))
            await until(lambda: bool(got), "the message")
        records = await trace_records(cluster, sent.msg_id, [TraceType.Pub, TraceType.SubAfter])
        assert {(r.type, r.group) for r in records} >= {
            (TraceType.Pub, "shared-app"),
            (TraceType.SubAfter, "shared-cg"),
        }
