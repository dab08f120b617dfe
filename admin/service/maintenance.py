"""Broker maintenance: one topic's or group's configuration per broker, topics and groups created in
batches, a topic's permission, ConsumeQueue inspection and the store clean-ups (expired ConsumeQueues,
expired CommitLog files, queues of topics without a configuration)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from admin.errors import BadInput, NotFound
from admin.service.base import ServiceBase, admin_call, gather, master_address
from broker.client.admin_api import RemoteError
from broker.protocol.bodies import BodyError, JsonBody, TopicConfig, load_json
from broker.protocol.codes import ResponseCode

if TYPE_CHECKING:
    from admin.models.groups import GroupConfigAt
    from admin.models.topic_details import PermChange
    from broker.protocol.group_bodies import QueryConsumeQueueResponseBody, SubscriptionGroupConfig

J = TypeVar("J", bound=JsonBody)


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
            route = await self._route(topic)
            addrs = route.brokerDatas[0].brokerAddrs if route.brokerDatas else {}
            broker = addrs.get(0)
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
        """``call(address)`` on ``broker``, else on every broker (masters and slaves, as mqadmin does)
        of ``cluster``, else of every cluster."""
        if broker is not None:
            addrs = [broker]
        else:
            info = await self._cluster()
            if cluster is not None and cluster not in info.clusterAddrTable:
                raise NotFound(f"cluster {cluster} not found")
            clusters = [cluster] if cluster is not None else sorted(info.clusterAddrTable)
            names = sorted({b for c in clusters for b in info.clusterAddrTable[c]})
            addrs = [
                a
                for n in names
                if (data := info.brokerAddrTable.get(n)) is not None
                for _, a in sorted(data.brokerAddrs.items())
            ]
            if not addrs:
                raise NotFound("no broker is registered with the NameServer")
        await gather(call(a) for a in addrs)
        return addrs
