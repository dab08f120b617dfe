"""The plain ACL file: ``globalWhiteRemoteAddresses``, ``accounts`` and ``dataVersion`` (upstream's
plain_acl.yml; every write through :func:`save` counts a new data version, as upstream's broker does).

The file may be YAML (the subset of :mod:`broker.acl.yaml_lite`, so upstream's plain_acl.yml works
as is), JSON (``.json``) or TOML (``.toml``, accounts as ``[[accounts]]`` tables); it is written back
in the format it was read in, atomically and readable by its owner only. Error messages name fields
and accounts, never a secret.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli

from broker.acl import yaml_lite
from broker.acl.addresses import AddressPatternError, compile_pattern

MIN_KEY_LENGTH = 6  # upstream refuses shorter access and secret keys
PERM_NAMES = ("DENY", "PUB", "SUB", "PUB|SUB", "SUB|PUB")
ACCOUNT_FIELDS = ("accessKey", "secretKey", "whiteRemoteAddress", "admin",
                  "defaultTopicPerm", "defaultGroupPerm", "topicPerms", "groupPerms")  # fmt: skip


class AclConfigError(ValueError):
    """An ACL file or account that cannot be used (the message never holds a secret)."""


@dataclass(slots=True)
class PlainAccount:
    access_key: str
    secret_key: str = field(repr=False)
    white_remote_address: str = ""
    admin: bool = False
    default_topic_perm: str = "DENY"
    default_group_perm: str = "DENY"
    topic_perms: dict[str, str] = field(default_factory=dict)  # topic -> PUB|SUB|...
    group_perms: dict[str, str] = field(default_factory=dict)  # group -> ...

    def validate(self) -> None:
        if len(self.access_key) < MIN_KEY_LENGTH or not self.access_key.isprintable():
            raise AclConfigError(
                f"accessKey {self.access_key!r} must be at least {MIN_KEY_LENGTH} printable characters"
            )
        if len(self.secret_key) < MIN_KEY_LENGTH:
            raise AclConfigError(
                f"the secretKey of {self.access_key} must be at least {MIN_KEY_LENGTH} characters"
            )
        perms = [self.default_topic_perm, self.default_group_perm]
        perms += [*self.topic_perms.values(), *self.group_perms.values()]
        for perm in perms:
            if perm.strip().upper() not in PERM_NAMES:
                raise AclConfigError(
                    f"account {self.access_key}: permission {perm!r} is not one of {', '.join(PERM_NAMES)}"
                )
        try:
            compile_pattern(self.white_remote_address)
        except AddressPatternError as exc:
            raise AclConfigError(f"account {self.access_key}: {exc}") from None

    def to_doc(self) -> dict[str, Any]:
        return {
            "accessKey": self.access_key,
            "secretKey": self.secret_key,
            "whiteRemoteAddress": self.white_remote_address,
            "admin": self.admin,
            "defaultTopicPerm": self.default_topic_perm,
            "defaultGroupPerm": self.default_group_perm,
            "topicPerms": [f"{k}={v}" for k, v in self.topic_perms.items()],
            "groupPerms": [f"{k}={v}" for k, v in self.group_perms.items()],
        }


@dataclass(frozen=True, slots=True)
class DataVersion:
    """How many changes were written to the file, and when the last one was (epoch ms)."""

    counter: int = 0
    timestamp: int = 0

    def next(self) -> DataVersion:
        return DataVersion(self.counter + 1, int(time.time() * 1000))

    def to_doc(self) -> dict[str, int]:
        return {"counter": self.counter, "timestamp": self.timestamp}


@dataclass(slots=True)
class AclConfig:
    global_white_addresses: list[str] = field(default_factory=list)
    accounts: dict[str, PlainAccount] = field(default_factory=dict)
    data_version: DataVersion | None = None  # None: the file never had one

    def validate(self) -> None:
        for pattern in self.global_white_addresses:
            try:
                compile_pattern(pattern)
            except AddressPatternError as exc:
                raise AclConfigError(f"globalWhiteRemoteAddresses: {exc}") from None
        for account in self.accounts.values():
            account.validate()

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "globalWhiteRemoteAddresses": list(self.global_white_addresses),
            "accounts": [a.to_doc() for a in self.accounts.values()],
        }
        if self.data_version is not None:
            doc["dataVersion"] = [self.data_version.to_doc()]  # upstream keeps a one-item list
        return doc


def parse_perm_list(items: Any, what: str, owner: str) -> dict[str, str]:
    """``["topicA=PUB", ...]`` (or a comma-joined string, as the remoting header sends it)."""
    if items is None or items == "":
        return {}
    if isinstance(items, str):
        items = [i for i in items.split(",") if i.strip()]
    if not isinstance(items, list):
        raise AclConfigError(f"account {owner}: {what} must be a list of NAME=PERM")
    out: dict[str, str] = {}
    for item in items:
        name, sep, perm = str(item).partition("=")
        if not sep or not name.strip() or not perm.strip():
            raise AclConfigError(f"account {owner}: {what} entry {item!r} is not NAME=PERM")
        out[name.strip()] = perm.strip().upper()
    return out


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _bool(value: Any, owner: str) -> bool:
    if isinstance(value, bool) or value is None:
        return bool(value)
    if str(value).strip().lower() in ("true", "false"):
        return str(value).strip().lower() == "true"
    raise AclConfigError(f"account {owner}: admin must be true or false")


def account_from_doc(doc: Any) -> PlainAccount:
    if not isinstance(doc, dict):
        raise AclConfigError("every entry of accounts must be a mapping")
    key = _text(doc.get("accessKey"))
    unknown = sorted(set(doc) - set(ACCOUNT_FIELDS))
    if unknown:
        raise AclConfigError(f"account {key}: unknown field(s) {', '.join(unknown)}")
    account = PlainAccount(
        access_key=key,
        secret_key=_text(doc.get("secretKey")),
        white_remote_address=_text(doc.get("whiteRemoteAddress")),
        admin=_bool(doc.get("admin"), key),
        default_topic_perm=_text(doc.get("defaultTopicPerm")).upper() or "DENY",
        default_group_perm=_text(doc.get("defaultGroupPerm")).upper() or "DENY",
        topic_perms=parse_perm_list(doc.get("topicPerms"), "topicPerms", key),
        group_perms=parse_perm_list(doc.get("groupPerms"), "groupPerms", key),
    )
    account.validate()
    return account


def config_from_doc(doc: Any) -> AclConfig:
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise AclConfigError("the ACL file must be a mapping")
    addresses = doc.get("globalWhiteRemoteAddresses") or []
    if not isinstance(addresses, list):
        raise AclConfigError("globalWhiteRemoteAddresses must be a list")
    config = AclConfig(
        global_white_addresses=[_text(a) for a in addresses if _text(a)],
        data_version=_data_version(doc.get("dataVersion")),
    )
    for entry in doc.get("accounts") or []:
        account = account_from_doc(entry)
        if account.access_key in config.accounts:
            raise AclConfigError(f"account {account.access_key} appears twice")
        config.accounts[account.access_key] = account
    config.validate()
    return config


def _data_version(items: Any) -> DataVersion | None:
    if items is None or items == []:
        return None
    first = items[0] if isinstance(items, list) else None
    if isinstance(first, dict):
        try:
            return DataVersion(int(first.get("counter", 0)), int(first.get("timestamp", 0)))
        except (TypeError, ValueError):
            pass
    raise AclConfigError("dataVersion must be a list of {counter, timestamp}")


def _format(path: Path) -> str:
    return {".json": "json", ".toml": "toml"}.get(path.suffix.lower(), "yaml")


def parse_text(text: str, fmt: str) -> AclConfig:
    try:
        if fmt == "json":
            doc = json.loads(text)
        elif fmt == "toml":
            doc = tomli.loads(text)
        else:
            doc = yaml_lite.loads(text)
    except (ValueError, tomli.TOMLDecodeError) as exc:  # positions only: the text may hold secrets
        raise AclConfigError(f"cannot parse the ACL file as {fmt.upper()}: {_position(exc)}") from None
    return config_from_doc(doc)


def _position(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno} column {exc.colno}"
    if isinstance(exc, yaml_lite.YamlSubsetError):
        return str(exc)
    text = str(exc)
    return text[text.find("(at line") :] if "(at line" in text else "syntax error"


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is JSON-compatible for what json.dumps escapes


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return f"[{', '.join(_toml_str(v) for v in value)}]"
    return _toml_str(value)


def dump_toml(doc: dict[str, Any]) -> str:
    addresses = ", ".join(_toml_str(a) for a in doc["globalWhiteRemoteAddresses"])
    lines = [f"globalWhiteRemoteAddresses = [{addresses}]", ""]
    for name in ("accounts", "dataVersion"):  # arrays of tables
        for table in doc.get(name, []):
            lines.append(f"[[{name}]]")
            lines.extend(f"{key} = {_toml_value(value)}" for key, value in table.items())
            lines.append("")
    return "\n".join(lines)


def render(config: AclConfig, fmt: str) -> str:
    doc = config.to_doc()
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    if fmt == "toml":
        return dump_toml(doc)
    return yaml_lite.dumps(doc)


def load(path: Path) -> AclConfig:
    """Read and validate an ACL file; raises AclConfigError (OSError for a missing file)."""
    text = path.read_text(encoding="utf-8")
    try:
        return parse_text(text, _format(path))
    except AclConfigError as exc:
        raise AclConfigError(f"{path}: {exc}") from None


def save(path: Path, config: AclConfig) -> None:
    """Validate, count a new data version, then replace the file atomically (mode 0600) in its own
    format."""
    config.validate()
    config.data_version = (config.data_version or DataVersion()).next()
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(render(config, _format(path)))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


__all__ = [
    "AclConfig",
    "AclConfigError",
    "DataVersion",
    "PlainAccount",
    "account_from_doc",
    "load",
    "parse_perm_list",
    "render",
    "save",
]
