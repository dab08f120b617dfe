"""NameServer settings under RocketMQ's NamesrvConfig names, and the runtime update rules.

Fields are snake_case like every settings dataclass (see :mod:`broker.settings`); files, flags and
UPDATE_NAMESRV_CONFIG use the camelCase names Java tools know. A running NameServer only lets a
whitelist of harmless keys change: the historic RCEs (CVE-2023-33246 / -37582) came from letting
``configStorePath`` and friends be rewritten over the wire.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from broker.acl.settings import SECRET_SETTINGS, SecuritySettings
from broker.controller.config import ControllerConfig
from broker.settings import SettingsError, SettingsTarget, camel, parse_properties
from broker.store.config_files import ConfigFile

DEFAULT_HOME = Path("~/.rmqkit/namesrv").expanduser()
KV_CONFIG_FILE = "kvConfig.json"
CONFIG_STORE_FILE = "namesrv.properties"

# Keys UPDATE_NAMESRV_CONFIG may change; everything else needs a restart (or is never remote).
RUNTIME_UPDATABLE = frozenset(
    {
        "orderMessageEnable",
        "returnOrderTopicConfigToBroker",
        "scanNotActiveBrokerInterval",
        "brokerExpiredMillis",
        "enableAllTopicList",
        "enableTopicList",
        "supportActingMaster",
    }
)


class ForbiddenSettingError(SettingsError):
    """A known key that must not change over the wire (blacklisted or needing a restart)."""


@dataclass(slots=True)
class NamesrvConfig(SecuritySettings):  # + aclEnable, aclFile, tls* (broker/acl/settings.py)
    listen_host: str = "0.0.0.0"  # every interface, as Apache RocketMQ; 127.0.0.1 keeps it to this machine
    listen_port: int = 9876
    kv_config_path: Path = DEFAULT_HOME / KV_CONFIG_FILE
    config_store_path: Path = DEFAULT_HOME / CONFIG_STORE_FILE  # where runtime updates are saved
    order_message_enable: bool = False  # add ORDER_TOPIC_CONFIG's entry as orderTopicConf to routes
    return_order_topic_config_to_broker: bool = True
    scan_not_active_broker_interval: int = 5000  # ms between expiry scans
    broker_expired_millis: int = 120_000  # liveness timeout of brokers that send no heartbeatTimeoutMillis
    support_acting_master: bool = False
    enable_all_topic_list: bool = True
    enable_topic_list: bool = True
    server_channel_max_idle_time_seconds: int = 120
    config_black_list: str = "configBlackList;configStorePath;kvConfigPath"
    # a controller on this NameServer's port (RocketMQ's embedded mode); its settings (controllerPeers,
    # controllerStorePath, enableElectUncleanMaster ...) come from the same file and flags
    enable_controller_in_namesrv: bool = False
    controller: ControllerConfig = dataclasses.field(
        default_factory=lambda: ControllerConfig(controller_store_path=DEFAULT_HOME / "controller"),
        metadata={"internal": True},
    )

    @classmethod
    def in_folder(cls, folder: Path) -> NamesrvConfig:
        """Defaults, with kvConfig.json and namesrv.properties kept in ``folder``."""
        return cls(
            kv_config_path=folder / KV_CONFIG_FILE,
            config_store_path=folder / CONFIG_STORE_FILE,
            controller=ControllerConfig(controller_store_path=folder / "controller"),
        )

    def validate(self) -> None:
        self.validate_security()
        for name in ("scan_not_active_broker_interval", "broker_expired_millis"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"setting {camel(name)}: {getattr(self, name)} must be positive")
        if not 0 <= self.listen_port <= 65535:
            raise SettingsError(f"setting listenPort: {self.listen_port} is not a TCP port")

    def to_properties(self) -> str:
        """GET_NAMESRV_CONFIG's body: ``key=value`` lines under the Java names, never a password."""
        props = SettingsTarget(self).as_properties()
        return "".join(f"{key}={props[key]}\n" for key in sorted(props) if key not in SECRET_SETTINGS)

    def apply_properties(self, text: str, origin: str) -> list[str]:
        """Apply an UPDATE_NAMESRV_CONFIG body all or nothing; returns the keys given.

        Raises :class:`ForbiddenSettingError` for blacklisted or restart-only keys and
        :class:`SettingsError` for unknown keys, bad values or unparsable text, naming the key.
        """
        items = parse_properties(text, origin)
        staged = dataclasses.replace(self)
        target = SettingsTarget(staged)
        blacklist = {k.strip() for k in self.config_black_list.split(";") if k.strip()}
        for key, _ in items:
            entry = target.index.get(key)
            if entry is None:
                raise SettingsError(f"unknown setting {key!r} ({origin})")
            name = target.key(entry[1])  # other spellings must not slip past the blacklist
            if name in blacklist or key in blacklist:
                raise ForbiddenSettingError(f"setting {name} is in the config black list ({origin})")
            if name not in RUNTIME_UPDATABLE:
                raise ForbiddenSettingError(f"setting {name} cannot change while running ({origin})")
        target.apply(items, origin)
        staged.validate()
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(staged, field.name))
        return [key for key, _ in items]

    def persist(self) -> None:
        """Save the current settings where Java's NameServer keeps them after an update."""
        ConfigFile(self.config_store_path).save(self.to_properties())
