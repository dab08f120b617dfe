"""What ``metadata apply`` plans and does: one item per topic or group of the file."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["FieldChange", "MetadataAction", "MetadataItem", "MetadataPlan"]


class MetadataAction(StrEnum):
    CREATE = "create"  # missing on at least one target broker
    UPDATE = "update"  # held everywhere, but a field differs somewhere
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class FieldChange:
    field: str  # RocketMQ's name, as in the file
    current: Any  # None where the broker does not hold the topic or group yet
    wanted: Any


@dataclass(frozen=True, slots=True)
class MetadataItem:
    kind: str  # "topic" or "group"
    name: str
    action: MetadataAction
    brokers: list[str]  # broker names the action writes to (all targets when unchanged)
    changes: list[FieldChange] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MetadataPlan:
    items: list[MetadataItem]  # topics first, then groups, each sorted by name
    pending: int  # items not already as the file describes them
    applied: bool  # False for a dry run
    notes: list[str] = field(default_factory=list)  # file keys read but not applied
