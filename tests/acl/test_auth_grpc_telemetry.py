"""The Telemetry stream under users and ACL policies: each Settings command is checked for what it
declares (Pub on a producer's topics, Sub on a consumer's group and topics); a refused one is answered
FORBIDDEN naming the user, resource and action and is not applied, the stream staying open. The
official Python 5 push consumer of a group its user may not consume as does not start."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]
import pytest

from broker.acl.signer import GRPC_DATE_TIME, Credentials, grpc_authorization
from broker.grpc.schema import PB, SERVICE, Code
from broker.protocol.auth_bodies import AclRequestHeader
from broker.protocol.bodies import TopicConfig
from broker.protocol.codes import RequestCode
from broker.protocol.group_bodies import SubscriptionGroupConfig
from tests.acl.test_auth_codes import AuthNode, acl, create_user, entry, start_auth_node
from tests.grpc.conftest import run5

APP = Credentials("tele-app", "tele-pass-58")
ORDERS, READ_ONLY, UNLISTED = "TeleOrders", "TeleReadOnly", "TeleUnlisted"
GROUP, OTHER_GROUP = "tele-cg", "tele-other-cg"
PRODUCER, SIMPLE_CONSUMER = 1, 3


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthNode]:
    n = start_auth_node(tmp_path_factory.mktemp("auth-telemetry"))
    broker = n.node.broker
    assert broker is not None

    async def seed() -> None:
        for topic in (ORDERS, READ_ONLY, UNLISTED):
            broker.topics.put(TopicConfig(topicName=topic, readQueueNums=2, writeQueueNums=2))
        for group in (GROUP, OTHER_GROUP):
            broker.groups.put(SubscriptionGroupConfig(groupName=group))

    n.loop.run(seed())
    create_user(n, APP.access_key, APP.secret_key)
    policy = acl(
        f"User:{APP.access_key}",
        entry(f"Topic:{ORDERS}", "Pub", "Sub"),
        entry(f"Topic:{READ_ONLY}", "Sub"),
        entry(f"Group:{GROUP}", "Sub"),
    )
    assert (
        n.call(RequestCode.AUTH_CREATE_ACL, AclRequestHeader(subject=policy.subject or ""), policy).code == 0
    )
    try:
        yield n
    finally:
        n.stop()


def publishing(*topics: str) -> Any:
    return PB.Settings(
        client_type=PRODUCER, publishing=PB.Publishing(topics=[PB.Resource(name=t) for t in topics])
    )


def subscribing(group: str, *topics: str) -> Any:
    entries = [
        PB.SubscriptionEntry(topic=PB.Resource(name=t), expression=PB.FilterExpression(expression="*"))
        for t in topics
    ]
    subscription = PB.Subscription(group=PB.Resource(name=group), subscriptions=entries)
    return PB.Settings(client_type=SIMPLE_CONSUMER, subscription=subscription)


def telemetry(n: AuthNode, *settings: Any) -> list[Any]:
    """The broker's answer to each Settings command, sent one after another on one signed stream."""

    async def go() -> list[Any]:
        date_time = "20250101T000000Z"
        metadata = (
            ("x-mq-client-id", f"tele-{uuid.uuid4().hex[:8]}"),
            (GRPC_DATE_TIME, date_time),
            ("authorization", grpc_authorization(APP, date_time)),
        )
        async with grpc.aio.insecure_channel(n.endpoints) as channel:
            call = channel.stream_stream(
                f"/{SERVICE}/Telemetry",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=PB.TelemetryCommand.FromString,
            )(metadata=metadata, timeout=20)
            answers = []
            for item in settings:
                await call.write(PB.TelemetryCommand(settings=item))
                answers.append(await call.read())
            await call.done_writing()
            return answers

    return n.loop.run(go())


def test_settings_declaring_what_the_user_may_not_do_are_forbidden(node: AuthNode) -> None:
    answers = telemetry(
        node,
        publishing(ORDERS, READ_ONLY),
        publishing(ORDERS),  # the same stream, still open, accepts allowed settings
        subscribing(OTHER_GROUP, ORDERS),
        subscribing(GROUP, UNLISTED),
        subscribing(GROUP, ORDERS, READ_ONLY),
    )
    codes = [a.status.code for a in answers]
    assert codes == [Code.FORBIDDEN, Code.OK, Code.FORBIDDEN, Code.FORBIDDEN, Code.OK]
    pub, _, group, topic, _ = (a.status.message for a in answers)
    assert f"User:{APP.access_key} may not Pub on Topic:{READ_ONLY}" in pub and "no policy allows it" in pub
    assert f"User:{APP.access_key} may not Sub on Group:{OTHER_GROUP}" in group
    assert f"User:{APP.access_key} may not Sub on Topic:{UNLISTED}" in topic
    assert not answers[0].HasField("settings") and answers[1].HasField("settings")


def test_python5_push_consumer_needs_sub_on_its_group(
    node: AuthNode, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setenv("RMQ_ACCESS_KEY", APP.access_key)
    monkeypatch.setenv("RMQ_SECRET_KEY", APP.secret_key)
    sent = run5("py5", "py5_producer.py", "--endpoints", node.endpoints, "--topic", ORDERS, "--count", "2",
                timeout=30).check()  # fmt: skip
    assert len(sent.of("sent")) == 2

    def push(group: str) -> Any:
        return run5("py5", "py5_push_consumer.py", "--endpoints", node.endpoints, "--topic", ORDERS,
                    "--group", group, "--expect", "2", "--timeout", "20", timeout=40)  # fmt: skip

    refused = push(OTHER_GROUP)
    # the client waits for settings the broker never applies (its own startup error is not shown)
    assert refused.returncode != 0 and not refused.of("started") and not refused.of("consumed")
    assert "refused gRPC Telemetry from ipv4:127.0.0.1" in caplog.text
    assert f"User:{APP.access_key} may not Sub on Group:{OTHER_GROUP}" in caplog.text
    allowed = push(GROUP).check()
    assert allowed.of("started") and len({e["message_id"] for e in allowed.of("consumed")}) >= 2
    assert APP.secret_key not in caplog.text
