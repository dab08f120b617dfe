"""Where servers meet access control: the remoting hooks that check requests before their handlers run,
and the 4.x ACL management codes (the broker rewrites its ACL file; the NameServer's is edited locally).

With neither ``aclEnable`` nor ``authenticationEnabled``/``authorizationEnabled`` on, :func:`make_server`
returns the plain :class:`RemotingServer`, so nothing changes. With plain ACL every request is checked by
:class:`~broker.acl.checker.AclChecker`, with RocketMQ 5's users and ACLs by
:class:`~broker.acl.auth_checker.AuthChecker` over a store of users and ACLs (``auth_store``). A broker
requires every request to be signed, and checks a lookup's answer against the real topics of the records
it found (:mod:`broker.acl.message_reads`); a NameServer requires a signature (or a white-listed broker
host) for brokers' registrations and every write, and leaves route lookups open (:class:`NamesrvHook`).
A refusal is answered ``NO_PERMISSION`` (16) with a remark naming what is missing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from broker.acl import signer
from broker.acl.addresses import host_of, split_patterns
from broker.acl.auth_checker import READ_ACTIONS, AuthChecker, AuthNeed, remoting_needs, topic_resource
from broker.acl.auth_store import Action, AuthStore, Resource, ResourceType
from broker.acl.checker import AclChecker, Denial, Refusal
from broker.acl.config import ACCOUNT_FIELDS, AclConfig, AclConfigError, PlainAccount, account_from_doc
from broker.acl.message_reads import LOOKUP_CODES, QUEUE_READ_CODES, answer_topics, parked_read
from broker.acl.permissions import ADMIN_CODES, BROKER_CODES, NAMESRV_READS, PUB, SUB, AclCode, Need, needs_of
from broker.acl.settings import SecuritySettings
from broker.protocol.codes import ResponseCode, name_of
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.remoting.hooks import GuardedServer
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


class Hook:
    """Runs a handler only when :meth:`refusal` finds nothing wrong with the request, and answers a
    lookup only when the asker may read every topic its records belong to."""

    def refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        raise NotImplementedError

    def topic_refusal(
        self, request: RemotingCommand, remote_addr: str, topics: Collection[str], *, publish: bool = False
    ) -> Refusal | None:
        """Whether the sender of ``request`` may read (or, with ``publish``, send) messages of ``topics``."""
        raise NotImplementedError

    def check(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        field = QUEUE_READ_CODES.get(request.code)
        why = parked_read(request.ext_fields.get(field) or "") if field is not None else None
        return Refusal(Denial.FORBIDDEN, why) if why else self.refusal(request, remote_addr)

    def answer_refusal(
        self, request: RemotingCommand, remote_addr: str, response: RemotingCommand
    ) -> Refusal | None:
        """A lookup's answer: refused unless every record's real topic may be read."""
        if response.code != ResponseCode.SUCCESS or not response.body:
            return None
        topics = answer_topics(response.body)
        if topics is None:
            return Refusal(Denial.FORBIDDEN, "the records found cannot be read back to check their topics")
        return self.topic_refusal(request, remote_addr, sorted(topics))

    def guard(self, code: int, handler: Handler) -> Handler:
        lookup = code in LOOKUP_CODES

        async def run(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand | None:
            refused = self.check(request, channel.remote_addr)
            if refused is None:
                response = await handler(request, channel)
                if not lookup or response is None:
                    return response
                refused = self.answer_refusal(request, channel.remote_addr, response)
                if refused is None:
                    return response
            log.warning("refused %s from %s: %s", name_of(request.code), channel.remote_addr, refused.message)
            return make_response(request, ResponseCode.NO_PERMISSION, refused.message)

        return run


class AclHook(Hook):
    """Checks remoting requests against one plain ACL file."""

    def __init__(self, checker: AclChecker, *, require_signature: bool = True) -> None:
        self.checker = checker
        self.require_signature = require_signature

    def refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        return self._check(request, remote_addr, needs_of(request), request.code in ADMIN_CODES)

    def admin_refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        """The request must come from an admin account."""
        return self._check(request, remote_addr, needs_of(request), True)

    def topic_refusal(
        self, request: RemotingCommand, remote_addr: str, topics: Collection[str], *, publish: bool = False
    ) -> Refusal | None:
        return self._check(request, remote_addr, [Need(t, PUB if publish else SUB) for t in topics], False)

    def _check(
        self, request: RemotingCommand, remote_addr: str, needs: Sequence[Need], admin: bool
    ) -> Refusal | None:
        return self.checker.check(
            host=host_of(remote_addr),
            access_key=request.ext_fields.get(signer.ACCESS_KEY) or None,
            verify=remoting_verifier(request),
            needs=needs,
            admin=admin,
            code=request.code,
            require_signature=self.require_signature,
        )


class AuthHook(Hook):
    """Checks remoting requests against the users and ACL policies of one store."""

    def __init__(self, checker: AuthChecker) -> None:
        self.checker = checker

    def refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        return self._check(request, remote_addr, remoting_needs(request, self.checker.cluster()))

    def admin_refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        """The request must come from a user allowed Cluster Update (a Super user is)."""
        cluster = Resource(ResourceType.CLUSTER, self.checker.cluster())
        return self._check(request, remote_addr, [AuthNeed(cluster, (Action.UPDATE,))])

    def topic_refusal(
        self, request: RemotingCommand, remote_addr: str, topics: Collection[str], *, publish: bool = False
    ) -> Refusal | None:
        actions = (Action.PUB,) if publish else READ_ACTIONS
        return self._check(request, remote_addr, [AuthNeed(topic_resource(t), actions) for t in topics])

    def _check(self, request: RemotingCommand, remote_addr: str, needs: Sequence[AuthNeed]) -> Refusal | None:
        return self.checker.check(
            host=host_of(remote_addr),
            username=request.ext_fields.get(signer.ACCESS_KEY) or None,
            verify=remoting_verifier(request),
            needs=needs,
            codes=(str(request.code),),
        )


class NamesrvHook(Hook):
    """A NameServer's checks: what brokers send about themselves and every write (every code but
    NAMESRV_READS) need a valid signature of an admin account, or a user allowed Cluster Update, or,
    for the brokers' codes, a host on brokerWhiteRemoteAddresses. Route lookups and the other reads stay
    open to unsigned clients, as Apache RocketMQ's are; plain ACL still checks a signature that is given
    (users and policies do not: a lone NameServer knows only its own users)."""

    def __init__(self, inner: AclHook | AuthHook, broker_white: Callable[[str], bool]) -> None:
        self.inner = inner
        self.broker_white = broker_white

    def refusal(self, request: RemotingCommand, remote_addr: str) -> Refusal | None:
        code = request.code
        if code in NAMESRV_READS:
            signed = bool(request.ext_fields.get(signer.ACCESS_KEY))
            checked = signed and isinstance(self.inner, AclHook)
            return self.inner.refusal(request, remote_addr) if checked else None
        host = host_of(remote_addr)
        if code in BROKER_CODES and self.broker_white(host):
            return None
        if not request.ext_fields.get(signer.ACCESS_KEY):
            hint = (
                "; a broker signs it with innerClientAuthenticationCredentials, or its host "
                f"({host}) goes on brokerWhiteRemoteAddresses"
                if code in BROKER_CODES
                else ""
            )
            message = f"{name_of(code)} ({code}) is not signed: no AccessKey given{hint}"
            return Refusal(Denial.UNAUTHENTICATED, message)
        return self.inner.admin_refusal(request, remote_addr)

    def topic_refusal(
        self, request: RemotingCommand, remote_addr: str, topics: Collection[str], *, publish: bool = False
    ) -> Refusal | None:
        return None  # a NameServer holds no messages


def _listening(settings: SecuritySettings, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The server options every remoting port takes from the settings: TLS and the relaxed JSON limit."""
    tls = settings.server_tls()
    kwargs["ssl_context"] = tls.context() if tls is not None else None
    kwargs["lenient_header_limit"] = settings.lenient_header_max_bytes
    return kwargs


