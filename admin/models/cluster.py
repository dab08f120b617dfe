"""Clusters and brokers: listings, status, runtime figures, replication, configuration, readiness."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BrokerInfo",
    "BrokerRuntime",
    "ClusterList",
    "ClusterStatus",
    "ClusterSummary",
    "ConfigChange",
    "ConfigValues",
    "HAStatus",
    "NamesrvState",
    "Readiness",
]


@dataclass(frozen=True, slots=True)
class HAStatus:
    """Replication as one broker sees it (GET_BROKER_HA_STATUS)."""

    master: bool
    commitlog_max_offset: int
    replicated_offset: int | None  # slave: its CommitLog end; master: the least a connected slave holds
    lag_bytes: int | None  # how far that slave is behind its master (None: unknown)
    slaves: int  # master: slaves connected
    in_sync_slaves: int
    master_ha_address: str | None  # slave: where it replicates from
    master_alive: bool | None  # slave: connected to its master and hearing from it
    truncated_bytes: int  # slave: bytes cut to match its master (reconcile)
    last_truncate: str | None


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """One broker of a cluster with its runtime figures; ``error`` says why it did not answer."""

    cluster: str
    broker_name: str
    broker_id: int
    address: str
    role: str  # MASTER, SLAVE (by broker id) or UNKNOWN (broker status of an unregistered broker)
    reachable: bool
    error: str | None
    version: str | None
    put_tps: float
    get_tps: float
    disk_ratio: float | None
    commitlog_min_offset: int | None
    commitlog_max_offset: int | None
    runtime: dict[str, str]  # every GET_BROKER_RUNTIME_INFO key, for layouts that show more
    ha: HAStatus | None = None  # None: the broker does not answer GET_BROKER_HA_STATUS


@dataclass(frozen=True, slots=True)
class ClusterList:
    brokers: list[BrokerInfo]  # sorted by cluster, broker name, broker id


@dataclass(frozen=True, slots=True)
class NamesrvState:
    address: str
    reachable: bool
    error: str | None


@dataclass(frozen=True, slots=True)
class ClusterSummary:
    name: str
    brokers: int
    masters: int
    unreachable: int
    put_tps: float
    get_tps: float
    max_disk_ratio: float | None


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    namesrvs: list[NamesrvState]
    clusters: list[ClusterSummary]
    brokers: list[BrokerInfo]


@dataclass(frozen=True, slots=True)
class BrokerRuntime:
    address: str
    values: dict[str, str]  # sorted by key


@dataclass(frozen=True, slots=True)
class ConfigValues:
    """A server's configuration (broker or NameServer)."""

    address: str
    values: dict[str, str]  # sorted by key


@dataclass(frozen=True, slots=True)
class ConfigChange:
    addresses: list[str]  # servers changed
    values: dict[str, str]


@dataclass(frozen=True, slots=True)
class Readiness:
    ready: bool
    method: str  # "http" or "remoting"
    target: str  # the URL or NameServer polled
    detail: str  # why it is (not) ready
    waited_ms: int
