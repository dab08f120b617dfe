"""The HA port serves only slaves once access control is on: a stranger's connection is closed before a
byte of the CommitLog is sent, while a slave registered (signed) with the NameServer replicates and
syncs its metadata under plain ACL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from broker.acl.signer import Credentials
from broker.client.message import Message
from broker.client.producer import Producer
from broker.namesrv.config import NamesrvConfig
from broker.namesrv.server import NameServer
from broker.protocol.ha import pack_report
from tests.broker.server.conftest import async_test
from tests.broker.server.ha.conftest import ha_broker, wait_for

pytestmark = pytest.mark.servers

ADMIN = Credentials("ha-admin", "ha-admin-secret-7")
ACL = f"""\
accounts:
  - accessKey: {ADMIN.access_key}
    secretKey: {ADMIN.secret_key}
    admin: true
"""


async def _stranger_gets(port: int) -> bytes:
    """What the HA port sends someone who connects and reports offset 0, until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got = b""
    try:
        writer.write(pack_report(0))
        await writer.drain()
        while chunk := await asyncio.wait_for(reader.read(1 << 16), 10):  # a slave would get frames
            got += chunk
    except ConnectionResetError:  # closed with the report unread
        pass
    finally:
        writer.close()
    return got


@async_test
async def test_only_registered_slaves_replicate_under_acl(tmp_path: Path) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL)
    secure = {"acl_enable": True, "acl_file": acl_file}
    inner = json.dumps({"accessKey": ADMIN.access_key, "secretKey": ADMIN.secret_key})
    ns = NameServer(
        NamesrvConfig(listen_port=0, kv_config_path=tmp_path / "kv.json", **secure), host="127.0.0.1"
    )
    await ns.start()
    signing = {"inner_client_authentication_credentials": inner, **secure}
    master = ha_broker(ns.address, tmp_path / "m", "ASYNC_MASTER", **signing)
    slave = ha_broker(ns.address, tmp_path / "s", "SLAVE", **signing)
    try:
        await master.start()
        async with Producer("ha-pg", ns.address, credentials=ADMIN) as producer:
            await producer.send(Message("HaAclTopic", b"before the slave"))
        assert master.store.commitlog.max_offset > 0
        assert await _stranger_gets(master.ha_service.port) == b""  # closed, nothing sent
        assert not master.ha_service.connections
        await slave.start()
        top = master.store.commitlog.max_offset
        await wait_for(lambda: slave.store.commitlog.max_offset == top, what="the CommitLog on the slave")
        await wait_for(lambda: slave.topics.get("HaAclTopic") is not None, what="the topic on the slave")
    finally:
        await slave.stop()
        await master.stop()
        await ns.stop()


@async_test
async def test_a_white_list_alone_closes_the_port_to_others(tmp_path: Path) -> None:
    master = ha_broker("", tmp_path / "m", "ASYNC_MASTER", broker_white_remote_addresses="10.9.9.*")
    try:
        await master.start()
        assert await _stranger_gets(master.ha_service.port) == b""
    finally:
        await master.stop()
