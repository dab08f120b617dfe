"""TLS on the remoting and gRPC ports (with ACL): the SDK, the admin service and the ``rmq`` CLI
connect with a CA bundle from a profile; plain-text clients do not get through."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from admin.errors import ConnectFailed
from admin.service import AdminService
from broker.acl.client import ClientSecurity
from broker.acl.signer import grpc_authorization
from broker.acl.tls import client_context
from cli import acl as acl_cli
from tests.acl.conftest import ACL_YAML, ADMIN, APP, SECRETS, TOPIC, AclCluster, Certs, start_node


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[AclCluster]:
    tmp = tmp_path_factory.mktemp("acl-tls")
    acl_file = tmp / "plain_acl.yml"
    acl_file.write_text(ACL_YAML)
    tls = {"tls_enable": True, "tls_cert_path": certs.server_cert, "tls_key_path": certs.server_key}
    loop, node = start_node(tmp, acl_file, **tls)
    try:
        yield AclCluster(loop, node, acl_file)
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


def test_cli_uses_the_profile_credentials_and_tls(
    tls_cluster: AclCluster, certs: Certs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'current = "secure"\n[profiles.secure]\n'
        f'namesrv = "{tls_cluster.namesrv}"\naccess_key = "{ADMIN.access_key}"\n'
        f'secret_key_env = "OPS_SECRET"\ntls = true\ntls_ca_file = "{certs.ca}"\n'
    )
    monkeypatch.setenv("RMQ_CONFIG", str(config))
    monkeypatch.setenv("OPS_SECRET", ADMIN.secret_key)
    monkeypatch.delenv("RMQ_ACCESS_KEY", raising=False)
    result = CliRunner().invoke(acl_cli.app, ["list", "-b", tls_cluster.broker_addr, "-o", "json"])
    assert result.exit_code == 0, result.output
    views = json.loads(result.output)
    assert {a.get("accessKey", a.get("access_key")) for a in views[0]["accounts"]} == {
        ADMIN.access_key,
        APP.access_key,
    }
    assert not any(secret in result.output for secret in SECRETS)


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
