"""Consumer groups: list, describe, connections, running clients, lag, create, update, delete, offsets."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from admin.errors import BadInput, NotFound, OperationFailed
from admin.models.names import RETRY_PREFIX, is_system_group
from admin.service.base import Progress, ServiceBase, admin_call, admin_error, gather
from admin.service.topics import tracked
from broker.client.admin_api import RemoteError
from broker.protocol.bodies import MessageQueue

if TYPE_CHECKING:
    from admin.models.groups import (
        ClientInfo,
        ClientRunningInfo,
        GroupChange,
        GroupClients,
        GroupConfig,
        GroupConnections,
        GroupDeletion,
        GroupDescription,
        GroupLag,
        GroupList,
        GroupProgress,
        GroupSpec,
        OffsetClone,
        OffsetReset,
        OffsetSnapshot,
        QueueProblem,
        QueueReset,
        QueueRuntime,
        ResetTarget,
    )
    from broker.protocol.group_bodies import ConsumerConnection, ConsumeStats, SubscriptionGroupConfig
    from broker.protocol.running_info import ConsumerRunningInfo


def _config_view(c: SubscriptionGroupConfig) -> GroupConfig:
    from admin.models.groups import GroupConfig

    return GroupConfig(
        consume_enable=c.consumeEnable,
        consume_from_min_enable=c.consumeFromMinEnable,
        consume_broadcast_enable=c.consumeBroadcastEnable,
        consume_message_orderly=c.consumeMessageOrderly,
        retry_queue_nums=c.retryQueueNums,
        retry_max_times=c.retryMaxTimes,
        broker_id=c.brokerId,
        which_broker_when_consume_slowly=c.whichBrokerWhenConsumeSlowly,
        notify_consumer_ids_changed_enable=c.notifyConsumerIdsChangedEnable,
        group_sys_flag=c.groupSysFlag,
        consume_timeout_minute=c.consumeTimeoutMinute,
        attributes=dict(c.attributes),
    )


SNAPSHOT_NAMESPACE = "RMQ_OFFSET_SNAPSHOTS"  # NameServer KV: group -> its offsets before the last reset
_STORE_TIME_LOOKUPS = 32  # one-message reads in flight at once while finding how old the lag is
_CONSUME_TYPES = {"CONSUME_ACTIVELY": "PULL", "CONSUME_PASSIVELY": "PUSH", "CONSUME_POP": "POP"}
_BLOCKED_AFTER_MS = 60_000  # cached messages and no consumption for this long: the listener is stuck
_SETTLED_AFTER_MS = 120_000  # consumers started this long ago should agree on their subscriptions


def _consume_type(conn: ConsumerConnection) -> str | None:
    return _CONSUME_TYPES.get(conn.consumeType.name) if conn.consumeType is not None else None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _problems(queues: list[QueueRuntime], orderly: bool, now_ms: int) -> list[QueueProblem]:
    """A push consumer's queues in trouble, judged as mqadmin consumerStatus does."""
    from admin.models.groups import ProblemKind, QueueProblem

    out = []
    for q in queues:
        where = (q.topic, q.broker_name, q.queue_id)
        if orderly and not q.locked:
            out.append(QueueProblem(*where, ProblemKind.NOT_LOCKED, now_ms - q.last_lock_timestamp, 0))
        elif orderly and q.dropped and q.try_unlock_times > 0:
            out.append(QueueProblem(*where, ProblemKind.UNLOCK_FAILED, 0, q.try_unlock_times))
        elif not orderly and q.cached_count > 0 and now_ms - q.last_consume_timestamp > _BLOCKED_AFTER_MS:
            out.append(QueueProblem(*where, ProblemKind.BLOCKED, now_ms - q.last_consume_timestamp, 0))
    return out


