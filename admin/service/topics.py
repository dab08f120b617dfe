"""Topics: list, route, status, describe, create, update, delete."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, TypeVar

from admin.errors import BadInput, NotFound, OperationFailed
from admin.models.names import TopicKind, topic_kind
from admin.models.topic_details import (
    CompactionQueue,
    ConsumeQueuePage,
    ConsumeQueueUnit,
    TopicChange,
    TopicDescription,
)
from admin.models.topics import TopicDeletion, TopicSummary
from admin.service.base import Progress, ServiceBase, admin_call, gather
from broker.client.admin_api import RemoteError
from broker.protocol.bodies import ClusterInfo, TopicConfig, TopicRouteData
from broker.protocol.names import is_group_topic

if TYPE_CHECKING:
    from admin.models.topic_details import TopicRoute, TopicSpec, TopicStatus
    from admin.models.topics import TopicList

T = TypeVar("T")
ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"
DEFAULT_QUEUES = 8  # mqadmin updateTopic's default read and write queue numbers
DEFAULT_PERM = 6  # read + write


def system_names(cluster: ClusterInfo) -> frozenset[str]:
    """Broker and cluster names, and each cluster's reply topic: brokers create these for themselves."""
    clusters = frozenset(cluster.clusterAddrTable)
    return frozenset(cluster.brokerAddrTable) | clusters | {f"{c}_REPLY_TOPIC" for c in clusters}


def new_topic_config(name: str) -> TopicConfig:
    """What a new topic starts from before the fields asked for are set (mqadmin updateTopic's defaults)."""
    queues = DEFAULT_QUEUES
    return TopicConfig(topicName=name, readQueueNums=queues, writeQueueNums=queues, perm=DEFAULT_PERM)


def topic_configs(spec: TopicSpec, current: dict[str, TopicConfig]) -> dict[str, TopicConfig]:
    """What to write on each broker: ``spec``'s fields over the broker's ``current`` configuration;
    BadInput for a name or values no broker would take."""
    if is_group_topic(spec.name) or not spec.name.strip():
        raise BadInput(f"{spec.name!r} is not a name a topic can be created with")
    configs = {
        name: TopicConfig(
            topicName=spec.name,
            readQueueNums=spec.read_queues if spec.read_queues is not None else c.readQueueNums,
            writeQueueNums=spec.write_queues if spec.write_queues is not None else c.writeQueueNums,
            perm=spec.perm if spec.perm is not None else c.perm,
            topicFilterType=c.topicFilterType,
            topicSysFlag=c.topicSysFlag,
            order=spec.order if spec.order is not None else c.order,
            attributes=spec.attributes,
        )
        for name, c in current.items()
    }
    for config in configs.values():
        if config.readQueueNums <= 0 or config.writeQueueNums <= 0:
            raise BadInput("queue numbers must be positive")
        if not 0 <= config.perm <= 7:
            raise BadInput(f"perm {config.perm} is not within 0..7 (4 read, 2 write, 1 inherit)")
    return configs


async def tracked(coros: Iterable[Awaitable[T]], label: str, progress: Progress | None) -> list[T]:
    """Like :func:`gather`, reporting each completion to ``progress``."""
    items = list(coros)
    done = 0

    async def one(coro: Awaitable[T]) -> T:
        nonlocal done
        result = await coro
        done += 1
        if progress is not None:
            progress(label, done, len(items))
        return result

    return await gather(one(c) for c in items)


