"""Users and ACL policies in force on a real broker: SDK producers and consumers signing as a user are
allowed what a policy allows and refused, naming the user, resource and action, what no policy allows,
what a Deny entry denies and what comes from outside an entry's source IPs; a Super user passes
everything, a disabled user nothing; the official Python 5 client (gRPC) needs a user's credentials."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.acl.signer import Credentials
from broker.client.consumer_base import ConsumeFrom
from broker.client.lite_consumer import LitePullConsumer
from broker.client.message import Message, MQClientError
from broker.client.producer import Producer
from broker.protocol.auth_bodies import AclRequestHeader, UserRequestHeader
from broker.protocol.bodies import TopicConfig
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.server.config import BrokerConfig
from broker.settings import SettingsError
from tests.acl.test_auth_codes import ROOT, AuthNode, acl, create_user, entry, start_auth_node, user
from tests.grpc.conftest import run5

APP = Credentials("orders-app", "orders-pass-31")
ORDERS, OTHER, DENIED, GROUP = "AuthOrders", "AuthOther", "AuthDenied", "auth-cg"
SECRETS = (ROOT.secret_key, APP.secret_key)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthNode]:
    n = start_auth_node(tmp_path_factory.mktemp("auth-enforce"))
    broker = n.node.broker
    assert broker is not None

    async def seed() -> None:
        for topic in (ORDERS, OTHER, DENIED):
            broker.topics.put(TopicConfig(topicName=topic, readQueueNums=2, writeQueueNums=2))
        broker.groups.put(SubscriptionGroupConfig(groupName=GROUP))

    n.loop.run(seed())
    create_user(n, APP.access_key, APP.secret_key)
    policy = acl(
        f"User:{APP.access_key}",
        entry(f"Topic:{ORDERS}", "Pub", "Sub"),
        entry("Topic:AuthD*", "Pub"),  # a prefix allows AuthDenied ...
        entry(f"Topic:{DENIED}", "Pub", decision="Deny"),  # ... the more specific Deny wins
        entry(f"Group:{GROUP}", "Sub"),
    )
    assert (
        n.call(RequestCode.AUTH_CREATE_ACL, AclRequestHeader(subject=policy.subject or ""), policy).code == 0
    )
    try:
        yield n
    finally:
        n.stop()


@pytest.fixture(autouse=True)
def _no_secret_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    text = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert not any(secret in text for secret in SECRETS)


def send(n: AuthNode, credentials: Credentials | None, topic: str) -> str:
    """``"ok"`` or the broker's remark."""

    async def go() -> str:
        try:
            async with Producer("auth-pg", n.namesrv, credentials=credentials, retry_times=0) as producer:
                await producer.send(Message(topic, b"hello"))
        except MQClientError as exc:
            assert "NO_PERMISSION (16)" in str(exc), exc
            return str(exc)
        return "ok"

    return n.loop.run(go())


def consume(
    n: AuthNode, credentials: Credentials, group: str, expect: int, seconds: float = 20
) -> list[bytes]:
    async def go() -> list[bytes]:
        consumer = LitePullConsumer(
            group, n.namesrv, credentials=credentials, consume_from=ConsumeFrom.FIRST_OFFSET
        )
        consumer.subscribe(ORDERS)
        bodies: list[bytes] = []
        async with consumer:
            deadline = time.monotonic() + seconds
            while len(bodies) < expect and time.monotonic() < deadline:
                bodies += [m.body for m in await consumer.poll(1.0)]
        return bodies

    return n.loop.run(go())


def test_allowed_user_produces_and_consumes(node: AuthNode) -> None:
    for _ in range(2):
        assert send(node, APP, ORDERS) == "ok"
    assert len(consume(node, APP, GROUP, 2)) >= 2


def test_no_matching_policy_is_refused(node: AuthNode) -> None:
    remark = send(node, APP, OTHER)
    assert f"User:{APP.access_key} may not Pub on Topic:{OTHER}" in remark and "no policy allows it" in remark


def test_a_deny_entry_wins_over_a_wider_allow(node: AuthNode) -> None:
    remark = send(node, APP, DENIED)
    assert (
        f"may not Pub on Topic:{DENIED}" in remark
        and f"denied by the policy entry of Topic:{DENIED}" in remark
    )


def test_consuming_needs_sub_on_the_group(node: AuthNode, caplog: pytest.LogCaptureFixture) -> None:
    assert send(node, APP, ORDERS) == "ok"
    assert consume(node, APP, "other-cg", 1, seconds=5) == []
    assert f"User:{APP.access_key} may not Sub on Group:other-cg" in caplog.text  # what the client logs


