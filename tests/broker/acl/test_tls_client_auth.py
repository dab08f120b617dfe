"""tlsClientAuth=require with tlsTrustCertPath: the broker completes TLS only with clients whose
certificate comes from the trusted CAs."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from broker.acl.tls import client_context
from broker.protocol.codes import RequestCode
from broker.protocol.remoting import encode_command, make_request
from tests.broker.acl.conftest import Certs
from tests.broker.server.conftest import async_test, running_broker

pytestmark = pytest.mark.servers


@async_test
async def test_tls_client_auth_require_refuses_clients_without_a_certificate(
    tmp_path: Path, certs: Certs
) -> None:
    tls = {
        "tls_enable": True,
        "tls_cert_path": certs.server_cert,
        "tls_key_path": certs.server_key,
        "tls_trust_cert_path": certs.ca,  # the CAs client certificates must come from
        "tls_client_auth": "require",
    }
    async with running_broker(tmp_path, grpc_port=-1, **tls) as (broker, _client):
        host, port = broker.address.rsplit(":", 1)
        ping = encode_command(make_request(RequestCode.GET_BROKER_RUNTIME_INFO))
        anonymous = client_context(certs.ca)
        try:
            reader, writer = await asyncio.open_connection(host, int(port), ssl=anonymous)
            writer.write(ping)
            await writer.drain()
            answer = await reader.read(1)  # TLS 1.3 reports the missing certificate here
        except (ssl.SSLError, ConnectionError):
            answer = b""
        assert answer == b""
        known = client_context(certs.ca, certs.client_cert, certs.client_key)
        reader, writer = await asyncio.open_connection(host, int(port), ssl=known)
        writer.write(ping)
        await writer.drain()
        assert len(await reader.read(4)) == 4  # the answer's frame length
        writer.close()
        await writer.wait_closed()
