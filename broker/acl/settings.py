"""The ACL and TLS settings the broker and the NameServer share (mixed into their config classes).

``aclEnable=true`` with ``aclFile=PATH`` turns access control on; ``tlsEnable=true`` with
``tlsCertPath`` and ``tlsKeyPath`` serves TLS only on the remoting and gRPC ports (no plain-text
fallback), ``tlsTrustCertPath`` with ``tlsClientAuth=optional|require`` asks for client certificates.
With tlsEnable a broker also opens its own connections (NameServer registration, slave to master)
over TLS, presenting its certificate; ``tlsClientTrustCertPath`` verifies the far end, which is
otherwise not verified (RocketMQ's default). None of these can change at runtime.

RocketMQ 5's access control (brokers only; not with aclEnable): ``authenticationEnabled`` requires every
request to be signed by an enabled user (username as AccessKey, password as SecretKey),
``authorizationEnabled`` requires Normal users to hold a policy allowing what a request does.
``initAuthenticationUser`` (JSON ``{"username": ..., "password": ...}``) is a Super user created at the
first start; ``authenticationWhitelist`` / ``authorizationWhitelist`` list request codes (or gRPC method
names), comma-separated, that skip the check. ``innerClientAuthenticationCredentials`` (JSON
``{"accessKey": ..., "secretKey": ...}``) signs the requests a broker sends to other brokers (a slave's
metadata sync from its master), whatever this broker's own checks are. ``authorizationEnabled`` needs
``authenticationEnabled``: without it anyone could claim any user.

``brokerWhiteRemoteAddresses`` (patterns as in ACL files, comma-separated) names the hosts of the
cluster's brokers: a NameServer with access control lets them register, unregister and heartbeat
unsigned (brokers that cannot sign, such as Apache RocketMQ's), and a master lets them replicate from its
HA port; ``haTlsEnable`` serves that port over TLS with the tls* files (and a slave connects to it so),
so that with ``tlsClientAuth=require`` only slaves holding a trusted certificate replicate, from any
host. ``lenientHeaderMaxBytes`` caps the remoting JSON headers read by the tolerant reader of
fastjson's relaxed forms (standard JSON headers are not affected); a longer one closes the connection.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from broker.acl.addresses import AddressPatternError, Matcher, compile_pattern, split_patterns
from broker.acl.tls import ServerTls, TlsConfigError, client_context
from broker.protocol.remoting import LENIENT_HEADER_LIMIT
from broker.settings import SettingsError

if TYPE_CHECKING:
    import ssl

    from broker.acl.auth_store import AuthStore, User
    from broker.acl.checker import AclChecker
    from broker.acl.client import ClientSecurity
    from broker.acl.signer import Credentials

log = logging.getLogger(__name__)

# settings holding a password or secret key: never answered by GET_BROKER_CONFIG
SECRET_SETTINGS = frozenset({"initAuthenticationUser", "innerClientAuthenticationCredentials"})


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
    authentication_enabled: bool = False
    authorization_enabled: bool = False
    init_authentication_user: str = ""
    authentication_whitelist: str = ""
    authorization_whitelist: str = ""
    inner_client_authentication_credentials: str = ""
    broker_white_remote_addresses: str = ""
    lenient_header_max_bytes: int = LENIENT_HEADER_LIMIT
    # a broker's HA port over TLS with the tls* files (rmqkit only: Apache RocketMQ's is plain TCP);
    # with tlsClientAuth=require only a slave with a trusted certificate gets a byte
    ha_tls_enable: bool = False

    def validate_security(self) -> None:
        if self.acl_enable and (self.authentication_enabled or self.authorization_enabled):
            on = "authenticationEnabled" if self.authentication_enabled else "authorizationEnabled"
            raise SettingsError(
                f"settings aclEnable and {on}: choose one access control, plain ACL (aclEnable, aclFile) "
                "or users and ACL policies (authenticationEnabled, authorizationEnabled)"
            )
        if self.acl_enable and self.acl_file is None:
            raise SettingsError("setting aclEnable: true needs aclFile (the plain ACL file)")
        if self.authorization_enabled and not self.authentication_enabled:
            raise SettingsError(
                "setting authorizationEnabled: true needs authenticationEnabled: true, or any client could "
                "act as any user it names"
            )
        if self.lenient_header_max_bytes < 0:
            raise SettingsError(f"setting lenientHeaderMaxBytes: {self.lenient_header_max_bytes} is negative")
        if self.ha_tls_enable and not self.tls_enable:
            raise SettingsError(
                "setting haTlsEnable: true needs tlsEnable: true (the HA port uses the broker's tls* files)"
            )
        self.broker_white_list()
        self.init_user()
        self.inner_credentials()
        if self.tls_enable:
            try:
                self.server_tls()
                self.outbound_tls()
            except TlsConfigError as exc:
                raise SettingsError(f"setting tlsEnable: {exc}") from None

    @property
    def auth_enabled(self) -> bool:
        return self.authentication_enabled or self.authorization_enabled

    @property
    def access_control(self) -> bool:
        """Plain ACL or users and ACL policies is on."""
        return self.acl_enable or self.auth_enabled

    def broker_white_list(self) -> Matcher:
        """Whether a host is on brokerWhiteRemoteAddresses (raises SettingsError for a bad pattern)."""
        try:
            matchers = [compile_pattern(p) for p in split_patterns(self.broker_white_remote_addresses)]
        except AddressPatternError as exc:
            raise SettingsError(f"setting brokerWhiteRemoteAddresses: {exc}") from None
        return lambda host: any(match(host) for match in matchers)

    def copy_security_to(self, other: SecuritySettings) -> None:
        """Give ``other`` (the NameServer of ``rmq up``) these access, TLS and hardening settings."""
        for f in dataclasses.fields(SecuritySettings):
            setattr(other, f.name, getattr(self, f.name))

    def own_credentials(self) -> Credentials | None:
        """What a lone node (``rmq up``) may sign its broker's requests with when
        innerClientAuthenticationCredentials is unset: plain ACL's first admin account, or the Super
        user of initAuthenticationUser."""
        if self.acl_enable:
            from broker.acl.signer import Credentials

            checker = self.acl_checker()
            admins = [a for a in checker.config().accounts.values() if a.admin] if checker else []
            return Credentials(admins[0].access_key, admins[0].secret_key) if admins else None
        user = self.init_user() if self.authentication_enabled else None
        if user is None:
            return None
        from broker.acl.signer import Credentials

        return Credentials(user.username, user.password)

    def init_user(self) -> User | None:
        """The Super user of initAuthenticationUser (raises SettingsError for a bad value)."""
        text = self.init_authentication_user.strip()
        if not text:
            return None
        from broker.acl.auth_store import AuthInputError, User, UserType, check_name

        what = 'setting initAuthenticationUser: expected {"username": "...", "password": "..."}'
        try:
            doc = json.loads(text)
        except ValueError:
            raise SettingsError(f"{what}, not valid JSON") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("username"), str):
            raise SettingsError(f"{what}, the username is missing")
        password = doc.get("password")
        if not isinstance(password, str) or not password.strip():
            raise SettingsError(f"{what}, the password of {doc['username']} is missing")
        try:
            return User(check_name(doc["username"], "username"), password, UserType.SUPER)
        except AuthInputError as exc:
            raise SettingsError(f"setting initAuthenticationUser: {exc}") from None

    def inner_credentials(self) -> Credentials | None:
        """What this broker signs its requests to other brokers with (raises SettingsError for a bad
        innerClientAuthenticationCredentials)."""
        text = self.inner_client_authentication_credentials.strip()
        if not text:
            return None
        from broker.acl.signer import Credentials

        what = (
            'setting innerClientAuthenticationCredentials: expected {"accessKey": "...", "secretKey": "..."}'
        )
        try:
            doc = json.loads(text)
        except ValueError:
            raise SettingsError(f"{what}, not valid JSON") from None
        if not isinstance(doc, dict):
            raise SettingsError(f"{what}, not a JSON object")
        access_key, secret_key = doc.get("accessKey"), doc.get("secretKey")
        if not isinstance(access_key, str) or not access_key.strip():
            raise SettingsError(f"{what}, the accessKey is missing")
        if not isinstance(secret_key, str) or not secret_key.strip():
            raise SettingsError(f"{what}, the secretKey of {access_key} is missing")
        return Credentials(access_key.strip(), secret_key)

    def inner_user(self) -> User | None:
        """The Super user behind innerClientAuthenticationCredentials, created where missing (as
        RocketMQ does), so a pair of brokers given the same credentials accept each other."""
        credentials = self.inner_credentials()
        if credentials is None:
            return None
        from broker.acl.auth_store import AuthInputError, User, UserType, check_name

        try:
            name = check_name(credentials.access_key, "accessKey")
        except AuthInputError as exc:
            raise SettingsError(f"setting innerClientAuthenticationCredentials: {exc}") from None
        return User(name, credentials.secret_key, UserType.SUPER)

    def auth_store(self, config_dir: Path) -> AuthStore:
        """The users and ACLs kept under ``config_dir/auth``, with the Super users of
        initAuthenticationUser and innerClientAuthenticationCredentials created where missing
        (raises SettingsError when they cannot be read)."""
        from broker.acl.auth_store import AuthInputError, AuthStore

        try:
            store = AuthStore(config_dir)
            for initial in (self.init_user(), self.inner_user()):
                if initial is not None and store.ensure_user(initial):
                    log.info("created the initial Super user %s", initial.username)
        except AuthInputError as exc:
            raise SettingsError(f"the users and ACLs cannot be read: {exc}") from None
        return store

    def inner_client_security(self) -> ClientSecurity:
        """How this broker's own clients connect to other brokers: signed with the inner credentials,
        over TLS when tlsEnable is on."""
        from broker.acl.client import ClientSecurity

        return ClientSecurity(self.inner_credentials(), self.outbound_tls())

    def auth_whitelists(self) -> tuple[frozenset[str], frozenset[str]]:
        """The request codes (or gRPC method names) exempt from authentication and from authorization."""
        return _names(self.authentication_whitelist), _names(self.authorization_whitelist)

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


def _names(text: str) -> frozenset[str]:
    return frozenset(item.strip() for item in text.split(",") if item.strip())
