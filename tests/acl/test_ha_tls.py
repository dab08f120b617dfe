"""The HA port over mutual TLS (`haTlsEnable` with `tlsClientAuth=require`): a SYNC_MASTER's slave
replicates over it, so sends are acknowledged only once the slave holds them, while a connection
without a trusted certificate (plain TCP, or TLS without a client certificate) gets no byte of the
CommitLog. A setting without `tlsEnable` is refused with its reason."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from pathlib import Path

import pytest

from broker.acl.tls import client_context
from broker.client.message import Message, SendStatus
from broker.client.producer import Producer
from broker.server.config import BrokerConfig
from broker.settings import SettingsError
from cli import cluster_local
from tests.acl.conftest import Certs
from tests.ports import free_base_port

pytestmark = pytest.mark.servers

TOPIC = "HaTlsTopic"


def _no_bytes_without_a_certificate(port: int, certs: Certs) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as plain:
        plain.sendall(b"\0" * 12)  # a slave's first report, in the clear
        with contextlib.suppress(ConnectionResetError):
            assert plain.recv(65536) == b""
    anonymous = client_context(certs.ca)  # verifies the master, presents nothing
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with anonymous.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"\0" * 12)
                assert tls.recv(65536) == b""
        except (ssl.SSLError, ConnectionResetError):
            pass  # the handshake or its first read fails: the master wants a certificate


async def _scenario(tmp: Path, certs: Certs) -> None:
    conf = tmp / "tls.properties"
    conf.write_text(
        "tlsEnable=true\n"
        f"tlsCertPath={certs.server_cert}\ntlsKeyPath={certs.server_key}\n"
        f"tlsTrustCertPath={certs.ca}\ntlsClientAuth=require\ntlsClientTrustCertPath={certs.ca}\n"
        "haTlsEnable=true\n"
    )
    base = free_base_port()
    members = await asyncio.to_thread(cluster_local.start, tmp / "c", 1, 1, base, True, conf)
    master = next(m for m in members if m.role == "SYNC_MASTER")
    client_tls = client_context(certs.ca, certs.client_cert, certs.client_key)
    try:
        async with Producer("ha-tls-pg", f"127.0.0.1:{base}", ssl_context=client_tls) as producer:
            statuses = []
            async with asyncio.timeout(40):
                while not statuses or statuses[-1] is not SendStatus.SEND_OK:
                    # SLAVE_NOT_AVAILABLE until the slave's TLS session is up
                    statuses.append((await producer.send(Message(TOPIC, b"over-tls"))).status)
                    await asyncio.sleep(0.2)
            for i in range(5):
                result = await producer.send(Message(TOPIC, b"m%d" % i))
                assert result.status is SendStatus.SEND_OK
        await asyncio.to_thread(_no_bytes_without_a_certificate, master.ha_port, certs)
    finally:
        await asyncio.to_thread(cluster_local.stop, tmp / "c")


def test_a_slave_replicates_over_mutual_tls_and_strangers_get_nothing(tmp_path: Path, certs: Certs) -> None:
    asyncio.run(asyncio.wait_for(_scenario(tmp_path, certs), 120))


def test_ha_tls_needs_tls() -> None:
    with pytest.raises(SettingsError, match="haTlsEnable: true needs tlsEnable"):
        BrokerConfig(ha_tls_enable=True).validate()
