"""TLS on the remoting and gRPC ports (with ACL): the SDK, the admin service and the ``rmq`` CLI
connect with a CA bundle from a profile; plain-text clients do not get through."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from admin.errors import ConnectFailed
from admin.service import AdminService
from broker.acl.client import ClientSecurity
from broker.acl.signer import grpc_authorization
from broker.acl.tls import client_context
from broker.client.consumer_base import ConsumeFrom
from broker.client.lite_consumer import LitePullConsumer
from broker.client.message import Message, MQClientError
from broker.client.producer import Producer
from cli.main import app as rmq_app
from tests.broker.acl.conftest import (
    ACL_YAML,
    ADMIN,
    APP,
    GROUP,
    SECRETS,
    TOPIC,
    AclCluster,
    Certs,
    seed,
    start_node,
)


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[AclCluster]:
    tmp = tmp_path_factory.mktemp("acl-tls")
    acl_file = tmp / "plain_acl.yml"
    acl_file.write_text(ACL_YAML)
    tls = {
        "tls_enable": True,
        "tls_cert_path": certs.server_cert,
        "tls_key_path": certs.server_key,
        "tls_client_trust_cert_path": certs.ca,  # the broker verifies the NameServer it registers with
    }
    loop, node = start_node(tmp, acl_file, **tls)
    try:
        yield seed(AclCluster(loop, node, acl_file))
    finally:
        loop.run(node.stop(), timeout=60)
        loop.close()


def test_admin_service_over_tls(tls_cluster: AclCluster, certs: Certs) -> None:
    c = tls_cluster

    async def names(security: ClientSecurity | None) -> list[str]:
        async with AdminService([c.namesrv], 5.0, security) as service:
            return await service.topic_names()

    assert isinstance(c.loop.run(names(ClientSecurity(ADMIN, client_context(certs.ca)))), list)
    with pytest.raises(ConnectFailed):  # the server's certificate is not trusted without the CA
        c.loop.run(names(ClientSecurity(ADMIN, client_context())))
    with pytest.raises(Exception):  # noqa: B017 - plain text: the TLS server drops it (closed or timeout)
        c.loop.run(names(ClientSecurity(ADMIN)))


def test_sdk_over_tls(tls_cluster: AclCluster, certs: Certs) -> None:
    c = tls_cluster

    async def round_trip(ssl_context: ssl.SSLContext) -> list[bytes]:
        async with Producer("tls-pg", c.namesrv, credentials=APP, ssl_context=ssl_context) as producer:
            sent = [await producer.send(Message(TOPIC, b"over-tls-%d" % i)) for i in range(3)]
        assert {r.status.name for r in sent} == {"SEND_OK"}
        consumer = LitePullConsumer(
            GROUP,
            c.namesrv,
            credentials=APP,
            ssl_context=ssl_context,
            consume_from=ConsumeFrom.FIRST_OFFSET,
        )
        consumer.subscribe(TOPIC)
        async with consumer:
            bodies: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(bodies) < 3 and time.monotonic() < deadline:
                bodies += [m.body for m in await consumer.poll(1.0) if m.body.startswith(b"over-tls-")]
        return sorted(bodies)

    assert c.loop.run(round_trip(client_context(certs.ca))) == [b"over-tls-0", b"over-tls-1", b"over-tls-2"]
    with pytest.raises(MQClientError):  # the server's certificate is not trusted without the CA
        c.loop.run(round_trip(client_context()))


def test_cli_uses_the_profile_credentials_and_tls(
    tls_cluster: AclCluster, certs: Certs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("RMQ_CONFIG", str(config))
    monkeypatch.setenv("OPS_SECRET", ADMIN.secret_key)
    monkeypatch.delenv("RMQ_ACCESS_KEY", raising=False)
    created = CliRunner().invoke(
        rmq_app,
        ["profile", "create", "secure", "-n", tls_cluster.namesrv, "--access-key", ADMIN.access_key,
         "--secret-key-env", "OPS_SECRET", "--tls-ca-file", str(certs.ca), "-o", "json"],
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    (saved,) = json.loads(created.output)["profiles"]
    assert saved["tls"] is True and saved["tlsCaFile"] == str(certs.ca)
    assert ADMIN.secret_key not in config.read_text()
    result = CliRunner().invoke(rmq_app, ["acl", "list", "-b", tls_cluster.broker_addr, "-o", "json"])
    assert result.exit_code == 0, result.output
    views = json.loads(result.output)
    assert {a.get("accessKey", a.get("access_key")) for a in views[0]["accounts"]} == {
        ADMIN.access_key,
        APP.access_key,
    }
    assert not any(secret in result.output for secret in SECRETS)
    monkeypatch.delenv("OPS_SECRET")
    missing = CliRunner().invoke(rmq_app, ["acl", "list", "-b", tls_cluster.broker_addr])
    assert missing.exit_code == 2 and "OPS_SECRET is not set" in missing.stderr


def test_grpc_over_tls_with_authorization(tls_cluster: AclCluster, certs: Certs) -> None:
    grpc = pytest.importorskip("grpc")
    from broker.grpc.schema import PB, SERVICE

    async def query(credentials_ok: bool) -> int:
        creds = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
        async with grpc.aio.secure_channel(tls_cluster.endpoints, creds) as channel:
            call = channel.unary_unary(
                f"/{SERVICE}/QueryRoute",
                request_serializer=PB.QueryRouteRequest.SerializeToString,
                response_deserializer=PB.QueryRouteResponse.FromString,
            )
            stamp = "20250101T000000Z"
            key = APP if credentials_ok else ADMIN.__class__(APP.access_key, "bad-secret-0")
            metadata = (("x-mq-date-time", stamp), ("authorization", grpc_authorization(key, stamp)))
            request = PB.QueryRouteRequest(topic=PB.Resource(name=TOPIC))
            response = await call(request, metadata=metadata, timeout=10)
            return int(response.status.code)

    assert tls_cluster.loop.run(query(True)) == 20000
    assert tls_cluster.loop.run(query(False)) == 40100
