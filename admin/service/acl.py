"""Plain ACL accounts, global white list and data version: over the wire on brokers (codes 50, 51,
53, 54 of 4.x mqadmin's updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr and getAclConfig; 52
for clusterAclConfigVersion) or in a local ACL file (``path``: the NameServer's, or a broker's before
it runs). Changes go to every broker of a cluster, slaves included (as upstream); reads ask the
masters. Views never hold a secret.
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
    from broker.acl.config import AclConfig, DataVersion, PlainAccount
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
class AclDataVersion:
    counter: int  # changes written to the ACL file
    timestamp: int  # epoch ms of the last one (of the file's modification when it never had one)


@dataclass(frozen=True, slots=True)
class AclView:
    """The ACL of one broker (or of a local file: ``broker`` is then the path)."""

    broker: str
    address: str | None  # None for a local file
    global_white_addresses: list[str]
    accounts: list[AclAccountView]
    version: str | None = None  # the broker's data version as it sends it; None for a file
    data_version: AclDataVersion | None = None  # None when the broker does not say


@dataclass(frozen=True, slots=True)
class AclTarget:
    """A broker a change was written to."""

    broker: str
    address: str


@dataclass(frozen=True, slots=True)
class AclWhiteList:
    """The global white list of one broker (or of a local file: ``broker`` is then the path)."""

    broker: str
    address: str | None
    global_white_addresses: list[str]


@dataclass(frozen=True, slots=True)
class AclVersionView:
    """clusterAclConfigVersion's row: one ACL file of one broker (or a local file)."""

    cluster: str | None
    broker: str
    address: str | None
    acl_file: str | None
    counter: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class WhiteEdit:
    """A change of the global white list: replace it (``replace``), or add and remove patterns."""

    replace: list[str] | None = None
    add: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)

    def validate(self) -> None:
        """Every new pattern must be one the brokers understand; raises BadInput."""
        from broker.acl.addresses import AddressPatternError, compile_pattern

        if self.replace is not None and (self.add or self.remove):
            raise BadInput("give the whole list, or addresses to add and remove, not both")
        for pattern in [*(self.replace or []), *self.add]:
            try:
                compile_pattern(pattern)
            except AddressPatternError as exc:
                raise BadInput(str(exc)) from None

    @property
    def needs_current(self) -> bool:
        return self.replace is None

    def apply(self, current: list[str]) -> list[str]:
        if self.replace is not None:
            return list(self.replace)
        kept = [a for a in current if a not in self.remove]
        return kept + [a for a in self.add if a not in kept]


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
    return AclView(
        view.broker, view.address, view.global_white_addresses, accounts, view.version, view.data_version
    )


def _data_version(doc: Any) -> AclDataVersion | None:
    """Upstream's DataVersion JSON object (counter may be a number or a string); None if it is not one."""
    if not isinstance(doc, dict):
        return None
    try:
        return AclDataVersion(int(doc.get("counter", 0)), int(doc.get("timestamp", 0)))
    except (TypeError, ValueError):
        return None


def _json_field(fields: dict[str, str], name: str) -> Any:
    try:
        return json.loads(fields.get(name) or "null")
    except ValueError:
        return None


