"""A gRPC send must match its topic's ``message.type`` (RocketMQ's proxy, enableTopicMessageTypeCheck on
by default): MESSAGE_PROPERTY_CONFLICT_WITH_TYPE otherwise. The remoting port is the broker's own, which
RocketMQ does not check."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from broker.client.remoting_client import RemotingClient
from broker.grpc.convert import MT_TRANSACTION, timestamp
from broker.grpc.schema import PB, Code
from broker.protocol.bodies import TopicConfig
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import (
    CreateTopicRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import make_request
from broker.server.broker import Broker
from tests.broker.grpc.test_grpc_service import Client, _broker, _message, async_test


async def _send(client: Client, topic: str, delivery_timestamp: Any = None, **sp: Any) -> Any:
    msg = _message(topic, b"x", **sp)
    if delivery_timestamp is not None:  # a message field: copied, not assigned
        msg.system_properties.delivery_timestamp.CopyFrom(delivery_timestamp)
    return await client.unary("SendMessage", PB.SendMessageRequest(messages=[msg]), PB.SendMessageResponse)


async def _create(client: RemotingClient, broker: Broker, topic: str, message_type: str) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        defaultTopic="TBW102",
        readQueueNums=1,
        writeQueueNums=1,
        perm=6,
        topicFilterType="SINGLE_TAG",
        attributes=f"+message.type={message_type}",
    )
    response = await client.invoke(
        broker.address, make_request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), 10
    )
    assert response.code == ResponseCode.SUCCESS, response.remark


def _stored(broker: Broker, topic: str) -> int:
    return int(broker.store.max_offset(topic, 0))


@async_test
async def test_grpc_send_must_match_the_topic_message_type(tmp_path: Path) -> None:
    broker = await _broker(tmp_path)
    client = RemotingClient()
    grpc_client = Client(broker.grpc_port)
    try:
        for topic, kind in (("N", "NORMAL"), ("F", "FIFO"), ("D", "DELAY"), ("X", "TRANSACTION")):
            await _create(client, broker, topic, kind)
        broker.topics.put(TopicConfig("Plain", 1, 1, 6))
        broker.topics.table["M"] = TopicConfig("M", 1, 1, 6, attributes={"message.type": "MIXED"})
        later = timestamp(int(time.time() * 1000) + 60_000)

        fifo_to_normal = await _send(grpc_client, "N", message_group="g")
        assert fifo_to_normal.status.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
        assert fifo_to_normal.status.message == (
            "TopicMessageType validate failed, the expected type is NORMAL, but actual type is FIFO"
        )
        assert _stored(broker, "N") == 0
        for topic, sp in (
            ("N", {"delivery_timestamp": later}),
            ("F", {}),
            ("D", {"message_group": "g"}),
            ("X", {}),
        ):
            refused = await _send(grpc_client, topic, **sp)
            assert refused.status.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, (topic, sp)

        for topic, sp in (
            ("N", {}),
            ("F", {"message_group": "g"}),
            ("D", {"delivery_timestamp": later}),
            ("X", {"message_type": MT_TRANSACTION}),
            ("M", {"message_group": "g"}),
            ("Plain", {"message_group": "g"}),  # no message.type: every type goes
        ):
            accepted = await _send(grpc_client, topic, **sp)
            assert accepted.status.code == Code.OK, (topic, sp, accepted.status.message)
        assert _stored(broker, "N") == 1 and _stored(broker, "F") == 1

        # remoting goes to the broker itself, which RocketMQ does not check
        v1 = SendMessageRequestHeader(
            producerGroup="PG",
            topic="N",
            defaultTopic="TBW102",
            defaultTopicQueueNums=1,
            queueId=0,
            sysFlag=0,
            bornTimestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties({"__SHARDINGKEY": "g"}),
        )
        request = make_request(RequestCode.SEND_MESSAGE_V2, SendMessageRequestHeaderV2.from_v1(v1), body=b"r")
        response = await client.invoke(broker.address, request, 10)
        assert response.code == ResponseCode.SUCCESS, response.remark
    finally:
        await grpc_client.channel.close()
        await client.close()
        await broker.stop()
