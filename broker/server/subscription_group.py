"""Consumer group configurations: ``config/subscriptionGroup.json``, built-ins and auto-creation."""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from broker.protocol import lenient_json
from broker.protocol.bodies import BodyError, DataVersion
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.server.config import BrokerConfig
from broker.server.kept_parts import KeptParts
from broker.store.config_files import ConfigFile

log = logging.getLogger(__name__)

MAX_GROUP_NAME_LENGTH = 120
BUILT_IN_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_RMQ_SYS_TRANS",
)


def group_name_problem(group: str | None) -> str | None:
    """Why ``group`` cannot name a consumer group, or None."""
    if not group or not group.strip():
        return "the group name is blank"
    if len(group) > MAX_GROUP_NAME_LENGTH:
        return f"the group name {group!r} is longer than {MAX_GROUP_NAME_LENGTH} characters"
    return None


def _part(name: str, config: SubscriptionGroupConfig, *, pretty: bool) -> str:
    """A group's entry in subscriptionGroup.json (``pretty``: indented as it sits there)."""
    text = lenient_json.dumps_fastjson(json.loads(config.to_json()), pretty, 2 if pretty else 0)
    indent = "\t\t" if pretty else ""
    return f"{indent}{json.dumps(name)}:{text}"


class SubscriptionGroupManager:
    def __init__(self, config: BrokerConfig, config_dir: Path) -> None:
        self.config = config
        self.file = ConfigFile(config_dir / "subscriptionGroup.json")
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.forbidden: dict[str, dict[str, int]] = {}
        self.data_version = DataVersion()
        self.save: Callable[[], None] = self.persist  # the running broker saves on a worker thread
        self._pretty = KeptParts[SubscriptionGroupConfig, str](functools.partial(_part, pretty=True))
        self._compact = KeptParts[SubscriptionGroupConfig, str](functools.partial(_part, pretty=False))

    def load(self) -> None:
        data = self.file.load()
        if isinstance(data, dict):
            try:
                table = data.get("subscriptionGroupTable") or {}
                self.table = {
                    name: SubscriptionGroupConfig.from_obj(cfg) for name, cfg in dict(table).items()
                }
                if isinstance(data.get("dataVersion"), dict):
                    self.data_version = DataVersion.from_obj(data["dataVersion"])
                forbidden = data.get("forbiddenTable")
                if isinstance(forbidden, dict):
                    self.forbidden = {str(g): dict(t) for g, t in forbidden.items() if isinstance(t, dict)}
            except (BodyError, TypeError, ValueError) as exc:
                log.warning("%s: %s; starting without saved groups", self.file.path, exc)
        missing = [g for g in BUILT_IN_GROUPS if g not in self.table]
        for group in missing:
            self.table[group] = SubscriptionGroupConfig(groupName=group)
        if missing:
            self._changed()

    def document(self, *, pretty: bool) -> str:
        """subscriptionGroup.json (``pretty``, as fastjson writes it), also the body of
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG; each group's part kept until the group changes."""
        # dict(): one-step copy, as the file is written on a worker thread while groups change
        table = dict(self.table)
        entries = (self._pretty if pretty else self._compact).parts(table, table)
        nl, pad = ("\n", "\t") if pretty else ("", "")
        depth = 1 if pretty else 0
        head = (
            ("dataVersion", json.loads(self.data_version.to_json())),
            ("forbiddenTable", dict(self.forbidden)),
        )
        items = [f"{pad}{json.dumps(k)}:{lenient_json.dumps_fastjson(v, pretty, depth)}" for k, v in head]
        groups = "{" + nl + ("," + nl).join(entries) + nl + pad + "}" if entries else "{}"
        items.append(f'{pad}"subscriptionGroupTable":{groups}')
        return "{" + nl + ("," + nl).join(items) + nl + "}"

    def persist(self) -> None:
        self.file.save(self.document(pretty=True))

    def _changed(self) -> None:
        self.data_version = DataVersion(
            counter=self.data_version.counter + 1, timestamp=int(time.time() * 1000)
        )
        self.save()

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        return self.table.get(group)

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's configuration, created with defaults when autoCreateSubscriptionGroup allows."""
        config = self.table.get(group)
        if config is None and self.config.auto_create_subscription_group and not group_name_problem(group):
            config = SubscriptionGroupConfig(groupName=group)
            self.table[group] = config
            log.info("auto-created subscription group %s", group)
            self._changed()
        return config

    def put(self, config: SubscriptionGroupConfig) -> None:
        self.put_many([config])

    def put_many(self, configs: list[SubscriptionGroupConfig]) -> None:
        """Create or replace several at once: one new version, one save."""
        changed = [c for c in configs if self.table.get(c.groupName or "") != c]
        for config in changed:
            assert config.groupName
            self.table[config.groupName] = config
        if changed:
            self._changed()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self.forbidden.pop(group, None)
        self._changed()
        return True
