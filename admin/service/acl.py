"""Plain ACL accounts: over the wire on brokers (codes 50, 51, 54 of 4.x mqadmin's updateAclConfig,
deleteAclConfig and getAclConfig; 52 for the file versions) or in a local ACL file (``path``: the
NameServer's, or a broker's before it runs). Views never hold a secret.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from admin.errors import BadInput, NotFound, OperationFailed
from admin.service.base import ServiceBase, admin_call, gather
from broker.client.admin_api import RemoteError

if TYPE_CHECKING:
    from broker.acl.config import AclConfig, PlainAccount
    from broker.client.admin_api import AdminApi
    from broker.protocol.remoting import RemotingCommand


@dataclass(frozen=True, slots=True)
class AclAccountView:
    access_key: str
    white_remote_address: str | None = None  # None: unset (every address must sign)
    admin: bool = False
    default_topic_perm: str = "DENY"
    default_group_perm: str = "DENY"
    topic_perms: dict[str, str] = field(default_factory=dict)
    group_perms: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AclView:
    """The ACL of one broker (or of a local file: ``broker`` is then the path)."""

    broker: str
    address: str | None  # None for a local file
    global_white_addresses: list[str]
    accounts: list[AclAccountView]
    version: str | None = None  # the broker's ACL data version; None for a file or when not given


@dataclass(frozen=True, slots=True)
class AccountChange:
    """What ``create``/``update`` set; None leaves a field as it is (update) or at its default."""

    access_key: str
    secret_key: str | None = field(default=None, repr=False)
    white_remote_address: str | None = None
    admin: bool | None = None
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None  # NAME=PERM
    group_perms: list[str] | None = None

    def fields(self) -> dict[str, str]:
        """As the UPDATE_AND_CREATE_ACL_CONFIG header (lists comma-joined)."""
        values: dict[str, Any] = {
            "accessKey": self.access_key, "secretKey": self.secret_key,
            "whiteRemoteAddress": self.white_remote_address,
            "admin": None if self.admin is None else str(self.admin).lower(),
            "defaultTopicPerm": self.default_topic_perm, "defaultGroupPerm": self.default_group_perm,
            "topicPerms": None if self.topic_perms is None else ",".join(self.topic_perms),
            "groupPerms": None if self.group_perms is None else ",".join(self.group_perms),
        }  # fmt: skip
        return {k: str(v) for k, v in values.items() if v is not None}


def view_of_doc(doc: dict[str, Any]) -> AclAccountView:
    from broker.acl import config as acl_config

    key = str(doc.get("accessKey") or "")
    return AclAccountView(
        access_key=key,
        white_remote_address=str(doc.get("whiteRemoteAddress") or "") or None,
        admin=str(doc.get("admin")).lower() == "true",
        default_topic_perm=str(doc.get("defaultTopicPerm") or "DENY"),
        default_group_perm=str(doc.get("defaultGroupPerm") or "DENY"),
        topic_perms=acl_config.parse_perm_list(doc.get("topicPerms"), "topicPerms", key),
        group_perms=acl_config.parse_perm_list(doc.get("groupPerms"), "groupPerms", key),
    )


def _view_of_account(account: PlainAccount) -> AclAccountView:
    doc = account.to_doc()
    doc.pop("secretKey")
    return view_of_doc(doc)


def _filtered(view: AclView, access_key: str | None) -> AclView:
    if access_key is None:
        return view
    accounts = [a for a in view.accounts if a.access_key == access_key]
    return AclView(view.broker, view.address, view.global_white_addresses, accounts, view.version)


# == local files ===============================================================================
def _load(path: Path) -> AclConfig:
    from broker.acl import config as acl_config

    try:
        return acl_config.load(path)
    except FileNotFoundError:
        return acl_config.AclConfig()  # create writes a new file
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    except acl_config.AclConfigError as exc:
        raise BadInput(str(exc)) from None


def file_view(path: Path, access_key: str | None = None) -> AclView:
    config = _load(path)
    if not path.exists():
        raise NotFound(f"no ACL file {path}")
    accounts = [_view_of_account(a) for a in config.accounts.values()]
    return _filtered(AclView(str(path), None, config.global_white_addresses, accounts), access_key)


def file_upsert(path: Path, change: AccountChange, *, create: bool | None) -> None:
    """Create (``create``: it must not exist), update (False: it must exist) or either (None)."""
    from broker.acl import config as acl_config

    config = _load(path)
    old = config.accounts.get(change.access_key)
    if create and old is not None:
        raise OperationFailed(f"account {change.access_key} exists already (use update)")
    if create is False and old is None:
        raise NotFound(f"no ACL account {change.access_key} in {path}")
    doc = old.to_doc() if old is not None else {}
    doc.update(change.fields())
    try:
        config.accounts[change.access_key] = acl_config.account_from_doc(doc)
        acl_config.save(path, config)
    except acl_config.AclConfigError as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:
        raise OperationFailed(f"cannot write {path}: {exc.strerror}") from None


def file_delete(path: Path, access_key: str) -> None:
    from broker.acl import config as acl_config

    config = _load(path)
    if config.accounts.pop(access_key, None) is None:
        raise NotFound(f"no ACL account {access_key} in {path}")
    try:
        acl_config.save(path, config)
    except OSError as exc:
        raise OperationFailed(f"cannot write {path}: {exc.strerror}") from None


# == brokers ===================================================================================
async def _acl_call(
    api: AdminApi, name: str, addr: str, code: int, ext: dict[str, str] | None = None
) -> RemotingCommand:
    """One ACL request; a broker that does not serve it (aclEnable=false) is named as such."""
    from broker.protocol.codes import ResponseCode

    try:
        return await api.call(addr, code, ext=ext)
    except RemoteError as exc:
        if exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            raise OperationFailed(
                f"ACL is not enabled on broker {name} ({addr}): it needs aclEnable=true"
            ) from None
        raise


class AclOps(ServiceBase):
    @admin_call
    async def acl_list(
        self, cluster: str | None = None, broker: str | None = None, access_key: str | None = None
    ) -> list[AclView]:
        """The ACL of each target broker (getAclConfig), optionally one account only."""
        from broker.acl.permissions import AclCode

        targets = await self._broker_targets(cluster, broker)

        async def one(name: str, addr: str) -> AclView:
            config = await _acl_call(self.api, name, addr, AclCode.GET_BROKER_CLUSTER_ACL_CONFIG)
            info = await _acl_call(self.api, name, addr, AclCode.GET_BROKER_CLUSTER_ACL_INFO)
            body = json.loads(config.body or b"{}")
            accounts = [view_of_doc(d) for d in body.get("plainAccessConfigs") or []]
            version = (info.ext_fields or {}).get("version") or None
            view = AclView(name, addr, list(body.get("globalWhiteAddrs") or []), accounts, version)
            return _filtered(view, access_key)

        return await gather(one(name, addr) for name, addr in targets.items())

    @admin_call
    async def acl_upsert(
        self,
        change: AccountChange,
        *,
        create: bool | None = None,
        cluster: str | None = None,
        broker: str | None = None,
    ) -> list[str]:
        """Create (``create``), update (False) or either (None, as updateAclConfig) an account on
        each target broker; returns the brokers' names."""
        from broker.acl.permissions import AclCode

        targets = await self._broker_targets(cluster, broker)
        if create and change.secret_key is None:
            raise BadInput("a new account needs a secret key")
        for view in await self.acl_list(cluster, broker, change.access_key) if create is not None else []:
            if create and view.accounts:
                raise OperationFailed(
                    f"account {change.access_key} exists already on {view.broker} (use update)"
                )
            if not create and not view.accounts:
                raise NotFound(f"no ACL account {change.access_key} on {view.broker}")
        ext = change.fields()
        await gather(
            _acl_call(self.api, name, addr, AclCode.UPDATE_AND_CREATE_ACL_CONFIG, ext)
            for name, addr in targets.items()
        )
        return sorted(targets)

    @admin_call
    async def acl_delete(
        self, access_key: str, cluster: str | None = None, broker: str | None = None
    ) -> list[str]:
        """Delete an account on each target broker (deleteAclConfig); the brokers' names."""
        from broker.acl.permissions import AclCode

        targets = await self._broker_targets(cluster, broker)
        ext = {"accessKey": access_key}
        await gather(
            _acl_call(self.api, name, addr, AclCode.DELETE_ACL_CONFIG, ext) for name, addr in targets.items()
        )
        return sorted(targets)