def _file_version(path: Path, version: DataVersion | None) -> AclDataVersion:
    if version is not None:
        return AclDataVersion(version.counter, version.timestamp)
    return AclDataVersion(0, path.stat().st_mtime_ns // 1_000_000)


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


def _load_existing(path: Path) -> AclConfig:
    config = _load(path)
    if not path.exists():
        raise NotFound(f"no ACL file {path}")
    return config


def file_view(path: Path, access_key: str | None = None) -> AclView:
    config = _load_existing(path)
    accounts = [_view_of_account(a) for a in config.accounts.values()]
    version = _file_version(path, config.data_version)
    view = AclView(str(path), None, config.global_white_addresses, accounts, data_version=version)
    return _filtered(view, access_key)


def file_version(path: Path) -> AclVersionView:
    version = _file_version(path, _load_existing(path).data_version)
    return AclVersionView(None, str(path), None, str(path), version.counter, version.timestamp)


def file_white_list(path: Path) -> AclWhiteList:
    return AclWhiteList(str(path), None, _load_existing(path).global_white_addresses)


def file_white_update(path: Path, edit: WhiteEdit) -> AclWhiteList:
    """Change a file's global white list (a missing file is created)."""
    edit.validate()
    config = _load(path)
    config.global_white_addresses = edit.apply(config.global_white_addresses)
    _save(path, config)
    return AclWhiteList(str(path), None, config.global_white_addresses)


def _save(path: Path, config: AclConfig) -> None:
    from broker.acl import config as acl_config

    try:
        acl_config.save(path, config)
    except acl_config.AclConfigError as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:
        raise OperationFailed(f"cannot write {path}: {exc.strerror}") from None


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
    except acl_config.AclConfigError as exc:
        raise BadInput(str(exc)) from None
    _save(path, config)


def file_delete(path: Path, access_key: str) -> None:
    config = _load(path)
    if config.accounts.pop(access_key, None) is None:
        raise NotFound(f"no ACL account {access_key} in {path}")
    _save(path, config)


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


def _names(targets: list[AclTarget]) -> list[str]:
    return sorted({t.broker for t in targets})


class AclOps(ServiceBase):
    async def _write_targets(self, cluster: str | None, broker: str | None) -> list[AclTarget]:
        return [AclTarget(name, addr) for name, addr in await self._write_members(cluster, broker)]

    async def _send(self, targets: list[AclTarget], code: int, ext: dict[str, str]) -> None:
        await gather(_acl_call(self.api, t.broker, t.address, code, ext) for t in targets)

    async def _config_of(self, name: str, addr: str) -> dict[str, Any]:
        from broker.acl.permissions import AclCode

        response = await _acl_call(self.api, name, addr, AclCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        body = json.loads(response.body or b"{}")
        return body if isinstance(body, dict) else {}

    @admin_call
    async def acl_list(
        self, cluster: str | None = None, broker: str | None = None, access_key: str | None = None
    ) -> list[AclView]:
        """The ACL of each target broker (getAclConfig), optionally one account only."""
        from broker.acl.permissions import AclCode

        targets = await self._broker_targets(cluster, broker)

        async def one(name: str, addr: str) -> AclView:
            body = await self._config_of(name, addr)
            info = await _acl_call(self.api, name, addr, AclCode.GET_BROKER_CLUSTER_ACL_INFO)
            accounts = [view_of_doc(d) for d in body.get("plainAccessConfigs") or []]
            fields = info.ext_fields or {}
            version = fields.get("version") or None
            data_version = _data_version(_json_field(fields, "version"))
            white = list(body.get("globalWhiteAddrs") or [])
            return _filtered(AclView(name, addr, white, accounts, version, data_version), access_key)

        return await gather(one(name, addr) for name, addr in targets.items())

    @admin_call
    async def acl_versions(
        self, cluster: str | None = None, broker: str | None = None
    ) -> list[AclVersionView]:
        """The data version of each ACL file of each target broker (clusterAclConfigVersion)."""
        from broker.acl.permissions import AclCode

        targets = await self._broker_targets(cluster, broker)

        async def one(name: str, addr: str) -> list[AclVersionView]:
            info = await _acl_call(self.api, name, addr, AclCode.GET_BROKER_CLUSTER_ACL_INFO)
            fields = info.ext_fields or {}
            files = _json_field(fields, "allAclFileVersion")
            if not isinstance(files, dict) or not files:  # brokers before 4.9 send one version only
                files = {None: _json_field(fields, "version")}
            cluster_name = fields.get("clusterName") or None
            name, addr = fields.get("brokerName") or name, fields.get("brokerAddr") or addr
            versions = {path: _data_version(doc) or AclDataVersion(0, 0) for path, doc in files.items()}
            return [
                AclVersionView(cluster_name, name, addr, path, v.counter, v.timestamp)
                for path, v in versions.items()
            ]

        per_broker = await gather(one(name, addr) for name, addr in targets.items())
        return [row for rows in per_broker for row in rows]

    @admin_call
    async def acl_white_lists(
        self, cluster: str | None = None, broker: str | None = None
    ) -> list[AclWhiteList]:
        """The global white list of each target broker."""
        targets = await self._broker_targets(cluster, broker)

        async def one(name: str, addr: str) -> AclWhiteList:
            body = await self._config_of(name, addr)
            return AclWhiteList(name, addr, list(body.get("globalWhiteAddrs") or []))

        return await gather(one(name, addr) for name, addr in targets.items())

    @admin_call
    async def acl_white_update(
        self,
        edit: WhiteEdit,
        cluster: str | None = None,
        broker: str | None = None,
        acl_file: str | None = None,
    ) -> list[AclWhiteList]:
        """Change the global white list on every target broker (updateGlobalWhiteAddr); ``acl_file``
        names the broker's ACL file, as upstream's aclFileFullPath. The lists as written."""
        from broker.acl.permissions import AclCode

        edit.validate()
        targets = await self._write_targets(cluster, broker)

        async def one(t: AclTarget) -> AclWhiteList:
            current: list[str] = []
            if edit.needs_current:
                current = list((await self._config_of(t.broker, t.address)).get("globalWhiteAddrs") or [])
            addresses = edit.apply(current)
            ext = {"globalWhiteAddrs": ",".join(addresses)}
            if acl_file:
                ext["aclFileFullPath"] = acl_file
            await _acl_call(self.api, t.broker, t.address, AclCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext)
            return AclWhiteList(t.broker, t.address, addresses)

        return await gather(one(t) for t in targets)

    @admin_call
    async def acl_put(
        self, change: AccountChange, cluster: str | None = None, broker: str | None = None
    ) -> list[AclTarget]:
        """Create or update an account on every target broker (updateAclConfig)."""
        from broker.acl.permissions import AclCode

        targets = await self._write_targets(cluster, broker)
        await self._send(targets, AclCode.UPDATE_AND_CREATE_ACL_CONFIG, change.fields())
        return targets

    @admin_call
    async def acl_remove(
        self, access_key: str, cluster: str | None = None, broker: str | None = None
    ) -> list[AclTarget]:
        """Delete an account on every target broker (deleteAclConfig)."""
        from broker.acl.permissions import AclCode

        targets = await self._write_targets(cluster, broker)
        await self._send(targets, AclCode.DELETE_ACL_CONFIG, {"accessKey": access_key})
        return targets

    @admin_call
    async def acl_upsert(
        self,
        change: AccountChange,
        *,
        create: bool | None = None,
        cluster: str | None = None,
        broker: str | None = None,
    ) -> list[str]:
        """Create (``create``), update (False) or either (None) an account on each target broker;
        returns the brokers' names."""
        if create and change.secret_key is None:
            raise BadInput("a new account needs a secret key")
        for view in await self.acl_list(cluster, broker, change.access_key) if create is not None else []:
            if create and view.accounts:
                raise OperationFailed(
                    f"account {change.access_key} exists already on {view.broker} (use update)"
                )
            if not create and not view.accounts:
                raise NotFound(f"no ACL account {change.access_key} on {view.broker}")
        return _names(await self.acl_put(change, cluster, broker))

    @admin_call
    async def acl_delete(
        self, access_key: str, cluster: str | None = None, broker: str | None = None
    ) -> list[str]:
        """Delete an account on each target broker; the brokers' names."""
        return _names(await self.acl_remove(access_key, cluster, broker))