def _same_subscriptions(clients: list[ClientRunningInfo], now_ms: int) -> bool:
    """False when push consumers running for a while subscribe differently (mqadmin's judgement: the
    first client decides whether the group is push and settled)."""
    answered = [c for c in clients if c.error is None]
    if not answered:
        return True
    first = answered[0]
    if first.consume_type != "PUSH" or now_ms - first.start_timestamp <= _SETTLED_AFTER_MS:
        return True
    return all(set(c.subscriptions) == set(first.subscriptions) for c in answered)


def _running_view(
    client: ClientInfo, info: ConsumerRunningInfo | None, error: str | None = None
) -> ClientRunningInfo:
    """One client's answer (``info``), or why it could not be asked (``error``)."""
    from admin.models.groups import ClientRunningInfo, QueueRuntime, Subscription, TopicRates
    from broker.protocol import running_info

    now_ms = _now_ms()

    props = dict(info.properties) if info is not None else {}
    start = props.get(running_info.PROP_CONSUMER_START_TIMESTAMP, "")
    queues = sorted(
        (
            QueueRuntime(
                topic=mq.topic,
                broker_name=mq.brokerName,
                queue_id=mq.queueId,
                commit_offset=q.commitOffset,
                cached_count=q.cachedMsgCount,
                cached_size_mib=q.cachedMsgSizeInMiB,
                cached_min_offset=q.cachedMsgMinOffset,
                cached_max_offset=q.cachedMsgMaxOffset,
                consuming_count=q.transactionMsgCount,
                consuming_min_offset=q.transactionMsgMinOffset,
                consuming_max_offset=q.transactionMsgMaxOffset,
                locked=q.locked,
                try_unlock_times=q.tryUnlockTimes,
                last_lock_timestamp=q.lastLockTimestamp,
                dropped=q.droped,
                last_pull_timestamp=q.lastPullTimestamp,
                last_consume_timestamp=q.lastConsumeTimestamp,
            )
            for mq, q in (info.mqTable.items() if info is not None else ())
        ),
        key=lambda q: (q.topic, q.broker_name, q.queue_id),
    )
    rates = [
        TopicRates(
            topic, s.pullRT, s.pullTPS, s.consumeRT, s.consumeOKTPS, s.consumeFailedTPS, s.consumeFailedMsgs
        )
        for topic, s in sorted(info.statusTable.items() if info is not None else ())
    ]
    subs = sorted(
        (
            Subscription(s.topic or "", s.subString or "*", s.expressionType)
            for s in (info.subscriptionSet if info is not None else ())
        ),
        key=lambda s: s.topic,
    )
    consume_type = _CONSUME_TYPES.get(props.get(running_info.PROP_CONSUME_TYPE, ""))
    orderly = props.get(running_info.PROP_CONSUME_ORDERLY, "").lower() == "true"
    return ClientRunningInfo(
        client_id=client.client_id,
        address=client.address,
        language=client.language,
        version=client.version,
        broker=client.broker,
        error=error,
        client_version=props.get(running_info.PROP_CLIENT_VERSION),
        consume_type=consume_type,
        orderly=orderly,
        start_timestamp=int(start) if start.isdigit() else 0,
        namesrv_addr=props.get(running_info.PROP_NAMESERVER_ADDR),
        properties=props,
        subscriptions=subs,
        queues=queues,
        rates=rates,
        problems=_problems(queues, orderly, now_ms) if consume_type == "PUSH" else [],
        jstack=info.jstack if info is not None else None,
    )


