"""Clusters and brokers: listings, status, runtime figures, replication, configuration, readiness."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.client.message import SendResult
    from broker.protocol.ha import HARuntimeInfo

__all__ = [
    "BrokerCleanup",
    "BrokerInfo",
    "BrokerRuntime",
    "CleanupReport",
    "ClusterConfigs",
    "ClusterList",
    "ClusterStatus",
    "ClusterSummary",
    "ConfigChange",
    "ConfigValues",
    "HARuntime",
    "HAStatus",
    "NamesrvState",
    "Readiness",
    "SendProbe",
    "SendProbes",
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


@dataclass(frozen=True, slots=True)
class BrokerCleanup:
    """What ``broker clean`` did on one broker: the steps it ran, in order, and the CommitLog's first
    offset and the disk's used ratio before and after (the CommitLog bytes freed are the difference)."""

    address: str
    steps: list[str]  # "commitlog", "consume-queues", "unused-topics"
    commitlog_min_offset_before: int
    commitlog_min_offset_after: int
    disk_ratio_before: float
    disk_ratio_after: float


@dataclass(frozen=True, slots=True)
class CleanupReport:
    brokers: list[BrokerCleanup]  # in the order of their addresses


@dataclass(frozen=True, slots=True)
class HARuntime:
    """A broker's whole answer to GET_BROKER_HA_STATUS: each slave as a master sees it, or a slave's
    replication client (``haStatus`` shows every field)."""

    address: str
    info: HARuntimeInfo


@dataclass(frozen=True, slots=True)
class ClusterConfigs:
    """What ``exportConfigs`` writes: chosen settings of each master broker (by broker name) and the
    cluster's size."""

    broker_configs: dict[str, dict[str, str]]
    namesrv_size: int
    master_size: int
    slave_size: int


@dataclass(frozen=True, slots=True)
class SendProbe:
    """One measured send: the queue picked ("" and 0 when none was), the round trip in ms, and the
    broker's answer or why it failed."""

    broker_name: str
    queue_id: int
    rt_ms: int
    result: SendResult | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class SendProbes:
    """Measured sends to one topic, in order."""

    topic: str
    probes: list[SendProbe]

    @property
    def successes(self) -> int:
        return sum(1 for p in self.probes if p.result is not None)

    @property
    def failures(self) -> int:
        return len(self.probes) - self.successes

    @property
    def avg_rt_ms(self) -> float:
        """The mean round trip leaving out the first send (it opens the connection), divided as the Java
        tools divide: by ``count - 1`` (NaN for a single send)."""
        rest = len(self.probes) - 1
        if rest == 0:
            return math.nan
        return sum(p.rt_ms for p in self.probes[1:]) / rest
