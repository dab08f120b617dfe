"""``/metrics``: what a broker and a NameServer in this process expose to Prometheus.

Runs in a worker thread (it reads store files); it only reads counters, tables and offsets.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from broker.server.config import BrokerConfig
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.prometheus import MetricsText
from broker.server.stats import BrokerStats
from broker.store.message_store import MessageStore, default_disk_usage

if TYPE_CHECKING:
    from broker.namesrv.server import NameServer


class MetricsParts(Protocol):
    """The parts of the broker its metrics read."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def appends_on_event_loop(self) -> bool: ...


def render_metrics(broker: MetricsParts | None, namesrv: NameServer | None) -> str:
    out = MetricsText()
    if broker is not None:
        _broker_metrics(out, broker)
    if namesrv is not None:
        _namesrv_metrics(out, namesrv)
    return out.render()


def _broker_metrics(out: MetricsText, broker: MetricsParts) -> None:
    labels = {"cluster": broker.config.broker_cluster_name, "broker": broker.config.broker_name}
    snap = broker.stats.snapshot()
    for c in snap.topics_put:
        out.counter("messages_in", "Messages stored, by topic.", c.messages, {**labels, "topic": c.key})
    for c in snap.topics_put:
        out.counter("bytes_in", "Message bytes stored, by topic.", c.bytes, {**labels, "topic": c.key})
    for c in snap.topics_put:
        out.gauge("put_tps", "Messages stored per second over the last 10 s, by topic.", c.rates.tps10,
                  {**labels, "topic": c.key})  # fmt: skip
    for c in snap.groups_get:
        topic, _, group = c.key.partition("@")
        out.counter("messages_out", "Messages delivered to consumers, by topic and group.", c.messages,
                    {**labels, "topic": topic, "group": group})  # fmt: skip
    for c in snap.groups_get:
        topic, _, group = c.key.partition("@")
        out.counter("bytes_out", "Message bytes delivered, by topic and group.", c.bytes,
                    {**labels, "topic": topic, "group": group})  # fmt: skip
    out.gauge("appends_on_event_loop", "1 while message appends run on the event loop; 0 on the store-writer "
              "thread (appendOnEventLoop off, or an append stalled in the last minute).",
              1 if broker.appends_on_event_loop else 0, labels)  # fmt: skip
    for lat in snap.requests:
        finite = [(bound, count) for bound, count in lat.buckets if bound != float("inf")]
        req = {**labels, "code": str(lat.code), "request": lat.name}
        help_text = "Request handling time by request code."
        out.histogram("request_latency_seconds", help_text, finite, lat.sum_seconds, lat.count, req)

    store = broker.store
    out.gauge("commitlog_min_offset", "First CommitLog byte still kept.", store.commitlog.min_offset, labels)
    out.gauge("commitlog_max_offset", "CommitLog bytes written.", store.commitlog.max_offset, labels)
    out.gauge("disk_used_ratio", "Used fraction of the store's disk.", default_disk_usage(store.root), labels)
    for (topic, queue_id), cq in sorted(store.queues.queues.items()):
        q = {**labels, "topic": topic, "queue": str(queue_id)}
        out.gauge("queue_max_offset", "Next ConsumeQueue offset to be written, by queue.", cq.max_offset, q)
    for (topic, queue_id), cq in sorted(store.queues.queues.items()):
        q = {**labels, "topic": topic, "queue": str(queue_id)}
        out.gauge("queue_min_offset", "First ConsumeQueue offset still kept, by queue.", cq.min_offset, q)
    behind: dict[str, tuple[int, int | None]] = {}  # group -> (messages, oldest unconsumed store time)
    for key, queues in sorted(broker.offsets.table.items()):
        topic, _, group = key.rpartition("@")
        for queue_id, committed in sorted(queues.items()):
            lag = max(0, store.max_offset(topic, queue_id) - max(committed, 0))
            q = {**labels, "group": group, "topic": topic, "queue": str(queue_id)}
            out.gauge("consumer_lag", "Messages not yet consumed (max offset - committed), by queue.", lag, q)
            first = max(committed, store.min_offset(topic, queue_id))
            stamp = store.store_time_at(topic, queue_id, first) if lag > 0 else None
            count, oldest = behind.get(group, (0, None))
            if stamp is not None and (oldest is None or stamp < oldest):
                oldest = stamp
            behind[group] = (count + lag, oldest)
    now_ms = time.time() * 1000
    for group, (count, _) in sorted(behind.items()):
        out.gauge("group_lag", "Messages not yet consumed, by group (every topic and queue).", count,
                  {**labels, "group": group})  # fmt: skip
    for group, (_, oldest) in sorted(behind.items()):
        age = 0.0 if oldest is None else max(0.0, (now_ms - oldest) / 1000)
        out.gauge("group_lag_seconds", "How long the oldest unconsumed message of a group has waited.", age,
                  {**labels, "group": group})  # fmt: skip


def _namesrv_metrics(out: MetricsText, namesrv: NameServer) -> None:
    table = namesrv.route_table
    out.gauge("namesrv_brokers", "Brokers registered and alive.", len(table.live_brokers()))
    out.gauge("namesrv_topics", "Topics with a route.", len(table.topic_names()))
