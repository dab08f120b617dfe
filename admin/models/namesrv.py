"""NameServers: KV configuration entries and changes, and each NameServer's settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.models.cluster import ConfigValues

__all__ = [
    "KvChange",
    "KvEntries",
    "ServerConfigs",
]


@dataclass(frozen=True, slots=True)
class KvEntries:
    namespace: str
    entries: dict[str, str]  # sorted by key


@dataclass(frozen=True, slots=True)
class KvChange:
    namespace: str
    key: str
    value: str | None  # None for a delete
    namesrvs: list[str]


@dataclass(frozen=True, slots=True)
class ServerConfigs:
    """The configuration of each NameServer."""

    servers: list[ConfigValues]
