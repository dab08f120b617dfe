"""Typed settings shared by the broker, the NameServer and the store.

Settings are dataclass fields in snake_case; files and flags may use RocketMQ's own camelCase key
names (``brokerName``, ``flushDiskType``) or the snake_case ones. A field whose RocketMQ name is not
the camelCase of its own (``brokerIP1``, ``fileReservedTime``) names it in its metadata as ``key``;
that name is accepted and is the one shown (GET_BROKER_CONFIG, ``rmq broker config get``). An unknown
key or a value of the wrong type is an error that names the key and where it came from, never a
silent default.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import tomli


class SettingsError(ValueError):
    """A configuration key or value that cannot be used; the message says which and where."""


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def key_name(f: dataclasses.Field[Any]) -> str:
    """The key a setting field is shown under: RocketMQ's name (``metadata["key"]``) or its camelCase."""
    key: str = f.metadata.get("key") or camel(f.name)
    return key


def _field_types(obj: Any) -> dict[str, Any]:
    return typing.get_type_hints(type(obj))


def _convert(kind: Any, raw: Any, key: str, origin: str) -> Any:
    """Convert ``raw`` (a string from a properties file or flag, or a TOML value) to ``kind``."""
    if typing.get_origin(kind) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "null", "none")):
            return None
        kind = args[0]
    where = f"setting {key} ({origin})"
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise SettingsError(f"{where}: {raw!r} is not true or false")
    if kind is int:
        if isinstance(raw, bool):
            raise SettingsError(f"{where}: {raw!r} is not an integer")
        try:
            return int(str(raw).strip())
        except ValueError:
            raise SettingsError(f"{where}: {raw!r} is not an integer") from None
    if kind is float:
        try:
            return float(str(raw).strip())
        except ValueError:
            raise SettingsError(f"{where}: {raw!r} is not a number") from None
    if kind is Path:
        return Path(str(raw).strip()).expanduser()
    if kind is str:
        return str(raw).strip()
    raise SettingsError(f"{where}: cannot be set from configuration")


class SettingsTarget:
    """A set of dataclass instances that configuration keys are applied to, by either key style."""

    def __init__(self, *targets: Any) -> None:
        self.targets = targets
        self.index: dict[str, tuple[Any, str]] = {}
        self.names: dict[str, str] = {}  # field name -> the key it is shown under
        self.applied: set[str] = set()  # field names set by apply(), whatever spelling was used
        for target in targets:
            for f in self._fields(target):
                self.names[f.name] = key_name(f)
                for spelling in (f.name, camel(f.name), key_name(f)):
                    self.index[spelling] = (target, f.name)

    @staticmethod
    def _fields(target: Any) -> list[dataclasses.Field[Any]]:
        return [
            f
            for f in dataclasses.fields(target)
            if not f.name.startswith("_") and not f.metadata.get("internal")
        ]

    def keys(self) -> list[str]:
        """The keys settings are shown under, one per setting."""
        return sorted(self.names.values())

    def key(self, name: str) -> str:
        """The shown key of field ``name``."""
        return self.names[name]

    def apply(self, items: Iterable[tuple[str, Any]], origin: str) -> None:
        for key, raw in items:
            entry = self.index.get(key.strip())
            if entry is None:
                raise SettingsError(f"unknown setting {key.strip()!r} ({origin})")
            target, name = entry
            kind = _field_types(target)[name]
            setattr(target, name, _convert(kind, raw, key.strip(), origin))
            self.applied.add(name)

    def as_properties(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for target in self.targets:
            for f in self._fields(target):
                value = getattr(target, f.name)
                out[key_name(f)] = (
                    "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
                )
        return out


def parse_properties(text: str, origin: str) -> list[tuple[str, str]]:
    """Java properties text: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` line joins."""
    items: list[tuple[str, str]] = []
    pending = ""
    for lineno, line in enumerate(text.splitlines(), 1):
        line = pending + line.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if cut < 0:
            raise SettingsError(f"{origin} line {lineno}: expected key=value, got {line!r}")
        items.append((line[:cut].strip(), line[cut + 1 :].strip()))
    return items


def read_settings_file(path: Path) -> list[tuple[str, Any]]:
    """Key/value pairs of a TOML file or of a RocketMQ ``broker.conf`` style properties file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"cannot read configuration file {path}: {exc.strerror}") from None
    if path.suffix == ".toml":
        try:
            doc = tomli.loads(data.decode("utf-8"))
        except (tomli.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SettingsError(f"{path}: {exc}") from None
        items: list[tuple[str, Any]] = []
        for key, value in doc.items():
            if isinstance(value, dict):  # [broker] / [store] tables are only grouping
                items.extend(value.items())
            else:
                items.append((key, value))
        return items
    try:
        return list(parse_properties(data.decode("utf-8"), str(path)))
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: not UTF-8 text") from None


def parse_overrides(pairs: Iterable[str]) -> list[tuple[str, str]]:
    """``--set KEY=VALUE`` flags."""
    out: list[tuple[str, str]] = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SettingsError(f"--set expects KEY=VALUE, got {pair!r}")
        out.append((key.strip(), value))
    return out
