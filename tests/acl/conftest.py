"""An in-process NameServer + broker with ACL on (one ACL file for both), test accounts, and TLS
certificates made with the ``openssl`` command."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.acl.client import ClientSecurity
from broker.acl.signer import Credentials
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.bodies import TopicConfig
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.server.config import BrokerConfig
from tests.peers.conftest import LoopThread, small_store

ADMIN = Credentials("admin-ak", "admin-secret-Zq81")
APP = Credentials("app-ak-01", "app-secret-Xw42")
SECRETS = (ADMIN.secret_key, APP.secret_key)
INNER = json.dumps({"accessKey": ADMIN.access_key, "secretKey": ADMIN.secret_key})
TOPIC = "AclTopic"
OTHER_TOPIC = "AclOther"
GROUP = "acl-cg"

ACL_YAML = f"""\
# test accounts: one admin, one application limited to {TOPIC}
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: {ADMIN.access_key}
    secretKey: {ADMIN.secret_key}
    admin: true
  - accessKey: {APP.access_key}
    secretKey: {APP.secret_key}
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - {TOPIC}=PUB|SUB
      - {OTHER_TOPIC}=DENY
"""


@dataclass
class AclCluster:
    loop: LoopThread
    node: Node
    acl_file: Path

    @property
    def namesrv(self) -> str:
        assert self.node.namesrv is not None
        return f"127.0.0.1:{self.node.namesrv.port}"

    @property
    def broker_addr(self) -> str:
        assert self.node.broker is not None
        return self.node.broker.address

    @property
    def endpoints(self) -> str:
        assert self.node.broker is not None
        return f"127.0.0.1:{self.node.broker.grpc_port}"

    def call(self, fn: Any, *args: Any) -> Any:
        async def go() -> Any:
            return fn(*args)

        return self.loop.run(go())


def security(credentials: Credentials | None, **kwargs: Any) -> ClientSecurity:
    return ClientSecurity(credentials, **kwargs)


def start_node(tmp: Path, acl_file: Path, **tls: Any) -> tuple[LoopThread, Node]:
    loop = LoopThread()
    plan = NodePlan(
        namesrv=NamesrvConfig(
            listen_port=0, kv_config_path=tmp / "kv.json", acl_enable=True, acl_file=acl_file, **tls
        ),
        broker=BrokerConfig(
            broker_name="acl-broker",
            listen_host="127.0.0.1",
            listen_port=0,
            http_port=0,
            grpc_port=0,
            ha_listen_port=0,
            acl_enable=True,
            acl_file=acl_file,
            inner_client_authentication_credentials=INNER,  # it registers signed with its NameServer
            **tls,
        ),
        store=small_store(tmp / "store"),
    )
    node = Node(plan)
    loop.run(node.start())
    return loop, node


def seed(cluster: AclCluster) -> AclCluster:
    """The test topics and group, created directly in the broker."""
    broker = cluster.node.broker
    assert broker is not None
    for topic in (TOPIC, OTHER_TOPIC):
        cluster.call(broker.topics.put, TopicConfig(topicName=topic, readQueueNums=2, writeQueueNums=2))
    cluster.call(broker.groups.put, SubscriptionGroupConfig(groupName=GROUP))
    return cluster


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    tmp = tmp_path_factory.mktemp("acl")
    acl_file = tmp / "plain_acl.yml"
    acl_file.write_text(ACL_YAML)
    loop, node = start_node(tmp, acl_file)
    cluster = AclCluster(loop, node, acl_file)
    try:
        yield seed(cluster)
    finally:
        loop.run(node.stop(), timeout=60)
        loop.close()


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    d = tmp_path_factory.mktemp("certs")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=rmq-test-ca",
             "-keyout", "ca.key", "-out", "ca.pem", cwd=d)  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, cn in (("server", "localhost"), ("client", "rmq-client")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={cn}",
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", f"{name}.pem",
                 cwd=d)  # fmt: skip
    return Certs(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key")
