"""A gRPC send must match its topic's ``message.type`` (RocketMQ's proxy, enableTopicMessageTypeCheck on
by default): MESSAGE_PROPERTY_CONFLICT_WITH_TYPE otherwise. The remoting port is the broker's own, which
RocketMQ does not check."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]

from broker.client.remoting_client import RemotingClient
from broker.grpc.convert import MT_TRANSACTION, timestamp
from broker.grpc.schema import PB, SERVICE, Code
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
from broker.server.config import BrokerConfig
from tests.peers.conftest import small_store


async def _send(channel: Any, topic: str, **sp: Any) -> Any:
    msg = PB.Message(body=b"x")
    msg.topic.name = topic
    msg.system_properties.message_id = uuid.uuid4().hex.upper()
    for key, value in sp.items():
        if key == "delivery_timestamp":
            msg.system_properties.delivery_timestamp.CopyFrom(value)
        else:
            setattr(msg.system_properties, key, value)
    call = channel.unary_unary(
        f"/{SERVICE}/SendMessage",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=PB.SendMessageResponse.FromString,
    )
    meta = (("x-mq-client-id", f"test-{uuid.uuid4().hex[:8]}"),)
    return await call(PB.SendMessageRequest(messages=[msg]), metadata=meta, timeout=10)


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


def test_grpc_send_must_match_the_topic_message_type(tmp_path: Path) -> None:
    async def main() -> None:
        config = BrokerConfig(
            broker_name="b", listen_host="127.0.0.1", listen_port=0, http_port=0, grpc_port=0
        )
        broker = Broker(config, small_store(tmp_path))
        await broker.start()
        client = RemotingClient()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{broker.grpc_port}")
        try:
            for topic, kind in (("N", "NORMAL"), ("F", "FIFO"), ("D", "DELAY"), ("X", "TRANSACTION")):
                await _create(client, broker, topic, kind)
            broker.topics.put(TopicConfig("Plain", 1, 1, 6))
            broker.topics.table["M"] = TopicConfig("M", 1, 1, 6, attributes={"message.type": "MIXED"})
            later = timestamp(int(time.time() * 1000) + 60_000)

            fifo_to_normal = await _send(channel, "N", message_group="g")
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
                refused = await _send(channel, topic, **sp)
                assert refused.status.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, (topic, sp)

            for topic, sp in (
                ("N", {}),
                ("F", {"message_group": "g"}),
                ("D", {"delivery_timestamp": later}),
                ("X", {"message_type": MT_TRANSACTION}),
                ("M", {"message_group": "g"}),
                ("Plain", {"message_group": "g"}),  # no message.type: every type goes
            ):
                accepted = await _send(channel, topic, **sp)
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
            request = make_request(
                RequestCode.SEND_MESSAGE_V2, SendMessageRequestHeaderV2.from_v1(v1), body=b"r"
            )
            response = await client.invoke(broker.address, request, 10)
            assert response.code == ResponseCode.SUCCESS, response.remark
        finally:
            await channel.close()
            await client.close()
            await broker.stop()

    asyncio.run(asyncio.wait_for(main(), 60))
