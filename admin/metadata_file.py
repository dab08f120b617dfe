"""Metadata files: topics and subscription groups as data, for ``rmq metadata export|apply``.

One shape, read from JSON or TOML: ``topicConfigTable`` (topic name -> TopicConfig fields) and
``subscriptionGroupTable`` (group name -> SubscriptionGroupConfig fields), with RocketMQ's own field
names. It is the shape ``mqadmin exportMetadata`` writes, so a file exported from a Java cluster applies
here unchanged. Each entry names only the fields it sets; the others keep what a broker holds (or
RocketMQ's defaults for something new).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from admin.errors import BadInput
from broker.protocol.bodies import BodyError, TopicConfig
from broker.protocol.group_bodies import SubscriptionGroupConfig

TOPICS_KEY = "topicConfigTable"
GROUPS_KEY = "subscriptionGroupTable"
_KNOWN_TOP_LEVEL = frozenset({TOPICS_KEY, GROUPS_KEY, "exportTime", "dataVersion"})
# TopicConfig fields apply sets; topicFilterType and topicSysFlag stay as the broker holds them
TOPIC_FIELDS = ("readQueueNums", "writeQueueNums", "perm", "order", "attributes")


@dataclass(frozen=True, slots=True)
class Entry:
    """One topic or group of a file: the full config it describes and the fields it names."""

    name: str
    config: TopicConfig | SubscriptionGroupConfig
    given: frozenset[str]


@dataclass(frozen=True, slots=True)
class MetadataFile:
    topics: list[Entry]
    groups: list[Entry]
    notes: list[str]  # keys read but not applied, one line each


def load_metadata(path: Path, ignore_unknown: bool = False) -> MetadataFile:
    """Read and check a metadata file; every problem is a BadInput naming the file and the key.
    A field RocketMQ's config does not have is refused (a typo must not pass unnoticed), or with
    ``ignore_unknown`` (files of newer RocketMQ versions) noted and skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot be read: {exc}") from None
    doc = _parse(path, text)
    unknown = sorted(set(doc) - _KNOWN_TOP_LEVEL)
    if unknown:
        raise BadInput(f"{path}: unknown key {unknown[0]!r} (expected {TOPICS_KEY} and {GROUPS_KEY})")
    notes: list[str] = []
    topics = _entries(path, doc, TOPICS_KEY, TopicConfig, "topicName", notes, ignore_unknown)
    groups = _entries(path, doc, GROUPS_KEY, SubscriptionGroupConfig, "groupName", notes, ignore_unknown)
    if not topics and not groups:
        raise BadInput(f"{path}: names no topic and no group (keys {TOPICS_KEY}, {GROUPS_KEY})")
    return MetadataFile(topics, groups, notes)


def _parse(path: Path, text: str) -> dict[str, Any]:
    if path.suffix.lower() == ".toml":
        import tomli

        try:
            doc: object = tomli.loads(text)
        except tomli.TOMLDecodeError as exc:
            raise BadInput(f"{path}: not TOML: {exc}") from None
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: expected an object with {TOPICS_KEY} and/or {GROUPS_KEY}")
    return doc


def _entries(
    path: Path,
    doc: dict[str, Any],
    key: str,
    cls: type[TopicConfig] | type[SubscriptionGroupConfig],
    name_field: str,
    notes: list[str],
    ignore_unknown: bool,
) -> list[Entry]:
    table = doc.get(key) or {}
    if not isinstance(table, dict):
        raise BadInput(f"{path}: {key} must map names to objects")
    known = {f.name for f in dataclasses.fields(cls)}
    entries = []
    for name, fields in sorted(table.items()):
        where = f"{path}: {key}.{name}"
        if not isinstance(fields, dict):
            raise BadInput(f"{where}: expected an object of fields")
        if not name.strip():
            raise BadInput(f"{path}: {key} has an empty name")
        named = fields.get(name_field)
        if named is not None and named != name:
            raise BadInput(f"{where}: {name_field} is {named!r}, not the name it is filed under")
        for unknown in sorted(set(fields) - known):
            if not ignore_unknown:
                raise BadInput(f"{where}: unknown field {unknown!r} (fields: {', '.join(sorted(known))})")
            notes.append(f"{key}.{name}: unknown field {unknown!r} ignored")
        given = {k for k, v in fields.items() if k in known and k != name_field and v is not None}
        try:
            config = cls.from_obj({**{k: fields[k] for k in given}, name_field: name})
        except BodyError as exc:
            detail = str(exc).removeprefix(cls.__name__)
            raise BadInput(f"{where}{detail}") from None
        if cls is TopicConfig:
            for ignored in sorted(given - set(TOPIC_FIELDS)):
                if getattr(config, ignored) != getattr(TopicConfig(), ignored):
                    notes.append(f"{key}.{name}: {ignored} is kept as each broker holds it, not applied")
            given &= set(TOPIC_FIELDS)
        entries.append(Entry(name, config, frozenset(given)))
    return entries
