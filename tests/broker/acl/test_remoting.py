"""ACL over remoting against a real NameServer + broker: the admin service and SDK sign with a
profile's credentials; refusals are NO_PERMISSION naming what is missing; no secret is ever logged."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from admin.errors import OperationFailed
from admin.models import TopicSpec
from admin.service import AdminService
from admin.service.acl import AccountChange
from broker.acl.client import secure
from broker.acl.signer import Credentials
from broker.client.admin_api import RemoteError
from broker.client.consumer_base import ConsumeFrom
from broker.client.lite_consumer import LitePullConsumer
from broker.client.message import Message, MQClientError
from broker.client.producer import Producer
from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import make_request
from tests.broker.acl.conftest import ADMIN, APP, GROUP, OTHER_TOPIC, SECRETS, TOPIC, AclCluster, security


@pytest.fixture(autouse=True)
def _no_secret_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    text = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert not any(secret in text for secret in SECRETS)


def _service(c: AclCluster, credentials: Credentials | None) -> AdminService:
    return AdminService([c.namesrv], 5.0, security(credentials))


async def _send(c: AclCluster, credentials: Credentials | None, topic: str) -> tuple[int, str]:
    client = RemotingClient()
    if credentials is not None:
        secure(client, security(credentials))
    born = str(int(time.time() * 1000))
    ext = {"a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": born,
           "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}  # fmt: skip
    try:
        response = await client.invoke(
            c.broker_addr, make_request(RequestCode.SEND_MESSAGE_V2, ext_fields=ext, body=b"x")
        )
    finally:
        await client.close()
    return response.code, response.remark or ""


def test_signed_send_passes_and_the_others_are_refused(acl_cluster: AclCluster) -> None:
    c = acl_cluster
    assert c.loop.run(_send(c, APP, TOPIC))[0] == ResponseCode.SUCCESS
    code, remark = c.loop.run(_send(c, APP, OTHER_TOPIC))
    assert code == ResponseCode.NO_PERMISSION and f"PUB permission on topic {OTHER_TOPIC}" in remark
    code, remark = c.loop.run(_send(c, Credentials(APP.access_key, "wrong-secret"), TOPIC))
    assert code == ResponseCode.NO_PERMISSION and "signature" in remark
    code, remark = c.loop.run(_send(c, None, TOPIC))
    assert code == ResponseCode.NO_PERMISSION and "not signed" in remark
    assert not any(secret in remark for secret in SECRETS)


def test_sdk_clients_take_credentials(acl_cluster: AclCluster) -> None:
    c = acl_cluster

    async def round_trip(credentials: Credentials) -> list[bytes]:
        async with Producer("acl-pg", c.namesrv, credentials=credentials) as producer:
            for i in range(3):
                await producer.send(Message(TOPIC, b"hello-%d" % i))
        consumer = LitePullConsumer(
            GROUP, c.namesrv, credentials=credentials, consume_from=ConsumeFrom.FIRST_OFFSET
        )
        consumer.subscribe(TOPIC)
        async with consumer:
            bodies: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(bodies) < 3 and time.monotonic() < deadline:
                bodies += [m.body for m in await consumer.poll(1.0) if m.body.startswith(b"hello-")]
        return sorted(bodies)

    assert c.loop.run(round_trip(APP)) == [b"hello-0", b"hello-1", b"hello-2"]
    with pytest.raises(MQClientError, match="signature check failed"):
        c.loop.run(round_trip(Credentials(APP.access_key, "wrong-secret")))


def test_non_admin_cannot_create_topics_or_reset_offsets(acl_cluster: AclCluster) -> None:
    c = acl_cluster

    async def as_app() -> None:
        async with _service(c, APP) as service:
            with pytest.raises(OperationFailed, match="needs an admin account"):
                await service.topic_create(TopicSpec("AppMade"), broker=c.broker_addr)
            with pytest.raises(RemoteError, match="needs an admin account"):
                await service.api.reset_offset(c.broker_addr, GROUP, TOPIC, timestamp=0)
            assert await service.topic_names()  # reads only need a valid signature

    async def as_admin() -> None:
        async with _service(c, ADMIN) as service:
            await service.topic_create(TopicSpec("AdminMade"), broker=c.broker_addr)

    c.loop.run(as_app())
    c.loop.run(as_admin())


def test_namesrv_admin_codes_need_an_admin(acl_cluster: AclCluster) -> None:
    c = acl_cluster

    async def put(credentials: Credentials | None) -> None:
        async with _service(c, credentials) as service:
            await service.api.put_kv(c.namesrv, "NS", "k", "v")

    with pytest.raises(Exception, match="admin"):
        c.loop.run(put(APP))
    with pytest.raises(Exception, match="not signed"):
        c.loop.run(put(None))
    c.loop.run(put(ADMIN))


def test_manage_accounts_through_the_broker(acl_cluster: AclCluster) -> None:
    c = acl_cluster
    new = Credentials("new-app-7", "new-secret-9Kp")

    async def manage() -> None:
        async with _service(c, ADMIN) as service:
            change = AccountChange(new.access_key, new.secret_key, topic_perms=[f"{TOPIC}=PUB"])
            assert await service.acl_upsert(change, create=True, broker=c.broker_addr) == ["acl-broker"]
            views = await service.acl_list(broker=c.broker_addr, access_key=new.access_key)
            assert views[0].accounts[0].topic_perms == {TOPIC: "PUB"}
            assert await _send(c, new, TOPIC) == (ResponseCode.SUCCESS, "")  # in force at once
            narrower = AccountChange(new.access_key, topic_perms=[f"{TOPIC}=SUB"])
            await service.acl_upsert(narrower, create=False, broker=c.broker_addr)
            assert (await _send(c, new, TOPIC))[0] == ResponseCode.NO_PERMISSION
            await service.acl_delete(new.access_key, broker=c.broker_addr)
            assert "no ACL account" in (await _send(c, new, TOPIC))[1]

    c.loop.run(manage())
    assert c.acl_file.stat().st_mode & 0o077 == 0


def test_app_cannot_manage_accounts(acl_cluster: AclCluster) -> None:
    c = acl_cluster

    async def manage() -> None:
        async with _service(c, APP) as service:
            with pytest.raises(OperationFailed, match="admin"):
                await service.acl_list(broker=c.broker_addr)

    c.loop.run(manage())
