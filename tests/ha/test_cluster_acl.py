"""`rmq cluster up -c FILE` with plain ACL in the file: every process (NameServer, SYNC_MASTER, slave) takes
it; the brokers register signed, the slave is let into the master's HA port and copies its metadata, so
signed sends are acknowledged (which a SYNC_MASTER does only once the slave holds them), while an
unsigned registration is refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from broker.acl.client import ClientSecurity, secure
from broker.acl.signer import Credentials
from broker.client.message import Message, SendStatus
from broker.client.producer import Producer
from broker.client.remoting_client import RemotingClient
from broker.protocol.bodies import ClusterInfo, TopicConfigSerializeWrapper
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import make_request
from cli import cluster_local
from tests.ports import free_base_port

pytestmark = pytest.mark.servers

ADMIN = Credentials("cluster-admin", "cluster-admin-secret-5")
TOPIC = "ClusterAclTopic"


async def _scenario(tmp: Path) -> None:
    (tmp / "plain_acl.yml").write_text(
        f"accounts:\n  - accessKey: {ADMIN.access_key}\n    secretKey: {ADMIN.secret_key}\n    admin: true\n"
    )
    inner = json.dumps({"accessKey": ADMIN.access_key, "secretKey": ADMIN.secret_key})
    conf = tmp / "secure.properties"
    conf.write_text(
        f"aclEnable=true\naclFile={tmp / 'plain_acl.yml'}\ninnerClientAuthenticationCredentials={inner}\n"
    )
    base = free_base_port()
    members = await asyncio.to_thread(cluster_local.start, tmp / "c", 1, 1, base, True, conf)
    namesrv = f"127.0.0.1:{base}"
    slave = next(m for m in members if m.role == "SLAVE")
    signed = secure(RemotingClient(), ClientSecurity(ADMIN))
    anonymous = RemotingClient()
    try:

        async def registered() -> set[str]:
            r = await anonymous.invoke(namesrv, make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
            info = ClusterInfo.from_json(r.body or b"{}")
            return {a for bd in info.brokerAddrTable.values() for a in bd.brokerAddrs.values()}

        want = {f"127.0.0.1:{m.port}" for m in members if m.role != "NAMESRV"}
        got: set[str] = set()
        async with asyncio.timeout(25):
            while got != want:
                got = await registered()
                await asyncio.sleep(0.2)
        fake = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:1", "clusterName": "LocalCluster",
                "haServerAddr": "127.0.0.1:2", "brokerId": "0"}  # fmt: skip
        refused = await anonymous.invoke(namesrv, make_request(RequestCode.REGISTER_BROKER, ext_fields=fake))
        assert refused.code == ResponseCode.NO_PERMISSION and "not signed" in (refused.remark or "")
        async with Producer("cluster-acl-pg", namesrv, credentials=ADMIN) as producer:
            for i in range(5):  # auto-created on the master; a SYNC_MASTER answers once the slave has it
                result = await producer.send(Message(TOPIC, b"m%d" % i))
                assert result.status is SendStatus.SEND_OK
        slave_addr = f"127.0.0.1:{slave.port}"

        async def slave_topics() -> set[str]:
            r = await signed.invoke(slave_addr, make_request(RequestCode.GET_ALL_TOPIC_CONFIG))
            if r.code != ResponseCode.SUCCESS:
                return set()
            return set(TopicConfigSerializeWrapper.from_json(r.body or b"{}").topicConfigTable)

        topics: set[str] = set()
        async with asyncio.timeout(25):
            while TOPIC not in topics:
                topics = await slave_topics()
                await asyncio.sleep(0.3)
    finally:
        await signed.close()
        await anonymous.close()
        await asyncio.to_thread(cluster_local.stop, tmp / "c")


def test_cluster_up_with_acl_and_a_slave(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(_scenario(tmp_path), 90))
