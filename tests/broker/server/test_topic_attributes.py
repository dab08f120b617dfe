"""Topic attributes as RocketMQ 5 checks them on UPDATE_AND_CREATE_TOPIC (TopicAttributes, AttributeUtil):
known keys only, values from each attribute's set or range, queue.type and cleanup.policy fixed once the
topic exists, MIXED refused unless enableMixedMessageType."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.protocol.bodies import TopicConfig
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import CreateTopicRequestHeader
from broker.server.topic_config import (
    BATCH_CQ_REFUSED,
    TopicAttributeError,
    alter_topic_attributes,
)
from tests.broker.server.conftest import async_test, call, running_broker

MESSAGE_TYPES = "[UNSPECIFIED, TRANSACTION, FIFO, MIXED, DELAY, NORMAL]"


def _create(topic: str, attributes: str | None) -> CreateTopicRequestHeader:
    return CreateTopicRequestHeader(
        topic=topic,
        defaultTopic="TBW102",
        readQueueNums=4,
        writeQueueNums=4,
        perm=6,
        topicFilterType="SINGLE_TAG",
        attributes=attributes,
    )


@pytest.mark.parametrize(
    ("attributes", "remark"),
    [
        ("+message.type=BOGUS", f"value is not in set: {MESSAGE_TYPES}"),
        ("+message.type=fifo", f"value is not in set: {MESSAGE_TYPES}"),
        ("+colour=blue", "unsupported key: colour"),
        ("+queue.type=FastCQ", "value is not in set: [SimpleCQ, BatchCQ]"),
        ("+cleanup.policy=KEEP", "value is not in set: [DELETE, COMPACTION]"),
        ("+reserve.time=soon", 'For input string: "soon"'),
        ("+reserve.time=-2", "value is not in range(-1, 9223372036854775807)"),
        ("+queue.type=BatchCQ", BATCH_CQ_REFUSED),
    ],
)
@async_test
async def test_create_with_a_bad_attribute_is_refused_and_nothing_is_created(
    tmp_path: Path, attributes: str, remark: str
) -> None:
    async with running_broker(tmp_path, grpc_port=-1) as (broker, client):
        response = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Bad", attributes))
        assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)
        assert broker.topics.get("Bad") is None


@async_test
async def test_mixed_needs_enable_mixed_message_type(tmp_path: Path) -> None:
    async with running_broker(tmp_path, grpc_port=-1) as (broker, client):
        mixed = _create("Mixed", "+message.type=MIXED")
        refused = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, mixed)
        assert (refused.code, refused.remark) == (
            ResponseCode.INVALID_PARAMETER,
            "MIXED message type is not supported.",
        )
        broker.config.enable_mixed_message_type = True
        accepted = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, mixed)
        assert accepted.code == ResponseCode.SUCCESS, accepted.remark


@async_test
async def test_known_attributes_are_stored_and_only_changeable_ones_change(tmp_path: Path) -> None:
    async with running_broker(tmp_path, grpc_port=-1) as (broker, client):
        attrs = "+message.type=FIFO,+queue.type=SimpleCQ,+cleanup.policy=COMPACTION,+reserve.time=-1"
        response = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("T", attrs))
        assert response.code == ResponseCode.SUCCESS, response.remark
        config = broker.topics.get("T")
        assert config is not None
        assert config.attributes == {
            "message.type": "FIFO",
            "queue.type": "SimpleCQ",
            "cleanup.policy": "COMPACTION",
            "reserve.time": "-1",
        }
        changed = await call(
            client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("T", "+message.type=NORMAL")
        )
        assert changed.code == ResponseCode.SUCCESS, changed.remark
        fixed = await call(
            client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("T", "+queue.type=BatchCQ")
        )
        assert fixed.code == ResponseCode.SYSTEM_ERROR
        assert fixed.remark == "attempt to update an unchangeable attribute. key: queue.type"
        config = broker.topics.get("T")
        assert config is not None
        assert config.attributes["message.type"] == "NORMAL"
        assert config.attributes["queue.type"] == "SimpleCQ"


@async_test
async def test_a_topic_saved_with_an_old_value_can_still_be_updated(tmp_path: Path) -> None:
    async with running_broker(tmp_path, grpc_port=-1) as (broker, client):
        broker.topics.table["Old"] = TopicConfig("Old", 4, 4, 6, attributes={"message.type": "LEGACY"})
        header = _create("Old", None)
        header.readQueueNums = header.writeQueueNums = 2
        response = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
        assert response.code == ResponseCode.SUCCESS, response.remark
        config = broker.topics.get("Old")
        assert config is not None and config.writeQueueNums == 2


def test_attribute_text_is_checked_as_attribute_util_does() -> None:
    assert alter_topic_attributes(True, {}, "+message.type=FIFO") == {"message.type": "FIFO"}
    assert alter_topic_attributes(False, {"message.type": "FIFO", "reserve.time": "5"}, "-reserve.time") == {
        "message.type": "FIFO"
    }
    problems = {
        (True, "-message.type"): "only add attribute is supported while creating topic. key: message.type",
        (False, "-reserve.time"): "attempt to delete a nonexistent key: reserve.time",
        (False, "message.type=FIFO"): "add/alter attribute format is wrong: message.type",
        (False, "message.type"): "delete attribute format is wrong: message.type",
        (False, "+a-b=1"): "kv string format wrong.",
        (False, "+message.type=FIFO,+message.type=NORMAL"): "key duplication: +message.type",
        (False, "+queue.type=BatchCQ"): "attempt to update an unchangeable attribute. key: queue.type",
        (True, "+message.type=MIXED"): "MIXED message type is not supported.",
    }
    for (create, text), message in problems.items():
        with pytest.raises(TopicAttributeError) as info:
            alter_topic_attributes(create, {}, text)
        assert str(info.value) == message, text
    mixed = alter_topic_attributes(True, {}, "+message.type=MIXED", mixed_allowed=True)
    assert mixed == {"message.type": "MIXED"}
