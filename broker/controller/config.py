"""Controller settings under RocketMQ's ControllerConfig names, and the few a running controller
lets UPDATE_CONTROLLER_CONFIG change.

``controllerPeers`` lists every controller as ``id-host:port`` separated by ';' (the remoting
addresses brokers and tools use); with more than one peer the controllers replicate through Raft,
each on its remoting port + 1 (:data:`RAFT_PORT_OFFSET`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from broker.settings import SettingsError, SettingsTarget, camel, parse_properties

DEFAULT_HOME = Path("~/.rmqkit/controller").expanduser()
RAFT_PORT_OFFSET = 1
RUNTIME_UPDATABLE = frozenset(
    {"enableElectUncleanMaster", "scanNotActiveBrokerInterval", "notifyBrokerRoleChanged"}
)


@dataclass(slots=True)
class ControllerConfig:
    listen_host: str = "127.0.0.1"
    listen_port: int = 9878
    controller_store_path: Path = DEFAULT_HOME
    controller_peers: str = ""  # "n0-127.0.0.1:9878;n1-127.0.0.1:9888;n2-..."; empty: this one alone
    controller_self_id: str = "n0"
    controller_group: str = "DefaultControllerGroup"
    scan_not_active_broker_interval: int = 1000  # ms between liveness scans (elections follow them)
    enable_elect_unclean_master: bool = False  # may a broker outside the SyncStateSet become master
    notify_broker_role_changed: bool = True  # push each election to the group's brokers (code 1008)

    @property
    def peers(self) -> dict[str, str]:
        """Peer id -> remoting address, this controller included."""
        result: dict[str, str] = {}
        for item in self.controller_peers.split(";"):
            item = item.strip()
            if not item:
                continue
            peer_id, sep, addr = item.partition("-")
            if not sep or ":" not in addr:
                raise SettingsError(f"setting controllerPeers: {item!r} is not id-host:port")
            result[peer_id] = addr
        return result

    @property
    def replicated(self) -> bool:
        return len(self.peers) > 1

    def validate(self) -> None:
        if self.scan_not_active_broker_interval <= 0:
            raise SettingsError("setting scanNotActiveBrokerInterval: must be positive")
        if not 0 <= self.listen_port <= 65535:
            raise SettingsError(f"setting listenPort: {self.listen_port} is not a TCP port")
        peers = self.peers
        if peers and self.controller_self_id not in peers:
            raise SettingsError(
                f"setting controllerSelfId: {self.controller_self_id!r} is not one of controllerPeers"
            )

    def to_properties(self) -> str:
        """GET_CONTROLLER_CONFIG's body: ``key=value`` lines under the Java names."""
        props = SettingsTarget(self).as_properties()
        return "".join(f"{key}={props[key]}\n" for key in sorted(props))

    def apply_properties(self, text: str, origin: str) -> list[str]:
        """Apply an UPDATE_CONTROLLER_CONFIG body all or nothing; returns the keys given."""
        items = parse_properties(text, origin)
        staged = dataclasses.replace(self)
        target = SettingsTarget(staged)
        for key, _ in items:
            entry = target.index.get(key)
            if entry is None:
                raise SettingsError(f"unknown setting {key!r} ({origin})")
            if target.key(entry[1]) not in RUNTIME_UPDATABLE:
                raise SettingsError(f"setting {camel(entry[1])} cannot change while running ({origin})")
        target.apply(items, origin)
        staged.validate()
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(staged, f.name))
        return [key for key, _ in items]
