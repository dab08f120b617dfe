"""RocketMQ 5 access control: users (AUTH_CREATE_USER 3001 .. AUTH_LIST_USER 3005) and the ACL policies
of subjects (AUTH_CREATE_ACL 3006 .. AUTH_LIST_ACL 3010), what 5.x mqadmin's createUser .. copyAcl send.
Reads ask one broker (``-b``) or the masters of a cluster; writes go to one broker or to every broker of
the cluster, slaves included, as upstream writes them (each broker keeps its own users and ACLs).

Input is checked before anything is sent, by the rules the brokers apply (broker.acl.auth_store), and
sent with upstream's spelling of each name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from admin.errors import BadInput, NotFound, OperationFailed
from admin.service.base import ServiceBase, admin_call, gather
from broker.client.admin_api import RemoteError

if TYPE_CHECKING:
    from admin.models.auth import (
        AclChange,
        AclSpec,
        AuthAcl,
        AuthUser,
        BrokerAcls,
        BrokerUsers,
        CopyResult,
        UserChange,
        UserSpec,
    )
    from broker.protocol.auth_bodies import AclInfo, UserInfo
    from broker.protocol.bodies import JsonBody
    from broker.protocol.headers import CommandHeader
    from broker.protocol.remoting import RemotingCommand

B = TypeVar("B", bound="JsonBody")


def split_list(values: Iterable[str] | None) -> list[str]:
    """Comma-separated and/or repeated values, trimmed, empty ones dropped."""
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]


def subject_key(text: str) -> str:
    """``User:NAME``; a bare NAME is a user's."""
    from broker.acl.auth_store import AuthInputError, parse_subject

    text = text.strip()
    try:
        return "User:" + parse_subject(text if ":" in text else "User:" + text)
    except AuthInputError as exc:
        raise BadInput(str(exc)) from None


def resource_key(text: str) -> str:
    """``*`` or ``TYPE:NAME`` (NAME ``*``: every one, ``PREFIX*``: a prefix) in upstream's spelling."""
    from broker.acl.auth_store import AuthInputError, Resource

    try:
        return Resource.parse(text).key
    except AuthInputError as exc:
        raise BadInput(str(exc)) from None


def user_spec(
    username: str,
    password: str | None = None,
    user_type: str | None = None,
    user_status: str | None = None,
    *,
    create: bool,
) -> UserSpec:
    """A checked user: a name, and for ``create`` a password; what is not given stays None."""
    from admin.models.auth import UserSpec
    from broker.acl.auth_store import AuthInputError, user_of
    from broker.protocol.auth_bodies import UserInfo

    if not create and password is None and user_type is None and user_status is None:
        raise BadInput("nothing to change: give a password, a user type or a user status")
    try:
        user = user_of(UserInfo(username, password, user_type, user_status), username, creating=create)
    except AuthInputError as exc:
        raise BadInput(str(exc)) from None
    return UserSpec(
        user.username,
        password,
        None if user_type is None else user.user_type.value,
        None if user_status is None else user.user_status.value,
    )


def acl_spec(
    subject: str,
    resources: Sequence[str],
    actions: Sequence[str],
    decision: str,
    source_ips: Sequence[str] = (),
) -> AclSpec:
    """A checked policy: at least one resource, each with these actions, source IPs and decision."""
    from admin.models.auth import AclSpec
    from broker.acl.auth_store import AuthInputError, PolicyEntry
    from broker.protocol.auth_bodies import PolicyEntryInfo

    if not resources:
        raise BadInput("give at least one resource (e.g. Topic:Orders)")
    try:
        entries = [
            PolicyEntry.of(PolicyEntryInfo(r, list(actions), list(source_ips) or None, decision)).info()
            for r in resources
        ]
    except AuthInputError as exc:
        raise BadInput(str(exc)) from None
    first = entries[0]
    return AclSpec(
        subject_key(subject),
        [e.resource or "" for e in entries],
        list(first.actions or []),
        first.decision or "",
        list(first.sourceIps or []),
    )


# == wire ======================================================================================
def _user_info(spec: UserSpec) -> UserInfo:
    from broker.protocol.auth_bodies import UserInfo

    return UserInfo(spec.username, spec.password, spec.user_type, spec.user_status)


