"""A master/slave pair with users and ACL policies on: the slave signs its metadata sync with
innerClientAuthenticationCredentials, so topics and groups created on the master reach it; without them
the master refuses the sync, the slave says why in its log and both keep serving (messages still
replicate); malformed credentials are a settings error."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from broker.acl.client import ClientSecurity, secure
from broker.acl.signer import Credentials
from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.server.broker import Broker
from broker.server.config import BrokerConfig
from broker.settings import SettingsError
from tests.broker.server.conftest import async_test, call, send
from tests.broker.server.ha.conftest import ha_broker, namesrv, wait_for
from tests.broker.server.test_admin import create

ROOT = Credentials("root", "root-pass-Hq27")
TOPIC, GROUP = "AuthHaTopic", "auth-ha-cg"
AUTH = {
    "authentication_enabled": True,
    "authorization_enabled": True,
    "init_authentication_user": json.dumps({"username": ROOT.access_key, "password": ROOT.secret_key}),
}
INNER = json.dumps({"accessKey": ROOT.access_key, "secretKey": ROOT.secret_key})


def auth_broker(ns: str, store: Path, role: str, **overrides: Any) -> Broker:
    return ha_broker(ns, store, role, **AUTH, **overrides)


def signed() -> RemotingClient:
    return secure(RemotingClient(), ClientSecurity(ROOT))


async def create_on(client: RemotingClient, master: Broker) -> None:
    assert (await call(client, master, RequestCode.UPDATE_AND_CREATE_TOPIC, create(TOPIC, 4))).code == 0
    group = json.dumps({"groupName": GROUP}).encode()
    r = await call(client, master, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group)
    assert r.code == ResponseCode.SUCCESS, r.remark


@async_test
async def test_slave_with_inner_credentials_follows_the_master(tmp_path: Path) -> None:
    async with namesrv(tmp_path) as ns:
        master = auth_broker(ns.address, tmp_path / "m", "ASYNC_MASTER")
        slave = auth_broker(
            ns.address, tmp_path / "s", "SLAVE", inner_client_authentication_credentials=INNER
        )
        client, anonymous = signed(), RemotingClient()
        try:
            await master.start()
            await slave.start()
            # the master does check: an unsigned request for its topics is refused
            refused = await call(anonymous, master, RequestCode.GET_ALL_TOPIC_CONFIG)
            assert refused.code == ResponseCode.NO_PERMISSION
            await create_on(client, master)
            await wait_for(lambda: slave.topics.get(TOPIC) is not None, what="the topic on the slave")
            await wait_for(lambda: slave.groups.get(GROUP) is not None, what="the group on the slave")
            assert (slave.topics.get(TOPIC) or create(TOPIC)).readQueueNums == 4
        finally:
            await anonymous.close()
            await client.close()
            await slave.stop()
            await master.stop()


@async_test
async def test_without_inner_credentials_the_sync_is_refused_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="broker.server.ha.sync_metadata")
    async with namesrv(tmp_path) as ns:
        master = auth_broker(ns.address, tmp_path / "m", "ASYNC_MASTER")
        slave = auth_broker(ns.address, tmp_path / "s", "SLAVE")
        client = signed()
        try:
            await master.start()
            await create_on(client, master)
            await slave.start()
            await wait_for(
                lambda: "set innerClientAuthenticationCredentials on this slave" in caplog.text,
                what="the refused sync in the slave's log",
            )
            assert "GET_ALL_" in caplog.text and "refused" in caplog.text
            assert slave.topics.get(TOPIC) is None and slave.groups.get(GROUP) is None
            # both keep serving, and messages still replicate (the slave is registered as one)
            assert (await send(client, master, TOPIC, queue_id=0)).code == ResponseCode.SUCCESS
            top = master.store.commitlog.max_offset
            await wait_for(lambda: slave.store.commitlog.max_offset == top, what="the message on the slave")
            runtime = await call(client, slave, RequestCode.GET_BROKER_RUNTIME_INFO)
            assert runtime.code == ResponseCode.SUCCESS
            assert ROOT.secret_key not in caplog.text
        finally:
            await client.close()
            await slave.stop()
            await master.stop()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('{"accessKey": "root", "secretKey": ', "not valid JSON"),
        ('["root", "secret"]', "not a JSON object"),
        ('{"secretKey": "s3cret-pass"}', "the accessKey is missing"),
        ('{"accessKey": "root"}', "the secretKey of root is missing"),
    ],
)
def test_malformed_inner_credentials_are_a_settings_error(value: str, problem: str) -> None:
    config = BrokerConfig(inner_client_authentication_credentials=value)
    with pytest.raises(SettingsError, match=rf"innerClientAuthenticationCredentials: .*{problem}") as exc:
        config.validate_security()
    assert "s3cret-pass" not in str(exc.value)