def _connections(group: str, answers: dict[str, ConsumerConnection | None]) -> GroupConnections:
    """Merge what each broker reports about a group's clients (the first report of a client wins)."""
    from admin.models.groups import ClientInfo, GroupConnections, Subscription

    clients: dict[str, ClientInfo] = {}
    subs: dict[str, Subscription] = {}
    first: ConsumerConnection | None = None
    for broker_name, conn in answers.items():
        if conn is None:
            continue
        first = first or conn
        for c in conn.connectionSet:
            cid = c.clientId or ""
            clients.setdefault(
                cid, ClientInfo(cid, c.clientAddr or "", c.language.name, c.version, broker_name)
            )
        for topic, s in conn.subscriptionTable.items():
            subs.setdefault(topic, Subscription(topic, s.subString or "*", s.expressionType))
    return GroupConnections(
        group=group,
        online=bool(clients),
        consume_type=_consume_type(first) if first else None,
        message_model=first.messageModel.name if first and first.messageModel is not None else None,
        consume_from_where=first.consumeFromWhere.name
        if first and first.consumeFromWhere is not None
        else None,
        clients=sorted(clients.values(), key=lambda c: c.client_id),
        subscriptions=sorted(subs.values(), key=lambda s: s.topic),
    )


def _lag(group: str, stats: list[ConsumeStats]) -> GroupLag:
    from admin.models.groups import GroupLag, QueueLag

    queues = sorted(
        (
            QueueLag(
                topic=mq.topic,
                broker_name=mq.brokerName,
                queue_id=mq.queueId,
                broker_offset=o.brokerOffset,
                consumer_offset=o.consumerOffset,
                diff=o.brokerOffset - o.consumerOffset,
                inflight=o.pullOffset - o.consumerOffset,
                last_timestamp=o.lastTimestamp,
            )
            for s in stats
            for mq, o in s.offsetTable.items()
        ),
        key=lambda q: (q.topic, q.broker_name, q.queue_id),
    )
    return GroupLag(
        group=group,
        queues=queues,
        diff_total=sum(q.diff for q in queues),
        inflight_total=sum(q.inflight for q in queues),
        consume_tps=round(sum(s.consumeTps for s in stats), 2),
    )


def retry_values_problem(retry_max_times: int | None, retry_queue_nums: int | None) -> str | None:
    """What is wrong with a group's retry settings (None: nothing, or not set)."""
    if retry_max_times is not None and retry_max_times < -1:
        return "retry max times must be -1 (no retry) or more"
    if retry_queue_nums is not None and retry_queue_nums < 0:
        return "retry queue numbers cannot be negative"
    return None


