"""Metadata as files: export a cluster's topics and groups, apply a file (create what is missing,
update what differs, never delete)."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from admin.errors import BadInput
from admin.metadata_file import GROUPS_KEY, TOPICS_KEY, Entry, MetadataFile
from admin.models.names import TopicKind, is_system_group, topic_kind
from admin.service.base import Progress, admin_call, gather
from admin.service.groups import GroupOps, retry_values_problem
from admin.service.topics import TopicOps, new_topic_config, system_names, topic_configs, tracked
from broker.protocol.bodies import TopicConfig
from broker.protocol.group_bodies import SubscriptionGroupConfig

if TYPE_CHECKING:
    from admin.models.metadata import FieldChange, MetadataItem, MetadataPlan
    from admin.models.topic_details import TopicSpec

T = TypeVar("T")
Tables = dict[str, dict[str, Any]]  # broker name -> name -> config
_EXPORTED_KINDS = {False: {TopicKind.NORMAL}, True: {TopicKind.NORMAL, TopicKind.RETRY, TopicKind.DLQ}}


class MetadataOps(TopicOps, GroupOps):
    @admin_call
    async def metadata_export(
        self,
        cluster: str | None = None,
        broker: str | None = None,
        special_topics: bool = False,
        summed: bool = False,
    ) -> dict[str, Any]:
        """Topics and groups of the target brokers in ``mqadmin exportMetadata``'s shape. Queue numbers
        are per broker, as ``topic create`` takes them; ``summed`` adds them up over the brokers (topic
        read/write queues, group retry queues), as the Java tool writes a cluster's export."""
        targets = await self._broker_targets(cluster, broker)
        topics, groups = await self._tables(targets)
        names = system_names(await self._cluster())
        kinds = _EXPORTED_KINDS[special_topics]
        topic_table = _merged(
            topics,
            lambda name: topic_kind(name, names) in kinds,
            lambda held, c: replace(
                c,
                readQueueNums=held.readQueueNums + c.readQueueNums,
                writeQueueNums=held.writeQueueNums + c.writeQueueNums,
            ),
            summed,
        )
        group_table = _merged(
            groups,
            lambda name: not is_system_group(name),
            lambda held, g: replace(g, retryQueueNums=held.retryQueueNums + g.retryQueueNums),
            summed,
        )
        return {
            TOPICS_KEY: {n: _as_json(c) for n, c in sorted(topic_table.items())},
            GROUPS_KEY: {n: _as_json(g) for n, g in sorted(group_table.items())},
            "exportTime": int(time.time() * 1000),
        }

    @admin_call
    async def metadata_apply(
        self,
        doc: MetadataFile,
        cluster: str | None = None,
        broker: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> MetadataPlan:
        """Bring the target brokers to what ``doc`` describes; with ``dry_run`` only say what that takes."""
        from admin.models.metadata import MetadataAction, MetadataPlan

        names = system_names(await self._cluster())
        for entry in doc.topics:
            if topic_kind(entry.name, names) is not TopicKind.NORMAL:
                raise BadInput(
                    f"{TOPICS_KEY}.{entry.name}: retry, dead-letter and system topics are not applied"
                )
        for entry in doc.groups:
            if is_system_group(entry.name):
                raise BadInput(f"{GROUPS_KEY}.{entry.name}: system groups are not applied")
            assert isinstance(entry.config, SubscriptionGroupConfig)
            problem = retry_values_problem(entry.config.retryMaxTimes, entry.config.retryQueueNums)
            if problem:
                raise BadInput(f"{GROUPS_KEY}.{entry.name}: {problem}")
        targets = await self._broker_targets(cluster, broker)
        topics, groups = await self._tables(targets)
        items = [_plan("topic", e, topics) for e in doc.topics]
        items += [_plan("group", e, groups) for e in doc.groups]
        pending = [
            (item, entry)
            for item, entry in zip(items, [*doc.topics, *doc.groups], strict=True)
            if item.action is not MetadataAction.UNCHANGED
        ]
        if pending and not dry_run:
            await self._apply(pending, topics, groups, targets, progress)
        return MetadataPlan(items, len(pending), applied=bool(pending) and not dry_run, notes=doc.notes)

    async def _tables(self, targets: dict[str, str]) -> tuple[Tables, Tables]:
        addrs = list(targets.values())
        topic_tables = await gather(self.api.all_topic_config(a) for a in addrs)
        group_tables = await gather(self.api.all_group_config(a) for a in addrs)
        return dict(zip(targets, topic_tables, strict=True)), dict(zip(targets, group_tables, strict=True))

    async def _apply(
        self,
        pending: list[tuple[MetadataItem, Entry]],
        topics: Tables,
        groups: Tables,
        targets: dict[str, str],
        progress: Progress | None,
    ) -> None:
        """Write the pending items with UPDATE_AND_CREATE_TOPIC_LIST and
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, APPLY_BATCH at a time per broker (the brokers in
        parallel); then the NameServers' order configuration of the topics that set ``order``."""

        topic_writes: dict[str, list[TopicConfig]] = {b: [] for b in targets}
        group_writes: dict[str, list[SubscriptionGroupConfig]] = {b: [] for b in targets}
        ordered: list[tuple[TopicSpec, dict[str, TopicConfig]]] = []
        for item, entry in pending:
            if item.kind == "topic":
                spec = _topic_spec(entry)
                current = {b: topics[b].get(entry.name) or new_topic_config(entry.name) for b in item.brokers}
                configs = topic_configs(spec, current)
                for b, config in configs.items():
                    topic_writes[b].append(_signed(config))
                if spec.order is not None:
                    ordered.append((spec, configs))
            else:
                wanted = {k: getattr(entry.config, k) for k in entry.given}
                base = SubscriptionGroupConfig(groupName=entry.name)
                for b in item.brokers:
                    group_writes[b].append(replace(groups[b].get(entry.name) or base, **wanted))
        batches: dict[str, list[Callable[[], Awaitable[None]]]] = {b: [] for b in targets}
        for b, addr in targets.items():
            for topic_batch in _chunks(topic_writes[b]):
                batches[b].append(functools.partial(self.api.create_topics, addr, topic_batch))
            for group_batch in _chunks(group_writes[b]):
                batches[b].append(functools.partial(self.api.create_groups, addr, group_batch))
        total = sum(map(len, batches.values()))
        done = 0

        async def write(calls: list[Callable[[], Awaitable[None]]]) -> None:
            nonlocal done
            for call in calls:  # one at a time per broker: each batch is a unit of work there
                await call()
                done += 1
                if progress is not None:
                    progress("applying", done, total)

        await gather(write(calls) for calls in batches.values())
        await tracked((self._write_order_conf(spec, c) for spec, c in ordered), "ordering", progress)


# items per UPDATE_AND_CREATE_*_LIST request: each is some milliseconds of the broker's work, so a broker
# (and the NameServer of its process) stays responsive while thousands go in
APPLY_BATCH = 250


def _chunks(items: list[T]) -> list[list[T]]:
    return [items[i : i + APPLY_BATCH] for i in range(0, len(items), APPLY_BATCH)]


def _topic_spec(entry: Entry) -> TopicSpec:
    """The fields the file gives for a topic (the others stay as the broker has them)."""
    from admin.models.topic_details import TopicSpec

    config = entry.config
    assert isinstance(config, TopicConfig)
    given = entry.given
    return TopicSpec(
        entry.name,
        config.readQueueNums if "readQueueNums" in given else None,
        config.writeQueueNums if "writeQueueNums" in given else None,
        config.perm if "perm" in given else None,
        config.order if "order" in given else None,
        dict(config.attributes) if "attributes" in given else {},
    )


def _signed(config: TopicConfig) -> TopicConfig:
    """UPDATE_AND_CREATE_TOPIC_LIST carries attribute keys signed (``+key`` sets one)."""
    return replace(config, attributes={f"+{k}": v for k, v in config.attributes.items()})


def _as_json(config: TopicConfig | SubscriptionGroupConfig) -> Any:
    return json.loads(config.to_json(standard=True))


def _merged(
    tables: Tables, keep: Callable[[str], bool], add: Callable[[Any, Any], Any], summed: bool
) -> dict[str, Any]:
    """Name -> config over the brokers' tables for the names ``keep`` takes: the first broker's, or with
    ``summed`` what ``add`` makes of every broker's (queue numbers added up)."""
    out: dict[str, Any] = {}
    for table in tables.values():
        for name, config in table.items():
            if keep(name):
                held = out.get(name)
                out[name] = config if held is None else add(held, config) if summed else held
    return out


def _differs(field: str, current: Any, wanted: Any) -> bool:
    if field == "attributes":  # the file sets these attributes; others the broker holds stay
        return any(current.get(k) != v for k, v in wanted.items())
    return bool(current != wanted)


def _plan(kind: str, entry: Entry, tables: Tables) -> MetadataItem:
    from admin.models.metadata import FieldChange, MetadataAction, MetadataItem

    missing = [b for b, table in tables.items() if entry.name not in table]
    changed: dict[str, FieldChange] = {}
    writes = list(missing)
    for broker_name, table in tables.items():
        current = table.get(entry.name)
        for field in sorted(entry.given):
            wanted = getattr(entry.config, field)
            held = None if current is None else getattr(current, field)
            if current is None or _differs(field, held, wanted):
                changed.setdefault(field, FieldChange(field, held, wanted))
                if broker_name not in writes:
                    writes.append(broker_name)
    if missing:
        action = MetadataAction.CREATE
    elif writes:
        action = MetadataAction.UPDATE
    else:
        action = MetadataAction.UNCHANGED
    return MetadataItem(kind, entry.name, action, sorted(writes) or sorted(tables), list(changed.values()))