def _acl_info(spec: AclSpec) -> AclInfo:
    from broker.protocol.auth_bodies import AclInfo, PolicyEntryInfo, PolicyInfo

    entries = [
        PolicyEntryInfo(r, list(spec.actions), list(spec.source_ips) or None, spec.decision)
        for r in spec.resources
    ]
    return AclInfo(spec.subject, [PolicyInfo(entries=entries)])


def _user_of(info: UserInfo) -> AuthUser:
    from admin.models.auth import AuthUser

    return AuthUser(info.username or "", info.userType, info.userStatus)


def _acl_of(info: AclInfo) -> AuthAcl:
    from admin.models.auth import AuthAcl, AuthPolicy, AuthPolicyEntry

    policies = [
        AuthPolicy(
            p.policyType,
            [
                AuthPolicyEntry(
                    e.resource or "", list(e.actions or []), list(e.sourceIps or []), e.decision or ""
                )
                for e in p.entries or []
            ],
        )
        for p in info.policies or []
    ]
    return AuthAcl(info.subject or "", policies)


def _list_body(response: RemotingCommand) -> list[object]:
    """A JSON list answer; brokers send no body when the list is empty."""
    from broker.protocol.bodies import BodyError, load_json

    if not response.body:
        return []
    doc = load_json(response.body, "the list")
    if not isinstance(doc, list):
        raise BodyError(f"the list is not a JSON array: {response.body[:60]!r}")
    return doc


