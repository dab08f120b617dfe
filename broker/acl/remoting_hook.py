"""Where servers meet access control: the remoting hooks that check requests before their handlers run,
and the 4.x ACL management codes (the broker rewrites its ACL file; the NameServer's is edited locally).

With neither ``aclEnable`` nor ``authenticationEnabled``/``authorizationEnabled`` on, :func:`make_server`
returns the plain :class:`RemotingServer`, so nothing changes. With plain ACL every request is checked by
:class:`~broker.acl.checker.AclChecker`; the broker requires every request to be signed, the NameServer
only admin codes (and checks any signature it is given), so brokers register and clients ask for routes
as before. With RocketMQ 5's users and ACLs (brokers only, as upstream) requests are checked by
:class:`~broker.acl.auth_checker.AuthChecker` over the broker's users and ACLs (``auth_store``).
A refusal is answered ``NO_PERMISSION`` (16) with a remark naming what is missing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.acl import signer
from broker.acl.addresses import host_of, split_patterns
from broker.acl.auth_checker import AuthChecker, remoting_needs
from broker.acl.auth_store import AuthStore
from broker.acl.checker import AclChecker, Refusal
from broker.acl.config import ACCOUNT_FIELDS, AclConfig, AclConfigError, PlainAccount, account_from_doc
from broker.acl.permissions import ADMIN_CODES, AclCode, needs_of
from broker.acl.settings import SecuritySettings
from broker.protocol.codes import ResponseCode
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.remoting.hooks import GuardedServer, Hook
from broker.remoting.server import RemotingServer

log = logging.getLogger(__name__)

Identity = Callable[[], tuple[str, str, str]]
"""(cluster name, broker name, broker address) for GET_BROKER_CLUSTER_ACL_INFO."""


def remoting_verifier(request: RemotingCommand) -> Callable[[str], bool]:
    """``verify(secret)``: whether the request's Signature is the one ``secret`` makes."""
    fields = request.ext_fields
    given = fields.get(signer.SIGNATURE)

    def verify(secret: str) -> bool:
        expected = signer.hmac_base64(signer.remoting_content(fields, request.body), secret)
        return signer.same(expected, given)

    return verify


class AclHook(Hook):
    """Checks remoting requests against one plain ACL file."""

    def __init__(self, checker: AclChecker, *, require_signature: bool = True) -> None:
        self.checker = checker
        self.require_signature = require_signature

    def refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        return self.checker.check(
            host=host_of(remote_addr),
            access_key=request.ext_fields.get(signer.ACCESS_KEY) or None,
            verify=remoting_verifier(request),
            needs=needs_of(request),
            admin=request.code in ADMIN_CODES,
            code=request.code,
            require_signature=self.require_signature,
        )


class AuthHook(Hook):
    """Checks remoting requests against the broker's users and ACL policies."""

    def __init__(self, checker: AuthChecker) -> None:
        self.checker = checker

    def refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        return self.checker.check(
            host=host_of(remote_addr),
            username=request.ext_fields.get(signer.ACCESS_KEY) or None,
            verify=remoting_verifier(request),
            needs=remoting_needs(request, self.checker.cluster()),
            codes=(str(request.code),),
        )


def make_server(
    settings: SecuritySettings,
    host: str,
    port: int,
    *,
    require_signature: bool = True,
    identity: Identity | None = None,
    auth_store: AuthStore | None = None,
    **kwargs: Any,
) -> RemotingServer:
    """The remoting server of ``settings``: TLS when tlsEnable, checked when aclEnable or, on brokers
    (``identity`` given), authenticationEnabled/authorizationEnabled.

    With ``identity`` (brokers) the ACL file can be managed over the wire (codes 50 to 54).
    Raises SettingsError for a bad ACL file or TLS setting.
    """
    tls = settings.server_tls()
    ssl_context = tls.context() if tls is not None else None
    if auth_store is not None and identity is not None and settings.auth_enabled:
        auth = AuthChecker(
            auth_store,
            authentication=settings.authentication_enabled,
            authorization=settings.authorization_enabled,
            whitelists=settings.auth_whitelists(),
            cluster=lambda: identity()[0],
        )
        return GuardedServer(AuthHook(auth), host, port, ssl_context=ssl_context, **kwargs)
    checker = settings.acl_checker()
    if checker is None:
        return RemotingServer(host, port, ssl_context=ssl_context, **kwargs)
    server = GuardedServer(
        AclHook(checker, require_signature=require_signature), host, port, ssl_context=ssl_context, **kwargs
    )
    if identity is not None:
        for code, handler in AclManagement(checker, identity).handlers().items():
            server.register(code, handler)
    return server


