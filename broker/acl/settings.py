"""The ACL and TLS settings the broker and the NameServer share (mixed into their config classes).

``aclEnable=true`` with ``aclFile=PATH`` turns access control on; ``tlsEnable=true`` with
``tlsCertPath`` and ``tlsKeyPath`` serves TLS only on the remoting and gRPC ports (no plain-text
fallback), ``tlsTrustCertPath`` with ``tlsClientAuth=optional|require`` asks for client certificates.
With tlsEnable a broker also opens its own connections (NameServer registration, slave to master)
over TLS, presenting its certificate; ``tlsClientTrustCertPath`` verifies the far end, which is
otherwise not verified (RocketMQ's default). None of these can change at runtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from broker.acl.tls import ServerTls, TlsConfigError, client_context
from broker.settings import SettingsError

if TYPE_CHECKING:
    import ssl

    from broker.acl.checker import AclChecker


@dataclass(slots=True)
class SecuritySettings:
    acl_enable: bool = False
    acl_file: Path | None = None
    tls_enable: bool = False
    tls_cert_path: Path | None = None
    tls_key_path: Path | None = None
    tls_trust_cert_path: Path | None = None
    tls_client_auth: str = "none"
    tls_client_trust_cert_path: Path | None = None

    def validate_security(self) -> None:
        if self.acl_enable and self.acl_file is None:
            raise SettingsError("setting aclEnable: true needs aclFile (the plain ACL file)")
        if self.tls_enable:
            try:
                self.server_tls()
                self.outbound_tls()
            except TlsConfigError as exc:
                raise SettingsError(f"setting tlsEnable: {exc}") from None

    def outbound_tls(self) -> ssl.SSLContext | None:
        """The TLS context of connections this server opens, when tlsEnable is on."""
        if not self.tls_enable:
            return None
        trust = self.tls_client_trust_cert_path
        return client_context(trust, self.tls_cert_path, self.tls_key_path, insecure=trust is None)

    def server_tls(self) -> ServerTls | None:
        """The TLS settings when tlsEnable is on."""
        if not self.tls_enable:
            return None
        if self.tls_cert_path is None or self.tls_key_path is None:
            raise TlsConfigError("tlsEnable needs tlsCertPath and tlsKeyPath")
        return ServerTls(
            self.tls_cert_path, self.tls_key_path, self.tls_trust_cert_path, self.tls_client_auth.lower()
        )

    def acl_checker(self) -> AclChecker | None:
        """The checker of aclFile when aclEnable is on (raises SettingsError for a bad file)."""
        if not self.acl_enable or self.acl_file is None:
            return None
        from broker.acl.checker import AclChecker
        from broker.acl.config import AclConfigError

        try:
            return AclChecker(self.acl_file)
        except OSError as exc:
            raise SettingsError(f"setting aclFile: cannot read {self.acl_file}: {exc.strerror}") from None
        except AclConfigError as exc:
            raise SettingsError(f"setting aclFile: {exc}") from None