def test_source_ips_limit_an_entry(node: AuthNode) -> None:
    far = Credentials("far-app", "far-pass-123")
    create_user(node, far.access_key, far.secret_key)
    subject = AclRequestHeader(subject="User:far-app")
    node.call(
        RequestCode.AUTH_CREATE_ACL,
        subject,
        acl("User:far-app", entry(f"Topic:{ORDERS}", "Pub", ips=["10.9.9.0/24"])),
    )
    assert "from 127.0.0.1: no policy allows it" in send(node, far, ORDERS)
    node.call(
        RequestCode.AUTH_UPDATE_ACL,
        subject,
        acl("User:far-app", entry(f"Topic:{ORDERS}", "Pub", ips=["127.0.0.0/8"])),
    )
    assert send(node, far, ORDERS) == "ok"  # in force at once


def test_super_user_passes_without_policies(node: AuthNode) -> None:
    assert send(node, ROOT, OTHER) == "ok"
    assert send(node, ROOT, DENIED) == "ok"


def test_disabled_user_and_bad_credentials_are_refused(node: AuthNode) -> None:
    off = Credentials("off-app", "off-pass-123")
    create_user(node, off.access_key, off.secret_key, status="disable")
    node.call(
        RequestCode.AUTH_CREATE_ACL,
        AclRequestHeader(subject="User:off-app"),
        acl("User:off-app", entry("*", "All")),
    )
    assert "user off-app is disabled" in send(node, off, ORDERS)
    node.call(
        RequestCode.AUTH_UPDATE_USER, UserRequestHeader(username="off-app"), user("off-app", status="enable")
    )
    assert send(node, off, ORDERS) == "ok"
    assert "signature check failed for user orders-app" in send(
        node, Credentials(APP.access_key, "wrong-pass"), ORDERS
    )
    assert "user ghost does not exist" in send(node, Credentials("ghost", "ghost-pass-1"), ORDERS)
    assert "is not signed" in send(node, None, ORDERS)


def test_normal_user_cannot_manage_users(node: AuthNode) -> None:
    response = node.call(RequestCode.AUTH_LIST_USER, credentials=APP)
    assert response.code == ResponseCode.NO_PERMISSION
    assert f"User:{APP.access_key} may not Get on Cluster:" in (response.remark or "")


def test_plain_acl_and_users_together_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match="choose one access control"):
        BrokerConfig(acl_enable=True, acl_file=None, authentication_enabled=True).validate_security()
    config = BrokerConfig(authentication_enabled=True, init_authentication_user='{"username": "root"}')
    with pytest.raises(SettingsError, match=r"initAuthenticationUser.*password of root is missing"):
        config.validate_security()


def test_python5_client_needs_a_users_credentials(node: AuthNode, monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["--endpoints", node.endpoints, "--topic", ORDERS, "--count", "2"]
    monkeypatch.delenv("RMQ_ACCESS_KEY", raising=False)
    monkeypatch.delenv("RMQ_SECRET_KEY", raising=False)
    refused = run5("py5", "py5_producer.py", *args, timeout=30)
    assert refused.returncode != 0 and not refused.of("sent")
    monkeypatch.setenv("RMQ_ACCESS_KEY", APP.access_key)
    monkeypatch.setenv("RMQ_SECRET_KEY", APP.secret_key)
    assert len(run5("py5", "py5_producer.py", *args, timeout=30).check().of("sent")) == 2
    got = run5("py5", "py5_simple_consumer.py", "--endpoints", node.endpoints, "--topic", ORDERS,
               "--group", GROUP, "--expect", "2", timeout=30).check()  # fmt: skip
    assert len(got.of("received")) >= 2
    other = run5(
        "py5", "py5_producer.py", "--endpoints", node.endpoints, "--topic", OTHER, "--count", "1", timeout=30
    )
    assert other.returncode != 0 and not other.of("sent")


def test_whitelisted_codes_skip_the_checks(tmp_path: Path) -> None:
    runtime, topics = RequestCode.GET_BROKER_RUNTIME_INFO, RequestCode.GET_ALL_TOPIC_CONFIG
    n = start_auth_node(tmp_path, authentication_whitelist=f"{int(runtime)}, 9999")
    try:
        assert n.call(runtime, credentials=None).code == ResponseCode.SUCCESS
        refused = n.call(topics, credentials=None)
        assert refused.code == ResponseCode.NO_PERMISSION and "is not signed" in (refused.remark or "")
    finally:
        n.stop()