def public_doc(account: PlainAccount) -> dict[str, Any]:
    """An account as upstream's PlainAccessConfig JSON, without its secret."""
    doc = account.to_doc()
    doc.pop("secretKey")
    return doc


class AclManagement:
    """UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG and
    GET_BROKER_CLUSTER_ACL_INFO/_CONFIG."""

    def __init__(self, checker: AclChecker, identity: Identity) -> None:
        self.checker = checker
        self.identity = identity

    def handlers(self) -> dict[int, Handler]:
        return {
            AclCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update,
            AclCode.DELETE_ACL_CONFIG: self.delete,
            AclCode.GET_BROKER_CLUSTER_ACL_INFO: self.info,
            AclCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.global_white,
            AclCode.GET_BROKER_CLUSTER_ACL_CONFIG: self.config,
        }

    def _change(self, request: RemotingCommand, change: Callable[[AclConfig], None]) -> RemotingCommand:
        try:
            self.checker.update(change)
        except AclConfigError as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, str(exc))
        except KeyError as exc:
            return make_response(request, ResponseCode.QUERY_NOT_FOUND, str(exc.args[0]))
        except OSError as exc:
            message = f"cannot write the ACL file: {exc.strerror}"
            return make_response(request, ResponseCode.SYSTEM_ERROR, message)
        return make_response(request)

    async def update(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        fields = {k: v for k, v in request.ext_fields.items() if k in ACCOUNT_FIELDS}
        key = fields.get("accessKey", "")

        def change(config: AclConfig) -> None:
            old = config.accounts.get(key)
            doc: dict[str, Any] = old.to_doc() if old is not None else {}
            doc.update(fields)  # updateAclConfig changes only the fields it names
            config.accounts[key] = account_from_doc(doc)

        return self._change(request, change)

    async def delete(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        key = request.ext_fields.get("accessKey", "")

        def change(config: AclConfig) -> None:
            if config.accounts.pop(key, None) is None:
                raise KeyError(f"no ACL account for AccessKey {key}")

        return self._change(request, change)

    async def global_white(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """Replace globalWhiteRemoteAddresses (``globalWhiteAddrs``, comma-separated; empty clears)."""
        fields = request.ext_fields
        addresses = fields.get("globalWhiteAddrs")
        if addresses is None:
            return make_response(
                request, ResponseCode.INVALID_PARAMETER, "the globalWhiteAddrs field is missing"
            )
        target = fields.get("aclFileFullPath") or ""  # upstream may keep several files; we keep one
        if target and Path(target).resolve() != self.checker.path.resolve():
            message = f"aclFileFullPath {target} is not this broker's ACL file ({self.checker.path})"
            return make_response(request, ResponseCode.INVALID_PARAMETER, message)

        def change(config: AclConfig) -> None:
            config.global_white_addresses = split_patterns(addresses)

        return self._change(request, change)

    async def info(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        cluster, name, addr = self.identity()
        version = self.checker.data_version.to_doc()
        compact = (",", ":")  # as fastjson writes upstream's DataVersion
        response = make_response(request)
        response.ext_fields = {
            "version": json.dumps(version, separators=compact),
            "allAclFileVersion": json.dumps({str(self.checker.path.resolve()): version}, separators=compact),
            "brokerName": name,
            "brokerAddr": addr,
            "clusterName": cluster,
        }
        return response

    async def config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        try:
            current = self.checker.config()
        except (OSError, AclConfigError) as exc:
            return make_response(request, ResponseCode.SYSTEM_ERROR, f"cannot read the ACL file: {exc}")
        body = {
            "globalWhiteAddrs": current.global_white_addresses,
            "plainAccessConfigs": [public_doc(a) for a in current.accounts.values()],
        }
        return make_response(request, body=json.dumps(body).encode())