def _parse_order_conf(text: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in (text or "").split(";"):
        name, sep, nums = item.partition(":")
        if sep and name and nums.strip().isdigit():
            out[name] = int(nums)
    return out


class TopicOps(ServiceBase):
    @admin_call
    async def topic_list(
        self, cluster: str | None = None, kinds: frozenset[TopicKind] | None = None
    ) -> TopicList:
        """Every topic the NameServers know (of ``kinds``, default all), with its clusters, kind and
        queues (one request per master broker for the configurations)."""
        from admin.models.topics import TopicList

        names, info = await asyncio.gather(self.api.topic_list(self.namesrv), self._cluster())
        masters = self._masters(info, cluster)
        configs = await gather(self.api.all_topic_config(a) for a in masters.values())
        cluster_of = {b: c for c, bs in info.clusterAddrTable.items() for b in bs}
        held: dict[str, list[tuple[str, TopicConfig]]] = {}
        for broker_name, table in zip(masters, configs, strict=True):
            for topic, config in table.items():
                held.setdefault(topic, []).append((broker_name, config))
        wanted = set(held) if cluster is not None else set(names) | set(held)
        system = system_names(info)
        topics = [self._summary(t, held.get(t, []), cluster_of, system) for t in sorted(wanted)]
        return TopicList([t for t in topics if kinds is None or t.kind in kinds])

    @admin_call
    async def topic_names(self) -> list[str]:
        """Names of the normal topics (one request to a NameServer; for shell completion)."""
        names, info = await asyncio.gather(self.api.topic_list(self.namesrv), self._cluster())
        system = system_names(info)
        return sorted(t for t in names if topic_kind(t, system) is TopicKind.NORMAL)

    @staticmethod
    def _summary(
        topic: str, held: list[tuple[str, TopicConfig]], cluster_of: dict[str, str], system: frozenset[str]
    ) -> TopicSummary:
        return TopicSummary(
            name=topic,
            kind=topic_kind(topic, system),
            clusters=sorted({cluster_of[b] for b, _ in held if b in cluster_of}),
            brokers=[b for b, _ in held],
            read_queues=sum(c.readQueueNums for _, c in held),
            write_queues=sum(c.writeQueueNums for _, c in held),
            perm=held[0][1].perm if held else None,
            order=any(c.order for _, c in held),
            attributes=dict(held[0][1].attributes) if held else {},
        )

    @staticmethod
    def _route_view(topic: str, route: TopicRouteData) -> TopicRoute:
        from admin.models.topic_details import RouteBroker, RouteQueue, TopicRoute

        return TopicRoute(
            topic=topic,
            brokers=sorted(
                (
                    RouteBroker(d.cluster or "", d.brokerName or "", dict(sorted(d.brokerAddrs.items())))
                    for d in route.brokerDatas
                ),
                key=lambda b: b.broker_name,
            ),
            queues=sorted(
                (
                    RouteQueue(q.brokerName or "", q.readQueueNums, q.writeQueueNums, q.perm, q.topicSysFlag)
                    for q in route.queueDatas
                ),
                key=lambda q: q.broker_name,
            ),
            order_conf=route.orderTopicConf,
        )

    @admin_call
    async def topic_route(self, topic: str) -> TopicRoute:
        return self._route_view(topic, await self._route(topic))

    @admin_call
    async def topic_consumers(self, topics: list[str]) -> dict[str, list[str]]:
        """Topic -> the groups consuming it (QUERY_TOPIC_CONSUME_BY_WHO to every master, per topic)."""
        masters = list(self._masters(await self._cluster()).values())
        pairs = [(t, a) for t in topics for a in masters]
        answers = await gather(self.api.groups_consuming(a, t) for t, a in pairs)
        out: dict[str, set[str]] = {t: set() for t in topics}
        for (topic, _), groups in zip(pairs, answers, strict=True):
            out[topic].update(groups)
        return {t: sorted(gs) for t, gs in out.items()}

    @admin_call
    async def topic_allocation(self, topic: str, clients: list[str]) -> dict[str, list[tuple[str, int]]]:
        """Client id -> the (broker name, queue id) of ``topic`` each would get from a rebalance with
        AllocateMessageQueueAveragely (mqadmin allocateMQ)."""
        route = await self._route(topic)
        queues = sorted((q.brokerName or "", i) for q in route.queueDatas for i in range(q.readQueueNums))
        cids = sorted(set(clients))
        out: dict[str, list[tuple[str, int]]] = {}
        for index, cid in enumerate(cids):
            mod = len(queues) % len(cids)
            extra = 1 if mod and index < mod else 0
            size = 1 if len(queues) <= len(cids) else len(queues) // len(cids) + extra
            start = index * size if extra else index * size + mod
            out[cid] = [queues[(start + i) % len(queues)] for i in range(min(size, len(queues) - start))]
        return {c: out[c] for c in clients if c in out}

    async def _status(self, topic: str, route: TopicRouteData) -> TopicStatus:
        from admin.models.topic_details import QueueStatus, TopicStatus

        masters = self._route_masters(route)
        tables = await gather(self.api.topic_stats(a, topic) for a in masters.values())
        queues = sorted(
            (
                QueueStatus(mq.brokerName, mq.queueId, o.minOffset, o.maxOffset, o.lastUpdateTimestamp)
                for table in tables
                for mq, o in table.offsetTable.items()
            ),
            key=lambda q: (q.broker_name, q.queue_id),
        )
        return TopicStatus(
            topic=topic,
            queues=queues,
            total_messages=sum(q.messages for q in queues),
            put_tps=round(sum(t.topicPutTps for t in tables), 2),
        )

    @admin_call
    async def topic_status(self, topic: str) -> TopicStatus:
        """Min and max offset and last store time of every queue (one request per broker)."""
        return await self._status(topic, await self._route(topic))

    @admin_call
    async def topic_describe(self, topic: str) -> TopicDescription:
        """Route, queue offsets, attributes and the groups consuming the topic."""
        route, info = await asyncio.gather(self._route(topic), self._cluster())
        masters = self._route_masters(route)
        status, groups, tables = await asyncio.gather(
            self._status(topic, route),
            gather(self.api.groups_consuming(a, topic) for a in masters.values()),
            gather(self.api.all_topic_config(a) for a in masters.values()),
        )
        held = [table[topic] for table in tables if topic in table]
        attributes = dict(held[0].attributes) if held else {}
        compaction: list[CompactionQueue] = []
        if attributes.get("cleanup.policy") == "COMPACTION":
            infos = await gather(self.api.runtime_info(a) for a in masters.values())
            prefix = f"compactionProgress_{topic}_"
            compaction = [
                q
                for name, runtime in zip(masters, infos, strict=True)
                for key, value in runtime.items()
                if key.startswith(prefix)
                and (q := CompactionQueue.parse(name, key[len(prefix) :], value)) is not None
            ]
            compaction.sort(key=lambda q: (q.broker_name, q.queue_id))
        return TopicDescription(
            topic=topic,
            kind=topic_kind(topic, system_names(info)),
            route=self._route_view(topic, route),
            status=status,
            groups=sorted({g for gs in groups for g in gs}),
            attributes=attributes,
            compaction=compaction,
        )

    @admin_call
    async def topic_queue(
        self,
        topic: str,
        queue_id: int,
        broker_name: str | None = None,
        start: int | None = None,
        count: int = 20,
    ) -> ConsumeQueuePage:
        """``count`` ConsumeQueue units of one queue from ``start`` (default: the newest ``count``),
        on the master of ``broker_name`` (needed when several brokers serve the topic)."""
        route = await self._route(topic)
        masters = self._route_masters(route)
        if broker_name is None:
            if len(masters) > 1:
                raise BadInput(f"topic {topic} is on several brokers ({', '.join(masters)}): name one")
            broker_name = next(iter(masters), None)
        address = masters.get(broker_name or "")
        if broker_name is None or address is None:
            raise NotFound(f"topic {topic} has no master broker named {broker_name}")
        queues = max((q.readQueueNums for q in route.queueDatas if q.brokerName == broker_name), default=0)
        if not 0 <= queue_id < queues:
            raise BadInput(f"{topic} has queues 0-{queues - 1} on {broker_name}, not {queue_id}")
        low, high = await asyncio.gather(
            self.api.min_offset(address, topic, queue_id), self.api.max_offset(address, topic, queue_id)
        )
        if start is None:
            start = max(low, high - count)
        elif not low <= start <= high:
            raise BadInput(
                f"index {start} is outside queue {queue_id} of {topic} on {broker_name} ({low}-{high})"
            )
        units: list[ConsumeQueueUnit] = []
        if start < high and count > 0:
            body = await self.api.query_consume_queue(address, topic, queue_id, start, count)
            units = [
                ConsumeQueueUnit(i, u.physicOffset, u.physicSize, u.tagsCode)
                for i, u in enumerate(body.queueData or [], start=start)
            ]
        return ConsumeQueuePage(topic, broker_name, address, queue_id, low, high, units)

    # -- changes ----------------------------------------------------------------------------------
    @admin_call
    async def topic_create(
        self,
        spec: TopicSpec,
        cluster: str | None = None,
        broker: str | None = None,
        progress: Progress | None = None,
    ) -> TopicChange:
        """Create a topic on one broker or on a cluster's masters; fails if it exists."""
        if await self._route_or_none(spec.name) is not None and broker is None:
            raise OperationFailed(f"topic {spec.name} already exists; update it instead")
        targets = await self._broker_targets(cluster, broker)
        base = new_topic_config(spec.name)
        return await self._write_topic(spec, {name: base for name in targets}, targets, progress)

    @admin_call
    async def topic_update(
        self,
        spec: TopicSpec,
        cluster: str | None = None,
        broker: str | None = None,
        progress: Progress | None = None,
    ) -> TopicChange:
        """Change an existing topic on the brokers of its route (or on the brokers named)."""
        route = await self._route(spec.name)
        if cluster is None and broker is None:
            targets = self._route_masters(route)
        else:
            targets = await self._broker_targets(cluster, broker)
        tables = await gather(self.api.all_topic_config(a) for a in targets.values())
        current: dict[str, TopicConfig] = {}
        for name, table in zip(targets, tables, strict=True):
            config = table.get(spec.name)
            if config is None:
                raise NotFound(f"topic {spec.name} is not on broker {name}")
            current[name] = config
        return await self._write_topic(spec, current, targets, progress)

    async def _write_topic(
        self,
        spec: TopicSpec,
        current: dict[str, TopicConfig],
        targets: dict[str, str],
        progress: Progress | None,
    ) -> TopicChange:
        configs = topic_configs(spec, current)
        await tracked((self._create_on(targets[n], c) for n, c in configs.items()), "writing topic", progress)
        first = next(iter(configs.values()))
        order_conf = await self._write_order_conf(spec, configs) if spec.order is not None else None
        return TopicChange(
            topic=spec.name,
            addresses=sorted(targets.values()),
            read_queues=first.readQueueNums,
            write_queues=first.writeQueueNums,
            perm=first.perm,
            order=first.order,
            order_conf=order_conf,
            attributes={**next(iter(current.values())).attributes, **spec.attributes},
        )

    async def _create_on(self, addr: str, config: TopicConfig) -> None:
        """UPDATE_AND_CREATE_TOPIC; a refusal of attributes names them."""
        try:
            await self.api.create_topic(addr, config)
        except RemoteError as exc:
            if not config.attributes:
                raise
            attrs = ", ".join(f"{k}={v}" for k, v in config.attributes.items())
            raise OperationFailed(
                f"{addr} refused topic {config.topicName} with attributes {attrs}: "
                f"{exc.remark or f'error code {exc.code}'}"
            ) from exc

    async def _write_order_conf(self, spec: TopicSpec, configs: dict[str, TopicConfig]) -> str | None:
        """Merge these brokers into ORDER_TOPIC_CONFIG/<topic> (or drop them when order is off)."""
        entries = _parse_order_conf(await self.api.get_kv(self.namesrv, ORDER_TOPIC_NAMESPACE, spec.name))
        if not entries and not spec.order:
            return None
        for name, config in configs.items():
            if spec.order:
                entries[name] = config.writeQueueNums
            else:
                entries.pop(name, None)
        value = ";".join(f"{n}:{q}" for n, q in sorted(entries.items()))
        if value:
            await gather(self.api.put_kv(a, ORDER_TOPIC_NAMESPACE, spec.name, value) for a in self.namesrv)
        else:
            await gather(self.api.delete_kv(a, ORDER_TOPIC_NAMESPACE, spec.name) for a in self.namesrv)
        return value or None

    @admin_call
    async def topic_delete(
        self, topic: str, cluster: str | None = None, progress: Progress | None = None
    ) -> TopicDeletion:
        """Delete a topic from its brokers (of one cluster, or all), then from every NameServer, with its
        ORDER_TOPIC_CONFIG entry (as DefaultMQAdminExt.deleteTopic does; with a cluster, only the entries
        of that cluster's brokers)."""
        route = await self._route(topic)
        if topic_kind(topic) is TopicKind.SYSTEM:
            raise BadInput(f"{topic} is a system topic")
        brokers = sorted(
            a
            for d in route.brokerDatas
            if cluster is None or d.cluster == cluster
            for a in d.brokerAddrs.values()
        )
        if not brokers:
            raise NotFound(f"topic {topic} is not in cluster {cluster}")
        await tracked(
            (self.api.delete_topic_in_broker(a, topic) for a in brokers), "deleting topic", progress
        )
        await gather(self.api.delete_topic_in_namesrv(a, topic, cluster) for a in self.namesrv)
        removed = {d.brokerName for d in route.brokerDatas if cluster is None or d.cluster == cluster}
        await self._drop_order_conf(topic, None if cluster is None else removed)
        return TopicDeletion(topic, brokers, list(self.namesrv))

    async def _drop_order_conf(self, topic: str, broker_names: set[str | None] | None) -> None:
        """Remove ORDER_TOPIC_CONFIG/<topic>, or only these brokers' entries of it."""
        value = await self.api.get_kv(self.namesrv, ORDER_TOPIC_NAMESPACE, topic)
        if value is None:
            return
        rest = {n: q for n, q in _parse_order_conf(value).items() if n not in (broker_names or set())}
        if broker_names is None or not rest:
            await gather(self.api.delete_kv(a, ORDER_TOPIC_NAMESPACE, topic) for a in self.namesrv)
            return
        kept = ";".join(f"{n}:{q}" for n, q in sorted(rest.items()))
        if kept != value:
            await gather(self.api.put_kv(a, ORDER_TOPIC_NAMESPACE, topic, kept) for a in self.namesrv)
