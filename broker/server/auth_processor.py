"""The RocketMQ 5 access-control codes: users (AUTH_CREATE_USER 3001 ... AUTH_LIST_USER 3005) and ACLs
(AUTH_CREATE_ACL 3006 ... AUTH_LIST_ACL 3010), kept by :class:`~broker.acl.auth_store.AuthStore` under
``<store>/config/auth``.

Answers: bad input INVALID_PARAMETER (an existing user on create too), a missing user or subject
USER_NOT_EXIST (3001), a subject without an ACL (or without the entry to delete) POLICY_NOT_EXIST (3002),
each with a remark naming it. Passwords are never answered. With authentication on, only a Super user
may create, change or delete a Super user (as upstream). The processor also creates
``initAuthenticationUser`` and hands the store to the request checks of ``authenticationEnabled`` /
``authorizationEnabled`` (broker/acl/remoting_hook.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from broker.acl import signer
from broker.acl.auth_store import (
    AuthInputError,
    AuthStore,
    PolicyMissing,
    User,
    UserExists,
    UserMissing,
    UserType,
    user_of,
)
from broker.protocol.auth_bodies import (
    AclInfo,
    AclRequestHeader,
    DeleteAclRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UserInfo,
    UserRequestHeader,
)
from broker.protocol.bodies import JsonBody
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.config import BrokerConfig

log = logging.getLogger(__name__)

_ERROR_CODES: tuple[tuple[type[Exception], int], ...] = (
    (UserMissing, ResponseCode.USER_NOT_EXIST),
    (PolicyMissing, ResponseCode.POLICY_NOT_EXIST),
    (AuthInputError, ResponseCode.INVALID_PARAMETER),
    (UserExists, ResponseCode.INVALID_PARAMETER),
)


class SuperOnly(PermissionError):
    """A Normal user tried to create, change or delete a Super user."""


def json_list(items: list[JsonBody]) -> bytes:
    return b"[" + b",".join(item.to_json() for item in items) + b"]"


class AuthProcessor:
    def __init__(self, config: BrokerConfig, config_dir: Path, store: AuthStore | None = None) -> None:
        """``store``: users and ACLs shared with a NameServer in the same process, else the broker's
        (in ``config_dir``)."""
        self.config = config
        self._config_dir = config_dir
        self._store = store

    @property
    def store(self) -> AuthStore:
        """The users and ACLs, read on first use (when the broker starts its server)."""
        if self._store is None:
            self._store = self.config.auth_store(self._config_dir)
        return self._store

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.AUTH_CREATE_USER: self.create_user,
            RequestCode.AUTH_UPDATE_USER: self.update_user,
            RequestCode.AUTH_DELETE_USER: self.delete_user,
            RequestCode.AUTH_GET_USER: self.get_user,
            RequestCode.AUTH_LIST_USER: self.list_users,
            RequestCode.AUTH_CREATE_ACL: self.put_acl,
            RequestCode.AUTH_UPDATE_ACL: self.put_acl,
            RequestCode.AUTH_DELETE_ACL: self.delete_acl,
            RequestCode.AUTH_GET_ACL: self.get_acl,
            RequestCode.AUTH_LIST_ACL: self.list_acls,
        }

    def _answer(self, request: RemotingCommand, work: Callable[[], bytes | None]) -> RemotingCommand:
        """Run ``work`` (the store is changed on the event loop, so changes never interleave) and map
        its errors to response codes."""
        try:
            body = work()
        except SuperOnly as exc:
            return make_response(request, ResponseCode.NO_PERMISSION, str(exc))
        except OSError as exc:
            self.store.reload()  # the files are the truth: drop the change that was not written
            log.error("cannot write the users and ACLs in %s: %s", self.store.dir, exc)
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, f"cannot write the users and ACLs: {exc.strerror}"
            )
        except (UserMissing, PolicyMissing, AuthInputError, UserExists) as exc:
            code = next(c for kind, c in _ERROR_CODES if isinstance(exc, kind))
            return make_response(request, code, str(exc.args[0]))
        return make_response(request, body=body)

    def _guard_super(self, request: RemotingCommand, *users: User | None) -> None:
        """Upstream: with authentication on, a Super user is created, changed or deleted by a Super
        user only (the AccessKey is then a verified username)."""
        if not self.config.authentication_enabled:
            return
        caller = request.ext_fields.get(signer.ACCESS_KEY, "")
        if any(u is not None and u.user_type is UserType.SUPER for u in users) and not self.store.is_super(
            caller
        ):
            raise SuperOnly(
                f"user {caller or '(none)'} is not a Super user: only Super users may manage Super users"
            )

    # == users ==================================================================================
    async def create_user(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = UserRequestHeader.parse(request.ext_fields)
        info = UserInfo.from_json(request.body or b"{}")

        def work() -> None:
            user = user_of(info, header.username, creating=True)
            self._guard_super(request, user)
            self.store.create_user(user)
            log.info("user %s created (%s)", user.username, user.user_type.value)

        return self._answer(request, work)

    async def update_user(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = UserRequestHeader.parse(request.ext_fields)
        info = UserInfo.from_json(request.body or b"{}")

        def work() -> None:
            old = self.store.user(header.username)
            self._guard_super(
                request, old, user_of(info, header.username, creating=False) if info.userType else None
            )
            new = self.store.update_user(header.username, info)
            log.info("user %s updated (%s, %s)", new.username, new.user_type.value, new.user_status.value)

        return self._answer(request, work)

    async def delete_user(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = UserRequestHeader.parse(request.ext_fields)

        def work() -> None:
            self._guard_super(request, self.store.user(header.username))
            self.store.delete_user(header.username)
            log.info("user %s deleted with its ACL", header.username)

        return self._answer(request, work)

    async def get_user(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = UserRequestHeader.parse(request.ext_fields)
        return self._answer(request, lambda: self.store.user(header.username).info().to_json())

    async def list_users(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = ListUsersRequestHeader.parse(request.ext_fields)
        return self._answer(
            request, lambda: json_list([u.info() for u in self.store.list_users(header.filter)])
        )

    # == ACLs ===================================================================================
    async def put_acl(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """AUTH_CREATE_ACL and AUTH_UPDATE_ACL: as upstream, both merge the policies into the subject's
        ACL (an entry replaces the one of the same resource), creating it when there is none."""
        header = AclRequestHeader.parse(request.ext_fields)
        info = AclInfo.from_json(request.body or b"{}")

        def work() -> None:
            acl = self.store.put_acl(header.subject, info)
            log.info(
                "ACL of %s written (%d entries)",
                acl.subject,
                sum(len(p.entries) for p in acl.policies.values()),
            )

        return self._answer(request, work)

    async def delete_acl(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = DeleteAclRequestHeader.parse(request.ext_fields)

        def work() -> None:
            self.store.delete_acl(header.subject, header.policyType, header.resource)
            log.info("ACL of %s deleted (%s)", header.subject, header.resource or "all of it")

        return self._answer(request, work)

    async def get_acl(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = AclRequestHeader.parse(request.ext_fields)
        return self._answer(request, lambda: self.store.acl(header.subject).info().to_json())

    async def list_acls(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = ListAclsRequestHeader.parse(request.ext_fields)
        return self._answer(
            request,
            lambda: json_list(list(self.store.list_acls(header.subjectFilter, header.resourceFilter))),
        )
