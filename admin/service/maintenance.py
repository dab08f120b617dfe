"""Broker maintenance: one topic's or group's configuration per broker, topics and groups created in
batches, a topic's permission, ConsumeQueue inspection and the store clean-ups (expired ConsumeQueues,
expired CommitLog files, queues of topics without a configuration); a broker's producers and its
replication runtime, a cluster's chosen settings and load figures, and measured test sends; how a group
reads a topic (PULL or POP) and the CommitLog read-ahead mode."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from admin.errors import BadInput, NotFound, OperationFailed
from admin.service.base import ServiceBase, admin_call, gather, master_address
from broker.client.admin_api import RemoteError
from broker.protocol.bodies import BodyError, JsonBody, TopicConfig, load_json
from broker.protocol.codes import RequestCode, ResponseCode

if TYPE_CHECKING:
    from admin.models.broker_ops import (
        BrokerMetrics,
        ClientVersion,
        ClusterMetrics,
        ConsumeModes,
        ReadAheadChanges,
    )
    from admin.models.cluster import CleanupReport, ClusterConfigs, HARuntime, SendProbe, SendProbes
    from admin.models.groups import BrokerProducers, GroupConfigAt
    from admin.models.topic_details import PermChange
    from broker.client.message import Message
    from broker.client.producer import Producer
    from broker.protocol.bodies import ClusterInfo, MessageQueue
    from broker.protocol.group_bodies import QueryConsumeQueueResponseBody, SubscriptionGroupConfig

J = TypeVar("J", bound=JsonBody)
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"  # where half (prepared) transactional messages are put
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # where delayed messages wait, one queue per delay level
DAY_MS = 24 * 3600 * 1000
# the broker settings exportConfigs keeps (ExportConfigsCommand.needBrokerProprties)
EXPORTED_BROKER_KEYS = (
    "brokerClusterName",
    "brokerId",
    "brokerName",
    "brokerRole",
    "fileReservedTime",
    "filterServerNums",
    "flushDiskType",
    "maxMessageSize",
    "messageDelayLevel",
    "msgTraceTopicName",
    "slaveReadEnable",
    "traceOn",
    "traceTopicEnable",
    "useTLS",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
)


def load_config_list(data: bytes, cls: type[J], what: str) -> list[J]:
    """A JSON array of configurations (``updateTopicList``/``updateSubGroupList`` files), read as
    leniently as fastjson reads it; BadInput naming ``what`` when it is not one."""
    try:
        doc = load_json(data, what)
        if not isinstance(doc, list):
            raise BodyError(f"{what} is not a JSON list")
        return [cls.from_obj(item) for item in doc]
    except BodyError as exc:
        raise BadInput(str(exc)) from None


def load_topic_configs(data: bytes, what: str = "topic config file") -> list[TopicConfig]:
    return load_config_list(data, TopicConfig, what)


def load_group_configs(data: bytes, what: str = "group config file") -> list[SubscriptionGroupConfig]:
    from broker.protocol.group_bodies import SubscriptionGroupConfig

    return load_config_list(data, SubscriptionGroupConfig, what)


class MaintenanceOps(ServiceBase):
    # -- topics and groups ------------------------------------------------------------------------
    @admin_call
    async def topic_config_get(self, topic: str, broker: str | None = None) -> dict[str, TopicConfig]:
        """Broker name -> the topic's configuration there: on ``broker`` only, else on every master of
        its route (one GET_TOPIC_CONFIG per broker)."""
        targets = {broker: broker} if broker is not None else self._route_masters(await self._route(topic))
        configs = await gather(self.api.topic_config(a, topic) for a in targets.values())
        return dict(zip(targets, configs, strict=True))

    @admin_call
    async def topic_set_perm(
        self, topic: str, perm: int, cluster: str | None = None, broker: str | None = None
    ) -> list[PermChange]:
        """Change only the permission of ``topic`` on one master (``broker``) or on every master of a
        cluster; every other field keeps the value the broker has. A broker already at ``perm`` is
        listed but not written to."""
        from admin.models.topic_details import PermChange

        if perm not in (2, 4, 6):
            raise BadInput(f"perm must be 2 (W), 4 (R) or 6 (RW), not {perm}")
        route = await self._route(topic)
        route_masters = self._route_masters(route)
        if broker is not None:
            if broker not in route_masters.values():
                raise NotFound(f"{broker} is not a master broker of topic {topic}")
            targets = [broker]
        else:
            targets = list((await self._broker_targets(cluster, None)).values())
        current = await gather(self.api.topic_config(a, topic) for a in targets)
        changes = [
            PermChange(addr, config.perm, replace(config, perm=perm))
            for addr, config in zip(targets, current, strict=True)
        ]
        await gather(self.api.create_topic(c.address, c.config) for c in changes if c.old_perm != perm)
        return changes

    @admin_call
    async def topic_create_list(
        self, configs: Sequence[TopicConfig], cluster: str | None = None, broker: str | None = None
    ) -> list[str]:
        """Create or update ``configs`` on one broker or a cluster's masters with one request each
        (a broker takes all of them or refuses all); the addresses written."""
        targets = list((await self._broker_targets(cluster, broker)).values())
        await gather(self.api.create_topics(a, configs) for a in targets)
        return targets

    @admin_call
    async def group_config_get(self, group: str) -> list[GroupConfigAt]:
        """The group's configuration on every broker that has it (its master, else any replica);
        NotFound when none has."""
        from admin.models.groups import GroupConfigAt

        info = await self._cluster()
        cluster_of = {b: c for c, names in info.clusterAddrTable.items() for b in names}
        brokers = sorted(
            (name, addr)
            for name, data in info.brokerAddrTable.items()
            if (addr := master_address(data)) is not None
        )
        found = await gather(self._group_or_none(addr, group) for _, addr in brokers)
        out = [
            GroupConfigAt(cluster_of.get(name), name, config)
            for (name, _), config in zip(brokers, found, strict=True)
            if config is not None
        ]
        if not out:
            raise NotFound(f"consumer group {group} not found")
        return out

    async def _group_or_none(self, addr: str, group: str) -> SubscriptionGroupConfig | None:
        try:
            return await self.api.group_config(addr, group)
        except RemoteError as exc:
            if exc.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
                return None
            raise

    @admin_call
    async def group_create_list(
        self,
        configs: Sequence[SubscriptionGroupConfig],
        cluster: str | None = None,
        broker: str | None = None,
    ) -> list[str]:
        """Create or update subscription groups in one request per target broker; the addresses."""
        targets = list((await self._broker_targets(cluster, broker)).values())
        await gather(self.api.create_groups(a, configs) for a in targets)
        return targets

    # -- the store -------------------------------------------------------------------------------
    @admin_call
    async def consume_queue_query(
        self,
        topic: str,
        queue_id: int,
        index: int,
        count: int = 10,
        group: str | None = None,
        broker: str | None = None,
    ) -> QueryConsumeQueueResponseBody:
        """``count`` ConsumeQueue units of one queue from ``index`` (with ``group``, also its
        subscription); on ``broker``, else on the first broker of the topic's route."""
        if broker is None:
            broker = next(iter(self._route_masters(await self._route(topic)).values()), None)
            if broker is None:
                raise NotFound(f"topic {topic} has no master broker in its route")
        return await self.api.query_consume_queue(broker, topic, queue_id, index, count, group)

    @admin_call
    async def broker_clean_expired_consume_queues(
        self, cluster: str | None = None, broker: str | None = None
    ) -> list[str]:
        """Remove ConsumeQueues whose messages are all gone from the CommitLog; the addresses asked."""
        return await self._on_brokers(self.api.clean_expired_consume_queue, cluster, broker)

    @admin_call
    async def broker_delete_expired_commitlog(
        self, cluster: str | None = None, broker: str | None = None
    ) -> list[str]:
        """Delete expired CommitLog files now rather than at ``deleteWhen``; the addresses asked."""
        return await self._on_brokers(self.api.delete_expired_commitlog, cluster, broker)

    @admin_call
    async def broker_clean_unused_topics(
        self, cluster: str | None = None, broker: str | None = None
    ) -> list[str]:
        """Remove ConsumeQueues of topics the broker has no configuration for; the addresses asked."""
        return await self._on_brokers(self.api.clean_unused_topic, cluster, broker)

    async def _on_brokers(
        self, call: Callable[[str], Awaitable[None]], cluster: str | None, broker: str | None
    ) -> list[str]:
        """``call(address)`` on each of :meth:`_every_broker`; the addresses asked."""
        addrs = await self._every_broker(cluster, broker)
        await gather(call(a) for a in addrs)
        return addrs

    async def _every_broker(self, cluster: str | None, broker: str | None) -> list[str]:
        """``broker``, else every broker (masters and slaves, as mqadmin does) of ``cluster``, else
        of every cluster."""
        if broker is not None:
            return [broker]
        addrs = [a for ids in await self._broker_sets(cluster) for a in ids.values()]
        if not addrs:
            raise NotFound("no broker is registered with the NameServer")
        return addrs

    @admin_call
    async def broker_clean(
        self,
        cluster: str | None = None,
        broker: str | None = None,
        commitlog: bool = True,
        consume_queues: bool = True,
        unused_topics: bool = True,
    ) -> CleanupReport:
        """The store clean-ups in the order that frees most (expired CommitLog files, then the
        ConsumeQueues left without messages, then those of topics without a configuration), with the
        CommitLog's first offset and the disk's used ratio before and after on each broker."""
        from admin.models.cluster import BrokerCleanup, CleanupReport

        steps = [
            (name, call)
            for name, call, wanted in (
                ("commitlog", self.api.delete_expired_commitlog, commitlog),
                ("consume-queues", self.api.clean_expired_consume_queue, consume_queues),
                ("unused-topics", self.api.clean_unused_topic, unused_topics),
            )
            if wanted
        ]

        async def clean(addr: str) -> BrokerCleanup:
            before = await self.api.runtime_info(addr)
            for _name, call in steps:
                await call(addr)
            after = await self.api.runtime_info(addr)
            return BrokerCleanup(
                addr,
                [name for name, _ in steps],
                _number(before, "commitLogMinOffset", int),
                _number(after, "commitLogMinOffset", int),
                _number(before, "commitLogDiskRatio", float),
                _number(after, "commitLogDiskRatio", float),
            )

        return CleanupReport(await gather(clean(a) for a in await self._every_broker(cluster, broker)))

    # -- producers, replication, settings ---------------------------------------------------------
    @admin_call
    async def producer_table(self, broker: str | None = None) -> BrokerProducers:
        """The producers connected to ``broker`` (else the only broker registered), by group
        (GET_ALL_PRODUCER_INFO), in the broker's order."""
        from admin.models.groups import BrokerProducers, ProducerInstance

        addr = await self._one_broker(broker)
        table = await self.api.all_producers(addr)
        groups = {
            group: [
                ProducerInstance(
                    p.clientId or "", p.remoteIP or "", p.language.name, p.version, p.lastUpdateTimestamp
                )
                for p in producers
            ]
            for group, producers in table.data.items()
        }
        return BrokerProducers(addr, groups)

    @admin_call
    async def broker_ha_runtime(
        self, cluster: str | None = None, broker: str | None = None
    ) -> list[HARuntime]:
        """The replication runtime of ``broker``, else of every master of ``cluster``."""
        from admin.models.cluster import HARuntime
        from broker.client.ha_api import ha_status

        if broker is not None:
            addrs = [broker]
        else:
            if cluster is None:
                raise BadInput("give -b brokerAddr or -c clusterName")
            addrs = list(self._masters(await self._cluster(), cluster).values())
        infos = await gather(ha_status(self.api, a) for a in addrs)
        return [HARuntime(a, info) for a, info in zip(addrs, infos, strict=True)]

    @admin_call
    async def cluster_configs(self, cluster: str) -> ClusterConfigs:
        """The settings ``exportConfigs`` keeps of each master of ``cluster`` (one GET_BROKER_CONFIG
        each), and how many NameServers, masters and slaves the cluster has."""
        from admin.models.cluster import ClusterConfigs

        info = await self._cluster()
        if cluster not in info.clusterAddrTable:
            raise NotFound(f"cluster {cluster} not found")
        masters, slaves = [], 0
        for name in sorted(info.clusterAddrTable[cluster]):
            data = info.brokerAddrTable.get(name)
            addrs = data.brokerAddrs if data is not None else {}
            if 0 in addrs:
                masters.append(addrs[0])
                slaves += len(addrs) - 1
        configs = await gather(self.api.broker_config(a) for a in masters)
        chosen = [{k: c[k] for k in EXPORTED_BROKER_KEYS if k in c} for c in configs]
        return ClusterConfigs(
            {c.get("brokerName", a): c for a, c in zip(masters, chosen, strict=True)},
            len(self.namesrv),
            len(masters),
            slaves,
        )

    @admin_call
    async def cluster_metrics(self, cluster: str | None = None) -> ClusterMetrics:
        """``exportMetrics``' figures of each master of ``cluster`` (the only cluster when None) and
        their sums: runtime info, settings, topic and group tables, the two system topics' puts, and
        the versions of the consumers online."""
        from admin.models.broker_ops import ClusterMetrics, MetricsTotals
        from admin.service.topics import system_names

        targets = await self._broker_targets(cluster, None)
        info = await self._cluster()
        name = cluster if cluster is not None else next(iter(info.clusterAddrTable))
        system = system_names(info)
        brokers = await gather(self._broker_metrics(n, a, system) for n, a in targets.items())
        # each total is the sum of the brokers' field of the same name
        totals = MetricsTotals(
            *(sum(getattr(b, f) for b in brokers) for f in MetricsTotals.__dataclass_fields__)
        )
        return ClusterMetrics(name, brokers, totals)

    async def _broker_metrics(self, name: str, addr: str, system: frozenset[str]) -> BrokerMetrics:
        from admin.models.broker_ops import BrokerMetrics
        from admin.models.names import TopicKind, is_system_group, topic_kind
        from admin.service.cluster import first_float

        since = int(time.time() * 1000) - DAY_MS
        runtime, config, topics, groups, trans, schedule = await asyncio.gather(
            self.api.runtime_info(addr),
            self.api.broker_config(addr),
            self.api.all_topic_config(addr),
            self.api.all_group_config(addr),
            self._puts_since(addr, TRANS_HALF_TOPIC, since),
            self._puts_since(addr, SCHEDULE_TOPIC, since),
        )
        user_groups = sorted(g for g in groups if not is_system_group(g))
        return BrokerMetrics(
            name,
            addr,
            config.get("clientCallbackExecutorThreads"),
            runtime.get("totalMemKBytes"),
            runtime.get("commitLogDiskRatio"),
            runtime.get("consumeQueueDiskRatio"),
            first_float(runtime.get("putTps")),
            first_float(runtime.get("getTransferredTps")),
            trans[0],
            schedule[0],
            _day_count(runtime, "msgPut"),
            _day_count(runtime, "msgGet"),
            trans[1],
            schedule[1],
            _average_size(runtime),
            sum(1 for t in topics if topic_kind(t, system) is TopicKind.NORMAL),
            len(user_groups),
            await self._client_versions(addr, user_groups),
        )

    async def _puts_since(self, addr: str, topic: str, since: int) -> tuple[float, int]:
        """A topic's put rate over the last minute and how many of its messages the broker stored
        since ``since`` (ms); nothing when the broker does not have the topic."""
        try:
            stats = await self.api.topic_stats(addr, topic)
        except RemoteError as exc:
            if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                return 0.0, 0
            raise
        queues = [(q.queueId, o.maxOffset) for q, o in stats.offsetTable.items() if o.maxOffset > o.minOffset]
        firsts = await gather(self.api.search_offset(addr, topic, q, since) for q, _ in queues)
        return stats.topicPutTps, sum(hi - first for (_, hi), first in zip(queues, firsts, strict=True))

    async def _client_versions(self, addr: str, groups: Sequence[str]) -> list[ClientVersion]:
        """The (language, version) pairs among the consumers of ``groups`` connected to the broker."""
        from admin.models.broker_ops import ClientVersion

        async def connections(group: str) -> list[ClientVersion]:
            try:
                found = await self.api.consumer_connection(addr, group)
            except RemoteError:  # a group the broker cannot answer for adds no client, as in mqadmin
                return []
            if found is None:
                return []
            return [ClientVersion(c.language.name, c.version) for c in found.connectionSet]

        seen = {v for vs in await gather(connections(g) for g in groups) for v in vs}
        return sorted(seen, key=lambda v: (v.language, v.version))

    @admin_call
    async def cluster_broker_names(self, cluster: str | None = None) -> dict[str, list[str]]:
        """Cluster -> its broker names, both sorted: one cluster, or every cluster."""
        info = await self._cluster()
        return {c: sorted(info.clusterAddrTable[c]) for c in _clusters(info, cluster)}

    # -- consume modes and read-ahead --------------------------------------------------------------
    @admin_call
    async def group_consume_mode_set(
        self,
        topic: str,
        group: str,
        pop: bool,
        pop_share_queue_num: int = 0,
        cluster: str | None = None,
        broker: str | None = None,
    ) -> ConsumeModes:
        """Make ``group`` read ``topic`` in POP (``pop``) or PULL mode on one broker or a cluster's
        masters (SET_MESSAGE_REQUEST_MODE); consumers that let the broker balance follow at their next
        rebalance."""
        from admin.models.broker_ops import ConsumeMode, ConsumeModes
        from broker.protocol.request_mode import MessageRequestMode, SetMessageRequestModeRequestBody

        mode = MessageRequestMode.POP if pop else MessageRequestMode.PULL
        body = SetMessageRequestModeRequestBody(topic, group, mode, pop_share_queue_num).to_json()
        targets = await self._broker_targets(cluster, broker)
        await gather(
            self.api.call(a, RequestCode.SET_MESSAGE_REQUEST_MODE, body=body) for a in targets.values()
        )
        return ConsumeModes(
            topic,
            group,
            [ConsumeMode(name, a, mode.name, pop_share_queue_num, True) for name, a in targets.items()],
        )

    @admin_call
    async def group_consume_mode(
        self, topic: str, group: str, cluster: str | None = None, broker: str | None = None
    ) -> ConsumeModes:
        """How ``group`` reads ``topic`` on each master of the topic's route (or of ``cluster``, or on
        ``broker``): one GET_ALL_MESSAGE_REQUEST_MODE each."""
        from admin.models.broker_ops import ConsumeMode, ConsumeModes
        from broker.protocol.request_mode import MessageRequestModeSerializeWrapper

        if cluster is None and broker is None:
            targets = self._route_masters(await self._route(topic))
        else:
            targets = await self._broker_targets(cluster, broker)
        answers = await gather(
            self.api.call(a, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE) for a in targets.values()
        )
        modes = []
        for (name, addr), answer in zip(targets.items(), answers, strict=True):
            table = MessageRequestModeSerializeWrapper.from_json(answer.body or b"{}").messageRequestModeMap
            entry = table.get(topic, {}).get(group)
            if entry is None:
                modes.append(ConsumeMode(name, addr, "PULL", 0, False))
            else:
                modes.append(ConsumeMode(name, addr, entry.mode.name, entry.popShareQueueNum, True))
        return ConsumeModes(topic, group, modes)

    @admin_call
    async def broker_set_read_ahead(
        self, random: bool, cluster: str | None = None, broker: str | None = None
    ) -> ReadAheadChanges:
        """Turn the kernel's read-ahead of CommitLog files off (``random``, MADV_RANDOM) or back on
        (MADV_NORMAL) on ``broker``, else on every master and slave of ``cluster`` (of every cluster)."""
        from admin.models.broker_ops import ReadAheadChange, ReadAheadChanges
        from broker.protocol.headers import SetCommitLogReadModeRequestHeader

        header = SetCommitLogReadModeRequestHeader(READ_AHEAD_MODE=1 if random else 0)
        targets = [(broker, None)] if broker is not None else await self._masters_and_slaves(cluster)
        answers = await gather(
            self.api.call(a, RequestCode.SET_COMMITLOG_READ_MODE, header) for a, _ in targets
        )
        return ReadAheadChanges(
            random,
            [
                ReadAheadChange(addr, master, answer.remark or "")
                for (addr, master), answer in zip(targets, answers, strict=True)
            ],
        )

    async def _masters_and_slaves(self, cluster: str | None) -> list[tuple[str, str | None]]:
        """(address, its master) of every broker of ``cluster`` (else of every cluster): each master
        (master None) followed by its slaves, brokers by name."""
        out: list[tuple[str, str | None]] = []
        for ids in await self._broker_sets(cluster):
            master = ids.get(0)
            if master is None:
                continue  # a slave without its master is left alone, as mqadmin does
            out.append((master, None))
            out += [(a, master) for bid, a in ids.items() if bid != 0]
        if not out:
            raise NotFound("no master broker is registered with the NameServer")
        return out

    async def _broker_sets(self, cluster: str | None) -> list[dict[int, str]]:
        """Broker id -> address of each broker of ``cluster`` (else of every cluster), brokers by name
        and ids in order."""
        info = await self._cluster()
        names = sorted({b for c in _clusters(info, cluster) for b in info.clusterAddrTable[c]})
        return [
            dict(sorted(data.brokerAddrs.items()))
            for n in names
            if (data := info.brokerAddrTable.get(n)) is not None
        ]

    # -- measured sends ---------------------------------------------------------------------------
    @admin_call
    async def send_probes(
        self,
        topics: Sequence[str],
        count: int,
        body: bytes,
        *,
        group: str,
        instance_name: str | None = None,
        warmup: bytes | None = None,
        spread: bool = False,
        strict: bool = False,
    ) -> list[SendProbes]:
        """Send ``count`` messages of ``body`` to each topic with one producer of ``group``, timing each
        round trip. ``warmup``: one unmeasured message sent first; ``spread``: the i-th message goes to
        queue ``i % queues`` (without retries, as with a queue selector); ``strict``: a failed send
        ends the run (OperationFailed) instead of being counted."""
        from admin.models.cluster import SendProbes
        from broker.client.message import Message

        if count < 0:
            raise BadInput(f"the message count must not be negative, not {count}")
        await gather(self._route(t) for t in dict.fromkeys(topics))  # NotFound before anything is sent
        producer = self._producer(group, instance_name=instance_name)
        await producer.start()
        try:
            out = []
            for topic in topics:
                if warmup is not None:
                    await self._probe(producer, Message(topic, warmup), None, strict=True)
                probes = [
                    await self._probe(producer, Message(topic, body), i if spread else None, strict=strict)
                    for i in range(count)
                ]
                out.append(SendProbes(topic, probes))
            return out
        finally:
            await producer.shutdown()

    @staticmethod
    async def _probe(producer: Producer, msg: Message, index: int | None, *, strict: bool) -> SendProbe:
        from admin.models.cluster import SendProbe
        from broker.client.message import MQBrokerError, MQClientError
        from broker.client.remoting_client import RemotingError

        picked: list[MessageQueue] = []

        def select(queues: Sequence[MessageQueue], _msg: Message, arg: Any) -> MessageQueue:
            picked.append(queues[arg % len(queues)])
            return picked[-1]

        began = time.monotonic()
        try:
            if index is None:
                result = await producer.send(msg)
            else:
                result = await producer.send(msg, selector=select, arg=index)
        except (MQClientError, MQBrokerError, RemotingError) as exc:
            if strict:
                raise OperationFailed(f"send to {msg.topic} failed: {exc}") from None
            rt = int((time.monotonic() - began) * 1000)
            where = picked[-1] if picked else None
            return SendProbe(
                where.brokerName if where else "", where.queueId if where else 0, rt, None, str(exc)
            )
        rt = int((time.monotonic() - began) * 1000)
        mq = result.message_queue
        return SendProbe(mq.brokerName, mq.queueId, rt, result)


def _clusters(info: ClusterInfo, cluster: str | None) -> list[str]:
    """``[cluster]`` (NotFound when the NameServer does not know it), else every cluster, sorted."""
    if cluster is None:
        return sorted(info.clusterAddrTable)
    if cluster not in info.clusterAddrTable:
        raise NotFound(f"cluster {cluster} not found")
    return [cluster]


def _day_count(runtime: dict[str, str], prefix: str) -> int:
    """Messages put (``msgPut``) or got (``msgGet``) in the last whole day: the difference of the
    broker's counters at today's and yesterday's midnight."""
    return _number(runtime, f"{prefix}TotalTodayMorning", int) - _number(
        runtime, f"{prefix}TotalYesterdayMorning", int
    )


def _average_size(runtime: dict[str, str]) -> float | None:
    """putMessageAverageSize, else the broker's byte and message totals divided as RocketMQ does
    (rmqkit brokers report only the totals); None when the broker reports neither."""
    if "putMessageAverageSize" in runtime:
        return _number(runtime, "putMessageAverageSize", float)
    if "putMessageSizeTotal" not in runtime:
        return None
    return _number(runtime, "putMessageSizeTotal", int) / max(
        _number(runtime, "putMessageTimesTotal", int), 1
    )


N = TypeVar("N", int, float)


def _number(runtime: dict[str, str], key: str, kind: type[N]) -> N:
    """A figure of GET_BROKER_RUNTIME_INFO (values are text); 0 when a broker does not report it."""
    try:
        return kind(runtime.get(key, 0))
    except ValueError:
        return kind(0)
