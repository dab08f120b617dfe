"""TLS contexts for the remoting port (asyncio) and the PEM material gRPC wants, from file paths.

Server: certificate and key, and for mutual TLS a trust bundle with ``clientAuth`` ``optional`` or
``require``. Client: a CA bundle to verify the server (system CAs when none), optionally a client
certificate and key, and an ``insecure`` switch for self-signed test setups.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

CLIENT_AUTH = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "require": ssl.CERT_REQUIRED}


class TlsConfigError(ValueError):
    """A TLS setting or file that cannot be used (the message names it)."""


def _load_chain(ctx: ssl.SSLContext, cert: Path, key: Path) -> None:
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"cannot load the certificate {cert} with key {key}: {exc}") from None


def _load_trust(ctx: ssl.SSLContext, trust: Path) -> None:
    try:
        ctx.load_verify_locations(cafile=trust)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"cannot load the trusted certificates {trust}: {exc}") from None


@dataclass(frozen=True, slots=True)
class ServerTls:
    cert: Path
    key: Path
    trust: Path | None = None
    client_auth: str = "none"  # none | optional | require

    def __post_init__(self) -> None:
        if self.client_auth not in CLIENT_AUTH:
            raise TlsConfigError(f"tlsClientAuth {self.client_auth!r} is not one of {', '.join(CLIENT_AUTH)}")
        if self.client_auth != "none" and self.trust is None:
            raise TlsConfigError("tlsClientAuth needs tlsTrustCertPath (the CAs of client certificates)")

    def context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        _load_chain(ctx, self.cert, self.key)
        if self.trust is not None:
            _load_trust(ctx, self.trust)
        ctx.verify_mode = CLIENT_AUTH[self.client_auth]
        return ctx


def client_context(
    ca: Path | None = None, cert: Path | None = None, key: Path | None = None, *, insecure: bool = False
) -> ssl.SSLContext:
    """A client context verifying the server against ``ca`` (or the system CAs) unless ``insecure``."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca is not None:
        _load_trust(ctx, ca)
    if cert is not None:
        _load_chain(ctx, cert, key or cert)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx
