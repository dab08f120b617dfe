"""The NameServer's routing state, with no IO: the server feeds it registrations,
heartbeats, closed connections and the clock, and encodes what it answers.

Tables, as in RocketMQ's RouteInfoManager: topic -> brokerName -> QueueData; brokerName ->
BrokerData (cluster, brokerId -> address); cluster -> brokerNames; (cluster, address) -> liveness.
A connection is an opaque token here (whatever the transport hands over), only compared by
identity, so the table can be driven directly in tests and by an embedded broker.

Costs stay with the work: a lookup joins its brokers' and queues' JSON, each encoded once and kept
(a broker's until its addresses change, a queue's by value, as most topics' queues look alike), a
registration costs the topics it carries, and a broker leaving costs its own topics (an index
brokerName -> topics), never the whole table.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from broker.protocol.bodies import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicRouteData,
    encode_route,
)

log = logging.getLogger(__name__)

MASTER_ID = 0
MAX_KEPT_QUEUE_JSON = 65_536
PERM_READ = 4
PERM_WRITE = 2


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class BrokerAddrInfo(NamedTuple):
    """Liveness key: the same address may belong to brokers of two clusters."""

    cluster: str
    addr: str


@dataclass(slots=True)
class BrokerLiveInfo:
    last_update_ms: int
    timeout_ms: int
    data_version: DataVersion
    channel: object | None
    ha_server_addr: str


class BrokerIdentity(NamedTuple):
    """Who is registering or leaving: the fields of an UNREGISTER_BROKER."""

    cluster: str
    addr: str
    broker_name: str
    broker_id: int


@dataclass(frozen=True, slots=True)
class RegisterResult:
    """What a slave is told about its master (both None for masters or while no master is live)."""

    master_addr: str | None = None
    ha_server_addr: str | None = None


class RouteTable:
    def __init__(self, clock: Callable[[], int] = _monotonic_ms) -> None:
        self._clock = clock
        self._topics: dict[str, dict[str, QueueData]] = {}
        self._brokers: dict[str, BrokerData] = {}
        self._clusters: dict[str, set[str]] = {}
        self._live: dict[BrokerAddrInfo, BrokerLiveInfo] = {}
        self._filter_servers: dict[BrokerAddrInfo, list[str]] = {}
        self._topics_of: dict[str, set[str]] = {}  # brokerName -> topics it has queue data for
        # the JSON of each broker and of each distinct queue data, for (what, standard)
        self._broker_json: dict[tuple[str, bool], bytes] = {}
        self._queue_json: dict[tuple[str | None, int, int, int, int, bool], bytes] = {}

    # -- registration ---------------------------------------------------------------------------

    def register_broker(
        self,
        identity: BrokerIdentity,
        *,
        ha_server_addr: str,
        timeout_ms: int,
        data_version: DataVersion,
        topics: Mapping[str, TopicConfig],
        filter_servers: list[str] | None = None,
        enable_acting_master: bool | None = None,
        zone_name: str | None = None,
        channel: object | None = None,
    ) -> RegisterResult | None:
        """REGISTER_BROKER. Returns None when refused: another address holds this id with a newer
        stateVersion (a stale master coming back after a failover)."""
        cluster, addr, name, broker_id = identity
        key = BrokerAddrInfo(cluster, addr)
        self._clusters.setdefault(cluster, set()).add(name)
        brokers = self._brokers.get(name)
        first = brokers is None
        if brokers is None:
            brokers = self._brokers[name] = BrokerData(cluster=cluster, brokerName=name)
        before = _copy_broker(brokers)
        old_version_broker = enable_acting_master is None  # brokers before 5.0 do not send the flag
        brokers.enableActingMaster = bool(enable_acting_master)
        brokers.zoneName = zone_name
        addrs = brokers.brokerAddrs
        # One address holds one id: a slave promoted to master re-registers its address as id 0.
        for stale_id in [i for i, a in addrs.items() if a == addr and i != broker_id]:
            del addrs[stale_id]
        holder = addrs.get(broker_id)
        if holder is not None and holder != addr:
            holder_live = self._live.get(BrokerAddrInfo(cluster, holder))
            if holder_live is not None and holder_live.data_version.stateVersion > data_version.stateVersion:
                log.warning("%s refused: %s holds its id with a newer state version", identity, holder)
                self._live.pop(key, None)
                self._brokers_changed()  # a stale id of this address may have gone
                return None
        first = first or holder is None
        addrs[broker_id] = addr
        if _copy_broker(brokers) != before:
            self._brokers_changed()
        is_master = broker_id == MASTER_ID
        if is_master or (not old_version_broker and broker_id == min(addrs)):  # master or prime slave
            changed = first or self._version_changed(key, data_version)
            for topic, config in topics.items():
                per_broker = self._topics.get(topic)
                if per_broker is None:
                    per_broker = self._topics[topic] = {}
                elif not changed and name in per_broker:
                    continue
                perm = config.perm if is_master else config.perm & ~PERM_WRITE
                queue_data = _queue_data(name, config, perm)
                if per_broker.get(name) != queue_data:
                    per_broker[name] = queue_data
                    self._topics_of.setdefault(name, set()).add(topic)
        if key not in self._live:
            log.info("new broker registered: %s, HA %s", identity, ha_server_addr)
        self._live[key] = BrokerLiveInfo(self._clock(), timeout_ms, data_version, channel, ha_server_addr)
        servers = list(filter_servers) if filter_servers else None
        if filter_servers is not None and self._filter_servers.get(key) != servers:
            if servers:
                self._filter_servers[key] = servers
            else:
                self._filter_servers.pop(key, None)
            self._brokers_changed()
        master_addr = None if is_master else addrs.get(MASTER_ID)
        master_live = self._live.get(BrokerAddrInfo(cluster, master_addr)) if master_addr else None
        if master_live is None:
            return RegisterResult()
        return RegisterResult(master_addr=master_addr, ha_server_addr=master_live.ha_server_addr)

    def unregister_brokers(self, identities: Iterable[BrokerIdentity]) -> None:
        """UNREGISTER_BROKER (also expiry and closed connections). A brokerName whose last address
        goes takes its queue data with it; with acting master on, losing the master wipes write."""
        removed: set[str] = set()
        reduced: set[str] = set()
        for ident in identities:
            key = BrokerAddrInfo(ident.cluster, ident.addr)
            if self._live.pop(key, None) is not None:
                log.info("broker %s %s at %s unregistered", ident.cluster, ident.broker_name, ident.addr)
            if self._filter_servers.pop(key, None) is not None:
                self._brokers_changed()
            brokers = self._brokers.get(ident.broker_name)
            if brokers is None:
                continue
            for broker_id in [i for i, a in brokers.brokerAddrs.items() if a == ident.addr]:
                del brokers.brokerAddrs[broker_id]
                self._brokers_changed()
            if brokers.brokerAddrs:
                reduced.add(ident.broker_name)
                continue
            del self._brokers[ident.broker_name]
            removed.add(ident.broker_name)
            names = self._clusters.get(ident.cluster)
            if names is not None:
                names.discard(ident.broker_name)
                if not names:
                    del self._clusters[ident.cluster]
        for name in removed:
            for topic in self._topics_of.pop(name, ()):
                self._drop_queue_data(topic, name)
        for name in reduced:
            brokers = self._brokers.get(name)
            if brokers is None or not brokers.enableActingMaster or min(brokers.brokerAddrs) == MASTER_ID:
                continue
            for topic in self._topics_of.get(name, ()):
                self._topics[topic][name].perm &= ~PERM_WRITE

    def _drop_queue_data(self, topic: str, broker_name: str) -> None:
        """Forget one broker's queues of ``topic`` (the caller keeps ``_topics_of`` in step)."""
        per_broker = self._topics.get(topic)
        if per_broker is None:
            return
        per_broker.pop(broker_name, None)
        if not per_broker:
            del self._topics[topic]

    def _brokers_changed(self) -> None:
        """A broker's addresses or flags changed: its kept JSON is stale."""
        self._broker_json.clear()

    def register_topic(self, topic: str, queue_datas: list[QueueData]) -> bool:
        """REGISTER_TOPIC_IN_NAMESRV: only for a new topic whose brokers are all known."""
        if topic in self._topics or not queue_datas:
            return False
        if any(qd.brokerName not in self._brokers for qd in queue_datas):
            log.warning("topic %s not registered: it names an unknown broker", topic)
            return False
        self._topics[topic] = {qd.brokerName or "": dataclasses.replace(qd) for qd in queue_datas}
        for name in self._topics[topic]:
            self._topics_of.setdefault(name, set()).add(topic)
        return True

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        """DELETE_TOPIC_IN_NAMESRV: everywhere, or only on the brokers of ``cluster``."""
        per_broker = self._topics.get(topic)
        if per_broker is None:
            return
        names = list(per_broker) if not cluster else self._clusters.get(cluster, set()) & per_broker.keys()
        for name in names:
            self._topics_of.get(name, set()).discard(topic)
            self._drop_queue_data(topic, name)

    def set_write_perm(self, broker_name: str, writable: bool) -> int:
        """WIPE/ADD_WRITE_PERM_OF_BROKER: returns how many topics of the broker changed. Adding
        gives read+write, as Java does, whatever the perm was before the wipe."""
        topics = self._topics_of.get(broker_name, set())
        for topic in topics:
            qd = self._topics[topic][broker_name]
            qd.perm = PERM_READ | PERM_WRITE if writable else qd.perm & ~PERM_WRITE
        return len(topics)

    # -- liveness -------------------------------------------------------------------------------

    def touch(self, cluster: str, addr: str) -> bool:
        """A heartbeat: refresh a registered broker's liveness; False when it is not registered."""
        live = self._live.get(BrokerAddrInfo(cluster, addr))
        if live is None:
            return False
        live.last_update_ms = self._clock()
        return True

    def data_version(self, cluster: str, addr: str) -> DataVersion | None:
        live = self._live.get(BrokerAddrInfo(cluster, addr))
        return None if live is None else live.data_version

    def is_data_version_changed(self, cluster: str, addr: str, version: DataVersion) -> bool:
        return self._version_changed(BrokerAddrInfo(cluster, addr), version)

    def _version_changed(self, key: BrokerAddrInfo, version: DataVersion) -> bool:
        live = self._live.get(key)
        return live is None or live.data_version != version

    def scan_not_active(self) -> list[BrokerLiveInfo]:
        """Unregister every broker silent for longer than its timeout; returns their liveness
        records so the caller can close their connections."""
        now = self._clock()
        expired = {k: v for k, v in self._live.items() if v.last_update_ms + v.timeout_ms < now}
        for key, live in expired.items():
            log.warning(
                "broker %s at %s expired after %d ms of silence", key.cluster, key.addr, live.timeout_ms
            )
        self._unregister_addrs(expired)
        return list(expired.values())

    def channel_closed(self, channel: object) -> None:
        """Drop every broker that registered over a connection that has just closed."""
        self._unregister_addrs([k for k, v in self._live.items() if v.channel is channel])

    def _unregister_addrs(self, keys: Iterable[BrokerAddrInfo]) -> None:
        identities = []
        for key in keys:
            ident = self._identity_of(key)
            if ident is None:
                self._live.pop(key, None)
                self._filter_servers.pop(key, None)
            else:
                identities.append(ident)
        self.unregister_brokers(identities)

    def _identity_of(self, key: BrokerAddrInfo) -> BrokerIdentity | None:
        for brokers in self._brokers.values():
            if brokers.cluster != key.cluster:
                continue
            for broker_id, addr in brokers.brokerAddrs.items():
                if addr == key.addr:
                    return BrokerIdentity(key.cluster, addr, brokers.brokerName or "", broker_id)
        return None

    # -- queries --------------------------------------------------------------------------------

    def route(self, topic: str, *, acting_master: bool = False) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC's answer (copies), or None when no live broker hosts the topic.

        With ``acting_master`` a masterless brokerName whose queues lost write permission shows
        its lowest slave as id 0, so clients keep reading from it."""
        per_broker = self._topics.get(topic)
        if not per_broker:
            return None
        names = sorted(per_broker)
        broker_datas = [_copy_broker(self._brokers[n]) for n in names if n in self._brokers]
        if not broker_datas:
            return None
        route = TopicRouteData(
            queueDatas=[dataclasses.replace(per_broker[n]) for n in names], brokerDatas=broker_datas
        )
        if self._filter_servers:
            for bd in broker_datas:
                for addr in bd.brokerAddrs.values():
                    servers = self._filter_servers.get(BrokerAddrInfo(bd.cluster or "", addr))
                    if servers is not None:
                        route.filterServerTable[addr] = list(servers)
        if acting_master:
            for bd in broker_datas:
                addrs = bd.brokerAddrs
                qd = per_broker.get(bd.brokerName or "")
                if (
                    addrs
                    and MASTER_ID not in addrs
                    and bd.enableActingMaster
                    and qd
                    and not qd.perm & PERM_WRITE
                ):
                    addrs[MASTER_ID] = addrs.pop(min(addrs))
        return route

    def route_body(self, topic: str, *, acting_master: bool, standard: bool) -> bytes | None:
        """:meth:`route` encoded as GET_ROUTEINFO_BY_TOPIC answers it, joined from the kept JSON of
        its brokers and queues (acting master rewrites addresses per answer: encoded whole)."""
        per_broker = self._topics.get(topic)
        if not per_broker:
            return None
        if acting_master:
            route = self.route(topic, acting_master=True)
            return None if route is None else route.to_json(standard=standard)
        names = sorted(per_broker)
        brokers = [self._broker_fragment(n, standard) for n in names if n in self._brokers]
        if not brokers:
            return None
        servers: dict[str, list[str]] = {}
        if self._filter_servers:
            for bd in (self._brokers[n] for n in names if n in self._brokers):
                for addr in bd.brokerAddrs.values():
                    found = self._filter_servers.get(BrokerAddrInfo(bd.cluster or "", addr))
                    if found is not None:
                        servers[addr] = list(found)
        queues = [self._queue_fragment(per_broker[n], standard) for n in names]
        return encode_route(brokers, queues, servers, standard=standard)

    def _broker_fragment(self, name: str, standard: bool) -> bytes:
        key = (name, standard)
        fragment = self._broker_json.get(key)
        if fragment is None:
            fragment = self._broker_json[key] = _copy_broker(self._brokers[name]).to_json(standard=standard)
        return fragment

    def _queue_fragment(self, qd: QueueData, standard: bool) -> bytes:
        key = (qd.brokerName, qd.readQueueNums, qd.writeQueueNums, qd.perm, qd.topicSysFlag, standard)
        fragment = self._queue_json.get(key)
        if fragment is None:
            if len(self._queue_json) >= MAX_KEPT_QUEUE_JSON:  # as many as brokers x distinct shapes
                self._queue_json.clear()
            fragment = self._queue_json[key] = qd.to_json(standard=standard)
        return fragment

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            brokerAddrTable={name: _copy_broker(bd) for name, bd in sorted(self._brokers.items())},
            clusterAddrTable={cluster: sorted(names) for cluster, names in sorted(self._clusters.items())},
        )

    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def topics_of_cluster(self, cluster: str) -> list[str]:
        """Topics with queue data on any broker of ``cluster`` (empty for an unknown cluster)."""
        names = self._clusters.get(cluster, set())
        return sorted(t for t, per_broker in self._topics.items() if names & per_broker.keys())

    def live_brokers(self) -> dict[BrokerAddrInfo, BrokerLiveInfo]:
        """Registered broker addresses and their liveness (a copy, for status pages and metrics)."""
        return {key: dataclasses.replace(live) for key, live in self._live.items()}


def _queue_data(broker_name: str, config: TopicConfig, perm: int) -> QueueData:
    return QueueData(
        brokerName=broker_name,
        readQueueNums=config.readQueueNums,
        writeQueueNums=config.writeQueueNums,
        perm=perm,
        topicSysFlag=config.topicSysFlag,
    )


def _copy_broker(bd: BrokerData) -> BrokerData:
    return dataclasses.replace(bd, brokerAddrs=dict(sorted(bd.brokerAddrs.items())))