class AuthOps(ServiceBase):
    async def _auth(
        self, name: str, addr: str, code: int, header: CommandHeader, body: bytes | None = None
    ) -> RemotingCommand:
        """One access-control request; a broker without these codes, or that names something missing,
        is reported as such."""
        from broker.protocol.codes import ResponseCode

        try:
            return await self.api.call(addr, code, header, body=body)
        except RemoteError as exc:
            if exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                raise OperationFailed(
                    f"broker {name} ({addr}) does not serve RocketMQ 5 access control (users and ACLs)"
                ) from None
            if exc.code in (ResponseCode.USER_NOT_EXIST, ResponseCode.POLICY_NOT_EXIST):
                raise NotFound(f"{exc.remark or 'not found'} (from {addr})") from None
            raise

    async def _write(self, cluster: str | None, broker: str | None, code: int, header: CommandHeader,
                     body: bytes | None = None) -> list[str]:  # fmt: skip
        targets = await self._write_members(cluster, broker)
        await gather(self._auth(name, addr, code, header, body) for name, addr in targets)
        return [addr for _, addr in targets]

    async def _get(self, addr: str, code: int, header: CommandHeader, cls: type[B]) -> B | None:
        """AUTH_GET_USER or AUTH_GET_ACL: None when the broker has no such user or ACL (rmqkit answers
        USER_NOT_EXIST or POLICY_NOT_EXIST, RocketMQ an empty body)."""
        try:
            response = await self._auth(addr, addr, code, header)
        except NotFound:
            return None
        return cls.from_json(response.body) if response.body else None

    async def _user_info(self, addr: str, username: str) -> UserInfo | None:
        from broker.protocol.auth_bodies import UserInfo, UserRequestHeader
        from broker.protocol.codes import RequestCode

        return await self._get(
            addr, RequestCode.AUTH_GET_USER, UserRequestHeader(username=username), UserInfo
        )

    async def _acl_info(self, addr: str, subject: str) -> AclInfo | None:
        from broker.protocol.auth_bodies import AclInfo, AclRequestHeader
        from broker.protocol.codes import RequestCode

        return await self._get(addr, RequestCode.AUTH_GET_ACL, AclRequestHeader(subject=subject), AclInfo)

    # -- users ----------------------------------------------------------------------------------
    @admin_call
    async def auth_users(
        self, cluster: str | None = None, broker: str | None = None, name_filter: str | None = None
    ) -> list[BrokerUsers]:
        """The users of each target broker (AUTH_LIST_USER), optionally those whose name holds
        ``name_filter``."""
        from admin.models.auth import BrokerUsers
        from broker.protocol.auth_bodies import ListUsersRequestHeader, UserInfo
        from broker.protocol.codes import RequestCode

        header = ListUsersRequestHeader(filter=name_filter or None)

        async def one(name: str, addr: str) -> BrokerUsers:
            response = await self._auth(name, addr, RequestCode.AUTH_LIST_USER, header)
            return BrokerUsers(name, addr, [_user_of(UserInfo.from_obj(d)) for d in _list_body(response)])

        return await gather(one(n, a) for n, a in (await self._broker_targets(cluster, broker)).items())

    @admin_call
    async def auth_user(
        self, username: str, cluster: str | None = None, broker: str | None = None
    ) -> list[BrokerUsers]:
        """One user on each target broker (AUTH_GET_USER): a list of one, or empty where it is not."""
        from admin.models.auth import BrokerUsers

        async def one(name: str, addr: str) -> BrokerUsers:
            info = await self._user_info(addr, username)
            return BrokerUsers(name, addr, [] if info is None else [_user_of(info)])

        return await gather(one(n, a) for n, a in (await self._broker_targets(cluster, broker)).items())

    @admin_call
    async def auth_user_put(
        self, spec: UserSpec, cluster: str | None = None, broker: str | None = None, *, create: bool
    ) -> UserChange:
        """Create (``create``) or update a user on every target broker."""
        from admin.models.auth import UserChange
        from broker.protocol.auth_bodies import UserRequestHeader
        from broker.protocol.codes import RequestCode

        code = RequestCode.AUTH_CREATE_USER if create else RequestCode.AUTH_UPDATE_USER
        header = UserRequestHeader(username=spec.username)
        targets = await self._write(cluster, broker, code, header, _user_info(spec).to_json())
        return UserChange(spec.username, "created" if create else "updated", targets)

    @admin_call
    async def auth_user_delete(
        self,
        username: str,
        cluster: str | None = None,
        broker: str | None = None,
    ) -> UserChange:
        """Delete a user (and its ACL) on every target broker."""
        from admin.models.auth import UserChange
        from broker.protocol.auth_bodies import UserRequestHeader
        from broker.protocol.codes import RequestCode

        header = UserRequestHeader(username=username)
        targets = await self._write(cluster, broker, RequestCode.AUTH_DELETE_USER, header)
        return UserChange(username, "deleted", targets)

    @admin_call
    async def auth_users_copy(self, source: str, target: str, usernames: Sequence[str] = ()) -> CopyResult:
        """Copy users (all, or those named) from broker ``source`` to broker ``target``: created where
        new, updated where the target has them (copyUser). A user that is new on the target needs its
        password, which only a broker that sends passwords back gives."""
        from admin.models.auth import CopyResult
        from broker.protocol.auth_bodies import ListUsersRequestHeader, UserInfo, UserRequestHeader
        from broker.protocol.codes import RequestCode

        infos: list[UserInfo] = []
        if usernames:
            found = [await self._user_info(source, username) for username in usernames]
            infos = [info for info in found if info is not None]
        else:
            response = await self._auth(source, source, RequestCode.AUTH_LIST_USER, ListUsersRequestHeader())
            infos = [UserInfo.from_obj(d) for d in _list_body(response)]
        result = CopyResult(source, target, [], [])
        for info in infos:
            username = info.username or ""
            exists = await self._user_info(target, username) is not None
            if not exists and not info.password:
                raise OperationFailed(
                    f"user {username} is not on {target} and {source} does not send its password: "
                    f"create it on {target} first, then copy"
                )
            code = RequestCode.AUTH_UPDATE_USER if exists else RequestCode.AUTH_CREATE_USER
            await self._auth(target, target, code, UserRequestHeader(username=username), info.to_json())
            (result.updated if exists else result.created).append(username)
        return result

    # -- ACLs -----------------------------------------------------------------------------------
    @admin_call
    async def auth_acls(
        self,
        cluster: str | None = None,
        broker: str | None = None,
        subject_filter: str | None = None,
        resource_filter: str | None = None,
    ) -> list[BrokerAcls]:
        """The ACLs of each target broker (AUTH_LIST_ACL), optionally filtered by subject and by
        resource (parts of them, as the broker matches)."""
        from admin.models.auth import BrokerAcls
        from broker.protocol.auth_bodies import AclInfo, ListAclsRequestHeader
        from broker.protocol.codes import RequestCode

        header = ListAclsRequestHeader(
            subjectFilter=subject_filter or None, resourceFilter=resource_filter or None
        )

        async def one(name: str, addr: str) -> BrokerAcls:
            response = await self._auth(name, addr, RequestCode.AUTH_LIST_ACL, header)
            return BrokerAcls(name, addr, [_acl_of(AclInfo.from_obj(d)) for d in _list_body(response)])

        return await gather(one(n, a) for n, a in (await self._broker_targets(cluster, broker)).items())

    @admin_call
    async def auth_acl(
        self, subject: str, cluster: str | None = None, broker: str | None = None
    ) -> list[BrokerAcls]:
        """A subject's ACL on each target broker (AUTH_GET_ACL): a list of one, or empty where it has none."""
        from admin.models.auth import BrokerAcls

        key = subject_key(subject)

        async def one(name: str, addr: str) -> BrokerAcls:
            info = await self._acl_info(addr, key)
            return BrokerAcls(name, addr, [] if info is None else [_acl_of(info)])

        return await gather(one(n, a) for n, a in (await self._broker_targets(cluster, broker)).items())

    @admin_call
    async def auth_acl_put(
        self, spec: AclSpec, cluster: str | None = None, broker: str | None = None, *, create: bool
    ) -> AclChange:
        """Create (``create``) or update a subject's policy on every target broker; the brokers merge it
        with what the subject has, entry by resource."""
        from admin.models.auth import AclChange
        from broker.protocol.auth_bodies import AclRequestHeader
        from broker.protocol.codes import RequestCode

        code = RequestCode.AUTH_CREATE_ACL if create else RequestCode.AUTH_UPDATE_ACL
        header = AclRequestHeader(subject=spec.subject)
        targets = await self._write(cluster, broker, code, header, _acl_info(spec).to_json())
        return AclChange(spec.subject, "created" if create else "updated", targets)

    @admin_call
    async def auth_acl_delete(
        self,
        subject: str,
        resource: str | None = None,
        cluster: str | None = None,
        broker: str | None = None,
    ) -> AclChange:
        """Delete a subject's ACL (or only its entries for ``resource``) on every target broker."""
        from admin.models.auth import AclChange
        from broker.protocol.auth_bodies import DeleteAclRequestHeader
        from broker.protocol.codes import RequestCode

        key = subject_key(subject)
        res = None if resource is None else resource_key(resource)
        header = DeleteAclRequestHeader(subject=key, resource=res)
        targets = await self._write(cluster, broker, RequestCode.AUTH_DELETE_ACL, header)
        return AclChange(key, "deleted", targets, res)

    @admin_call
    async def auth_acls_copy(self, source: str, target: str, subjects: Sequence[str] = ()) -> CopyResult:
        """Copy ACLs (all, or those of the subjects named) from broker ``source`` to broker ``target``:
        created where new, updated where the target has the subject's (copyAcl)."""
        from admin.models.auth import CopyResult
        from broker.protocol.auth_bodies import AclInfo, AclRequestHeader, ListAclsRequestHeader
        from broker.protocol.codes import RequestCode

        infos: list[AclInfo] = []
        if subjects:
            found = [await self._acl_info(source, subject_key(subject)) for subject in subjects]
            infos = [info for info in found if info is not None]
        else:
            response = await self._auth(source, source, RequestCode.AUTH_LIST_ACL, ListAclsRequestHeader())
            infos = [AclInfo.from_obj(d) for d in _list_body(response)]
        result = CopyResult(source, target, [], [])
        for info in infos:
            subject = info.subject or ""
            exists = await self._acl_info(target, subject) is not None
            code = RequestCode.AUTH_UPDATE_ACL if exists else RequestCode.AUTH_CREATE_ACL
            await self._auth(target, target, code, AclRequestHeader(subject=subject), info.to_json())
            (result.updated if exists else result.created).append(subject)
        return result