def _auth_checker(settings: SecuritySettings, store: AuthStore, cluster: Callable[[], str]) -> AuthChecker:
    return AuthChecker(
        store,
        authentication=settings.authentication_enabled,
        authorization=settings.authorization_enabled,
        whitelists=settings.auth_whitelists(),
        cluster=cluster,
    )


def make_server(
    settings: SecuritySettings,
    host: str,
    port: int,
    *,
    identity: Identity,
    auth_store: AuthStore | None = None,
    **kwargs: Any,
) -> RemotingServer:
    """A broker's remoting server: TLS when tlsEnable, checked when aclEnable or
    authenticationEnabled (the ACL file can then be managed over the wire, codes 50 to 54).

    Raises SettingsError for a bad ACL file or TLS setting.
    """
    options = _listening(settings, kwargs)
    if auth_store is not None and settings.auth_enabled:
        auth = _auth_checker(settings, auth_store, lambda: identity()[0])
        return GuardedServer(AuthHook(auth), host, port, **options)
    checker = settings.acl_checker()
    if checker is None:
        return RemotingServer(host, port, **options)
    server = GuardedServer(AclHook(checker), host, port, **options)
    for code, handler in AclManagement(checker, identity).handlers().items():
        server.register(code, handler)
    return server


def make_namesrv_server(
    settings: SecuritySettings, host: str, port: int, *, auth_store: AuthStore | None = None, **kwargs: Any
) -> RemotingServer:
    """A NameServer's remoting server: TLS when tlsEnable; with aclEnable or authenticationEnabled
    (users and policies of ``auth_store``) checked by :class:`NamesrvHook`."""
    options = _listening(settings, kwargs)
    inner: AclHook | AuthHook | None = None
    if auth_store is not None and settings.auth_enabled:
        inner = AuthHook(_auth_checker(settings, auth_store, lambda: ""))
    else:
        checker = settings.acl_checker()
        inner = AclHook(checker, require_signature=False) if checker is not None else None
    if inner is None:
        return RemotingServer(host, port, **options)
    return GuardedServer(NamesrvHook(inner, settings.broker_white_list()), host, port, **options)


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