class GroupOps(ServiceBase):
    async def _all_masters(self) -> dict[str, str]:
        return self._masters(await self._cluster())

    async def _group_configs(self, masters: dict[str, str]) -> dict[str, dict[str, SubscriptionGroupConfig]]:
        """Broker name -> that broker's subscription groups (one request per broker)."""
        tables = await gather(self.api.all_group_config(a) for a in masters.values())
        return dict(zip(masters, tables, strict=True))

    async def _group_connections(
        self, group: str, masters: dict[str, str]
    ) -> dict[str, ConsumerConnection | None]:
        answers = await gather(self.api.consumer_connection(a, group) for a in masters.values())
        return dict(zip(masters, answers, strict=True))

    async def _lag_times(self, lags: list[GroupLag], masters: dict[str, str]) -> list[GroupLag]:
        """``lags`` with how long each queue's first unconsumed message has waited (a one-message
        read per lagging queue, a bounded number at once; queues that are caught up cost nothing)."""
        wanted = {
            (q.broker_name, q.topic, q.queue_id, q.consumer_offset)
            for lag in lags
            for q in lag.queues
            if q.diff > 0 and q.broker_name in masters
        }
        limit = asyncio.Semaphore(_STORE_TIME_LOOKUPS)

        async def store_time(key: tuple[str, str, int, int]) -> int | None:
            name, topic, queue_id, offset = key
            async with limit:
                try:
                    return await self.api.store_time_at(masters[name], topic, queue_id, offset)
                except Exception as exc:  # a queue that cannot be read leaves its age unknown
                    if admin_error(exc) is None:
                        raise
                    return None

        keys = sorted(wanted)
        times = dict(zip(keys, await gather(store_time(k) for k in keys), strict=True))
        now = _now_ms()

        def aged(lag: GroupLag) -> GroupLag:
            queues = [
                replace(q, lag_ms=max(0, now - stamp))
                if q.diff > 0
                and (stamp := times.get((q.broker_name, q.topic, q.queue_id, q.consumer_offset)))
                else q
                for q in lag.queues
            ]
            return replace(lag, queues=queues, lag_ms=max((q.lag_ms for q in queues), default=0))

        return [aged(lag) for lag in lags]

    async def _all_stats(self, names: list[str], masters: dict[str, str]) -> dict[str, list[ConsumeStats]]:
        """Group -> its consume stats on every master: one GET_BROKER_CONSUME_STATS per broker; a broker
        that does not serve it (older RocketMQ) is asked group by group."""
        from broker.protocol.codes import ResponseCode

        async def of_broker(addr: str) -> dict[str, list[ConsumeStats]]:
            try:
                answer = await self.api.broker_consume_stats(addr)
            except RemoteError as exc:
                if exc.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                    raise
                each = await gather(self.api.consume_stats(addr, g) for g in names)
                return {g: [s] for g, s in zip(names, each, strict=True)}
            return {g: s for entry in answer.consumeStatsList for g, s in entry.items()}

        per_broker = await gather(of_broker(a) for a in masters.values())
        return {g: [s for table in per_broker for s in table.get(g, [])] for g in names}

    async def _all_connections(
        self, names: list[str], masters: dict[str, str]
    ) -> dict[str, dict[str, ConsumerConnection | None]]:
        """Group -> broker name -> the group's online clients there: one GET_ALL_CONSUMER_CONNECTIONS
        per broker; a broker that does not serve it (Apache RocketMQ) is asked group by group."""
        from broker.protocol.codes import ResponseCode

        async def of_broker(addr: str) -> dict[str, ConsumerConnection | None]:
            try:
                online = await self.api.all_consumer_connections(addr)
            except RemoteError as exc:
                if exc.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                    raise
                each = await gather(self.api.consumer_connection(addr, g) for g in names)
                return dict(zip(names, each, strict=True))
            return {g: online.get(g) for g in names}

        per_broker = dict(zip(masters, await gather(of_broker(a) for a in masters.values()), strict=True))
        return {g: {b: table[g] for b, table in per_broker.items()} for g in names}

    async def _progress(
        self, names: list[str], masters: dict[str, str]
    ) -> tuple[list[GroupConnections], list[GroupLag]]:
        """Connections and lag (with its age) of every group named: one request per master for each."""
        conns, stats = await asyncio.gather(
            self._all_connections(names, masters), self._all_stats(names, masters)
        )
        lags = await self._lag_times([_lag(g, stats[g]) for g in names], masters)
        return [_connections(g, conns[g]) for g in names], lags

    @admin_call
    async def group_list(self, include_system: bool = True) -> GroupList:
        """Subscription groups of every broker, whether each is online, and how far behind it is."""
        from admin.models.groups import GroupList, GroupSummary

        masters = await self._all_masters()
        configs = await self._group_configs(masters)
        names = sorted(
            {g for table in configs.values() for g in table if include_system or not is_system_group(g)}
        )
        conns, lags = await self._progress(names, masters)
        groups = []
        for name, merged, lag in zip(names, conns, lags, strict=True):
            holders = [b for b, table in configs.items() if name in table]
            config = configs[holders[0]][name]
            groups.append(
                GroupSummary(
                    name=name,
                    system=is_system_group(name),
                    brokers=holders,
                    online=merged.online,
                    clients=len(merged.clients),
                    consume_type=merged.consume_type,
                    message_model=merged.message_model,
                    consume_enable=config.consumeEnable,
                    orderly=config.consumeMessageOrderly,
                    retry_max_times=config.retryMaxTimes,
                    lag=lag.diff_total,
                    lag_ms=lag.lag_ms,
                )
            )
        return GroupList(groups)

    @admin_call
    async def group_progress(self) -> list[GroupProgress]:
        """Clients and lag of every group that is not the brokers' own, online or not."""
        from admin.models.groups import GroupProgress

        masters = await self._all_masters()
        configs = await self._group_configs(masters)
        names = sorted({g for table in configs.values() for g in table if not is_system_group(g)})
        conns, lags = await self._progress(names, masters)
        return [GroupProgress(c, lag) for c, lag in zip(conns, lags, strict=True)]

    @admin_call
    async def group_names(self) -> list[str]:
        """Names of the subscription groups of every broker (for shell completion)."""
        configs = await self._group_configs(await self._all_masters())
        return sorted({g for table in configs.values() for g in table})

    @staticmethod
    def _require(group: str, configs: dict[str, dict[str, SubscriptionGroupConfig]], seen: bool) -> None:
        if not seen and not any(group in t for t in configs.values()):
            raise NotFound(f"consumer group {group} not found")

    @admin_call
    async def group_connections(self, group: str) -> GroupConnections:
        masters = await self._all_masters()
        configs, answers = await asyncio.gather(
            self._group_configs(masters), self._group_connections(group, masters)
        )
        result = _connections(group, answers)
        self._require(group, configs, result.online)
        return result

    @admin_call
    async def group_clients(
        self, group: str, client_id: str | None = None, jstack: bool = False, broker: str | None = None
    ) -> GroupClients:
        """What the group's online clients report of themselves (GET_CONSUMER_RUNNING_INFO, asked of
        every client at once through the broker it is connected to): settings, subscriptions, the
        state of every queue they own and their rates.

        With ``client_id`` only that client is asked and its failure is raised (a client not online
        is refused by the broker); otherwise a client that cannot be asked is listed with ``error``.
        ``broker`` (an address) asks only that broker, for the clients connected to it."""
        from admin.models.groups import ClientInfo, GroupClients

        masters = await (self._broker_targets(None, broker) if broker else self._all_masters())
        if not masters:
            raise NotFound("no broker is registered with the NameServer")
        configs, answers = await asyncio.gather(
            self._group_configs(masters), self._group_connections(group, masters)
        )
        online = _connections(group, answers).clients
        self._require(group, configs, bool(online))
        if client_id is not None:
            known = [c for c in online if c.client_id == client_id]
            # an unknown client is asked anyway, of any broker: its refusal says it is not online
            client = known[0] if known else ClientInfo(client_id, "", "", 0, next(iter(masters)))
            info = await self.api.consumer_running_info(masters[client.broker], group, client_id, jstack)
            view = _running_view(client, info)
            return GroupClients(group, [view], _same_subscriptions([view], _now_ms()))

        async def ask(client: ClientInfo) -> ClientRunningInfo:
            addr = masters[client.broker]
            try:
                info = await self.api.consumer_running_info(addr, group, client.client_id, jstack)
            except Exception as exc:
                mapped = admin_error(exc)
                if mapped is None:
                    raise
                return _running_view(client, None, str(mapped))
            return _running_view(client, info)

        views = await gather(ask(c) for c in online)
        return GroupClients(group, views, _same_subscriptions(views, _now_ms()))

    @admin_call
    async def producer_connections(self, group: str, topic: str) -> list[ClientInfo]:
        """The producers of ``group`` connected to the brokers of ``topic``'s route (one per client)."""
        from admin.models.groups import ClientInfo

        masters = self._route_masters(await self._route(topic))
        answers = await gather(self.api.producer_connection(a, group) for a in masters.values())
        clients: dict[str, ClientInfo] = {}
        for broker_name, conn in zip(masters, answers, strict=True):
            for c in conn.connectionSet:
                cid = c.clientId or ""
                clients.setdefault(
                    cid, ClientInfo(cid, c.clientAddr or "", c.language.name, c.version, broker_name)
                )
        return sorted(clients.values(), key=lambda c: c.client_id)

    async def _stats(self, group: str, topic: str | None, masters: dict[str, str]) -> list[ConsumeStats]:
        return await gather(self.api.consume_stats(a, group, topic) for a in masters.values())

    @admin_call
    async def group_lag(self, group: str, topic: str | None = None) -> GroupLag:
        """Per queue: broker offset, consumer offset, diff, inflight, last consumed time (one
        GET_CONSUME_STATS per master broker)."""
        masters = await self._all_masters()
        configs, stats = await asyncio.gather(
            self._group_configs(masters), self._stats(group, topic, masters)
        )
        lag = _lag(group, stats)
        self._require(group, configs, bool(lag.queues))
        if topic is not None and not lag.queues:
            await self._route(topic)  # a topic that does not exist is an error, not an empty table
        (aged,) = await self._lag_times([lag], masters)
        return aged

    @admin_call
    async def group_describe(self, group: str) -> GroupDescription:
        from admin.models.groups import GroupDescription

        masters = await self._all_masters()
        configs, answers, stats = await asyncio.gather(
            self._group_configs(masters),
            self._group_connections(group, masters),
            self._stats(group, None, masters),
        )
        connections = _connections(group, answers)
        (lag,) = await self._lag_times([_lag(group, stats)], masters)
        self._require(group, configs, connections.online or bool(lag.queues))
        holders = [b for b, t in configs.items() if group in t]
        return GroupDescription(
            group=group,
            brokers=holders,
            config=_config_view(configs[holders[0]][group]) if holders else None,
            connections=connections,
            lag=lag,
        )

    # -- changes ----------------------------------------------------------------------------------
    @admin_call
    async def group_create(
        self, spec: GroupSpec, cluster: str | None = None, broker: str | None = None
    ) -> GroupChange:
        """Create a subscription group on one broker or on a cluster's masters; fails if it exists."""
        from broker.protocol.group_bodies import SubscriptionGroupConfig

        targets = await self._broker_targets(cluster, broker)
        configs = await self._group_configs(targets)
        existing = [b for b, t in configs.items() if spec.name in t]
        if existing:
            raise OperationFailed(f"consumer group {spec.name} already exists on {', '.join(existing)}")
        base = SubscriptionGroupConfig(groupName=spec.name)
        return await self._write_group(spec, {b: base for b in targets}, targets)

    @admin_call
    async def group_update(
        self, spec: GroupSpec, cluster: str | None = None, broker: str | None = None
    ) -> GroupChange:
        """Change a group on the brokers that hold it (or on the brokers named)."""
        explicit = cluster is not None or broker is not None
        targets = await (self._broker_targets(cluster, broker) if explicit else self._all_masters())
        configs = await self._group_configs(targets)
        current = {b: t[spec.name] for b, t in configs.items() if spec.name in t}
        missing = [b for b in targets if b not in current]
        if not current or (explicit and missing):
            where = f" on {', '.join(missing)}" if current else ""
            raise NotFound(f"consumer group {spec.name} not found{where}")
        return await self._write_group(spec, current, {b: targets[b] for b in current})

    async def _write_group(
        self, spec: GroupSpec, current: dict[str, SubscriptionGroupConfig], targets: dict[str, str]
    ) -> GroupChange:
        from admin.models.groups import GroupChange

        problem = retry_values_problem(spec.retry_max_times, spec.retry_queue_nums)
        if problem:
            raise BadInput(problem)
        changes: dict[str, Any] = {
            "consumeEnable": spec.consume_enable,
            "consumeFromMinEnable": spec.consume_from_min_enable,
            "consumeBroadcastEnable": spec.consume_broadcast_enable,
            "consumeMessageOrderly": spec.orderly,
            "retryQueueNums": spec.retry_queue_nums,
            "retryMaxTimes": spec.retry_max_times,
        }
        updates = {k: v for k, v in changes.items() if v is not None}
        configs = {b: replace(c, groupName=spec.name, **updates) for b, c in current.items()}
        await gather(self.api.create_group(targets[b], c) for b, c in configs.items())
        return GroupChange(spec.name, sorted(targets.values()), _config_view(next(iter(configs.values()))))

    @admin_call
    async def group_delete(
        self,
        group: str,
        cluster: str | None = None,
        broker: str | None = None,
        remove_offsets: bool = True,
        progress: Progress | None = None,
    ) -> GroupDeletion:
        """Delete a subscription group (and by default its offsets) from the brokers holding it."""
        from admin.models.groups import GroupDeletion

        explicit = cluster is not None or broker is not None
        targets = await (self._broker_targets(cluster, broker) if explicit else self._all_masters())
        configs = await self._group_configs(targets)
        holders = {b: a for b, a in targets.items() if group in configs[b]}
        if not holders:
            raise NotFound(f"consumer group {group} not found")
        await tracked(
            (self.api.delete_group(a, group, remove_offsets) for a in holders.values()),
            "deleting group",
            progress,
        )
        return GroupDeletion(group, sorted(holders.values()))

    @admin_call
    async def group_reset_offset(
        self,
        group: str,
        target: ResetTarget,
        topic: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> OffsetReset:
        """Move a group's offsets on every queue of ``topic`` (default: every topic it consumes).

        A dry run computes the targets the brokers would set (earliest = min offset, latest = max
        offset, a time = the first message stored at or after it) and changes nothing."""
        from admin.models.groups import OffsetReset, QueueReset

        masters = await self._all_masters()
        configs, stats = await asyncio.gather(
            self._group_configs(masters), self._stats(group, topic, masters)
        )
        self._require(group, configs, False)
        current = {mq: o.consumerOffset for s in stats for mq, o in s.offsetTable.items()}
        topics = (
            [topic]
            if topic
            else sorted({mq.topic for mq in current if not mq.topic.startswith(RETRY_PREFIX)})
        )
        if not topics:
            raise NotFound(f"consumer group {group} has no offsets yet; name the topic to reset")
        routes = await gather(self._route(t) for t in topics)
        jobs = [
            (t, name, addr)
            for t, route in zip(topics, routes, strict=True)
            for name, addr in self._route_masters(route).items()
        ]
        if dry_run:
            tables = await tracked(
                (self._planned(addr, t, target) for t, _, addr in jobs), "planning", progress
            )
        else:
            before = [
                QueueReset(mq.topic, mq.brokerName, mq.queueId, offset, offset)
                for mq, offset in sorted(
                    current.items(), key=lambda i: (i[0].topic, i[0].brokerName, i[0].queueId)
                )
                if mq.topic in topics
            ]
            await self._save_snapshot(group, f"reset to {target.kind.value}", before)
            tables = await tracked(
                (self._reset(addr, group, t, target) for t, _, addr in jobs), "resetting", progress
            )
        queues = sorted(
            (
                QueueReset(mq.topic, mq.brokerName, mq.queueId, current.get(mq, -1), offset)
                for table in tables
                for mq, offset in table.items()
            ),
            key=lambda q: (q.topic, q.broker_name, q.queue_id),
        )
        return OffsetReset(group, target, dry_run, queues)

    async def _save_snapshot(self, group: str, reason: str, queues: list[QueueReset]) -> None:
        """Keep the offsets a reset is about to move, on every NameServer (one snapshot per group)."""
        from admin.models.groups import OffsetSnapshot

        value = OffsetSnapshot(group, _now_ms(), reason, queues).to_kv()
        await gather(self.api.put_kv(addr, SNAPSHOT_NAMESPACE, group, value) for addr in self.namesrv)

    @admin_call
    async def group_offsets_snapshot(self, group: str) -> OffsetSnapshot:
        """The offsets saved before the group's last reset or skip."""
        from admin.models.groups import OffsetSnapshot

        text = await self.api.get_kv(self.namesrv, SNAPSHOT_NAMESPACE, group)
        if text is None:
            raise NotFound(f"no offsets of {group} were saved: nothing reset them through rmq yet")
        try:
            return OffsetSnapshot.from_kv(group, text)
        except (ValueError, KeyError, TypeError):
            raise OperationFailed(f"the saved offsets of {group} are unreadable") from None

    @admin_call
    async def group_offsets_undo(self, group: str, dry_run: bool = False) -> OffsetReset:
        """Move the group's offsets back to the snapshot taken before its last reset or skip (saving
        the offsets it leaves, so an undo can be undone). Queues that had no offset are left alone."""
        from admin.models.groups import OffsetReset, QueueReset, ResetKind, ResetTarget

        snapshot = await self.group_offsets_snapshot(group)
        masters = await self._all_masters()
        wanted = [q for q in snapshot.queues if q.current >= 0]
        stats = await self._stats(group, None, masters)
        now = {
            (mq.topic, mq.brokerName, mq.queueId): o.consumerOffset
            for s in stats
            for mq, o in s.offsetTable.items()
        }
        moves = [
            QueueReset(
                q.topic,
                q.broker_name,
                q.queue_id,
                now.get((q.topic, q.broker_name, q.queue_id), -1),
                q.current,
            )
            for q in wanted
        ]
        missing = sorted({q.broker_name for q in moves} - set(masters))
        if missing:
            raise NotFound(f"broker(s) {', '.join(missing)} of the saved offsets are not registered")
        if not dry_run:
            here = [QueueReset(q.topic, q.broker_name, q.queue_id, q.current, q.current) for q in moves]
            await self._save_snapshot(group, "undo", here)
            await gather(
                self.api.reset_offset(
                    masters[q.broker_name], group, q.topic, offset=q.target, queue_id=q.queue_id
                )
                for q in moves
            )
        return OffsetReset(group, ResetTarget(ResetKind.SNAPSHOT, snapshot.taken_ms), dry_run, moves)

    async def _reset(self, addr: str, group: str, topic: str, target: ResetTarget) -> dict[MessageQueue, int]:
        from admin.models.groups import ResetKind

        if target.kind is ResetKind.OFFSET:
            body = await self.api.reset_offset(addr, group, topic, offset=target.value)
        else:
            stamp = {ResetKind.EARLIEST: 0, ResetKind.LATEST: -1}.get(target.kind, target.value)
            body = await self.api.reset_offset(addr, group, topic, timestamp=stamp)
        return body.offsetTable

    async def _planned(self, addr: str, topic: str, target: ResetTarget) -> dict[MessageQueue, int]:
        from admin.models.groups import ResetKind

        stats = (await self.api.topic_stats(addr, topic)).offsetTable
        if target.kind is ResetKind.TIME:
            found = await gather(
                self.api.search_offset(addr, topic, mq.queueId, target.value) for mq in stats
            )
            return dict(zip(stats, found, strict=True))
        out: dict[MessageQueue, int] = {}
        for mq, o in stats.items():
            if target.kind is ResetKind.OFFSET and not o.minOffset <= target.value <= o.maxOffset:
                raise OperationFailed(
                    f"offset {target.value} of queue {mq.queueId} on {mq.brokerName} is outside "
                    f"[{o.minOffset}, {o.maxOffset}]"
                )
            out[mq] = {ResetKind.EARLIEST: o.minOffset, ResetKind.LATEST: o.maxOffset}.get(
                target.kind, target.value
            )
        return out

    @admin_call
    async def group_clone_offsets(
        self, source: str, destination: str, topic: str | None = None
    ) -> OffsetClone:
        """Copy ``source``'s offsets to ``destination`` on every master broker."""
        from admin.models.groups import OffsetClone

        masters = await self._all_masters()
        configs = await self._group_configs(masters)
        self._require(source, configs, False)
        await gather(self.api.clone_group_offset(a, source, destination, topic) for a in masters.values())
        return OffsetClone(source, destination, topic, sorted(masters.values()))
