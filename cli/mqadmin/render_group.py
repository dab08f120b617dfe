"""mqadmin's text layouts for subscription groups and their consumers (the Java spellings they share
are in render.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.models import (
        ClientInfo,
        GroupConfigAt,
        GroupConnections,
        GroupLag,
        OffsetReset,
        ProducerInstance,
    )
    from broker.protocol.group_bodies import QueryConsumeQueueResponseBody

from cli.mqadmin.render import fastjson, hashmap_order, java_map, jstr, plain_time, version_desc


def consumer_progress(lag: GroupLag, client_ips: Mapping[tuple[str, str, int], str] | None = None) -> str:
    """``consumerProgress -g``: per queue offsets and lag, then the totals. With ``client_ips``
    (``-s true``) a #Client IP column follows the consumer offset (``N/A`` when unknown)."""
    show_ip = client_ips is not None
    ip_head = f"{'#Client IP':<20}  " if show_ip else ""
    out = [
        f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Broker Offset':<20}  "
        f"{'#Consumer Offset':<20}  {ip_head}{'#Diff':<20} {'#Inflight':<20}#LastTime\n"
    ]
    for q in lag.queues:
        last = plain_time(q.last_timestamp) if q.last_timestamp > 0 else "N/A"
        ip = ""
        if client_ips is not None:
            ip = f"{client_ips.get((q.topic, q.broker_name, q.queue_id), 'N/A'):<20}  "
        out.append(
            f"{q.topic[:64]:<64}  {q.broker_name[:32]:<32}  {q.queue_id:<4}  {q.broker_offset:<20}  "
            f"{q.consumer_offset:<20}  {ip}{q.diff:<20} {q.inflight:<20} {last}\n"
        )
    out.append(f"\nConsume TPS: {lag.consume_tps:.2f}\n")
    out.append(f"Consume Diff Total: {lag.diff_total}\n")
    out.append(f"Consume Inflight Total: {lag.inflight_total}\n")
    return "".join(out)


def consumer_progress_groups(rows: Iterable[tuple[GroupConnections, GroupLag]]) -> str:
    """``consumerProgress`` without ``-g``: one row per group."""
    out = [
        f"{'#Group':<64}  {'#Count':<6}  {'#Version':<24} {'#Type':<5}  {'#Model':<14}  "
        f"{'#TPS':<7}  #Diff Total\n"
    ]
    for conn, lag in rows:
        versions = [c.version for c in conn.clients]
        version = version_desc(min(versions)) if versions else "OFFLINE"
        ctype = conn.consume_type or ""
        model = (conn.message_model or "") if ctype == "PUSH" else ""
        out.append(
            f"{conn.group[:64]:<64}  {len(conn.clients):<6}  {version:<24} {ctype:<5}  {model:<14}  "
            f"{int(lag.consume_tps):<7}  {lag.diff_total}\n"
        )
    return "".join(out)


def consumer_connection(conn: GroupConnections) -> str:
    """``consumerConnection``: clients, subscriptions, and the group's consume settings."""
    out = [f"{'#ClientId':<36} {'#ClientAddr':<22} {'#Language':<10} #Version\n"]
    out += [
        f"{c.client_id:<36} {c.address:<22} {c.language:<10} {version_desc(c.version)}\n"
        for c in conn.clients
    ]
    out.append("\nBelow is subscription:\n")
    out.append(f"{'#Topic':<20} #SubExpression\n")
    out += [f"{s.topic:<20} {s.expression}\n" for s in conn.subscriptions]
    out.append("\n")
    out.append(f"ConsumeType: {_consume_type(conn.consume_type)}\n")
    out.append(f"MessageModel: {jstr(conn.message_model)}\n")
    out.append(f"ConsumeFromWhere: {jstr(conn.consume_from_where)}\n")
    return "".join(out)


def _consume_type(kind: str | None) -> str:
    return {"PULL": "CONSUME_ACTIVELY", "PUSH": "CONSUME_PASSIVELY", "POP": "CONSUME_POP"}.get(
        kind or "", "null"
    )


def producer_connection(clients: Sequence[ClientInfo]) -> str:
    return "".join(
        f"{i:04d}  {c.client_id:<32} {c.address:<22} {c.language:<8} {version_desc(c.version)}\n"
        for i, c in enumerate(clients, 1)
    )


def producer_table(table: Mapping[str, Sequence[ProducerInstance]]) -> str:
    """``producer``: a line per producer (``ProducerInfo.toString``), groups in HashMap order."""
    out = []
    for group in hashmap_order(table):
        if not table[group]:
            out.append(f"producer group ({group}) instances are empty\n")
        out += [
            f"producer group ({group}) instance : clientId={p.client_id},remoteIP={p.remote_address}, "
            f"language={p.language}, version={p.version}, lastUpdateTimestamp={p.last_update}\n"
            for p in table[group]
        ]
    return "".join(out)


def offset_reset(reset: OffsetReset, timestamp_text: str) -> str:
    """``resetOffsetByTime``: the request, then the new offset of every queue."""
    topic = reset.queues[0].topic if reset.queues else ""
    return (
        f"start reset consumer offset by specified, group[{reset.group}], topic[{topic}], force[true], "
        f"timestamp(string)[{timestamp_text}], timestamp(long)[{reset.target.value}]\n"
    ) + offset_table(reset)


def offset_table(reset: OffsetReset) -> str:
    """The new offset of every queue, as ``resetOffsetByTime`` and ``skipAccumulatedMessage`` print it."""
    out = [f"{'#brokerName':<40}  {'#queueId':<40}  {'#offset':<40}\n"]
    out += [f"{q.broker_name[:32]:<40}  {q.queue_id:<40}  {q.target:<40}\n" for q in reset.queues]
    return "".join(out)


def consumer_config(found: Sequence[GroupConfigAt]) -> str:
    """``getConsumerConfig``: per broker a banner, then every SubscriptionGroupConfig field as
    ``%-40s=  %s`` in declaration order (an absent value prints empty)."""
    out = []
    for at in found:
        out.append(f"{'=' * 29}{jstr(at.cluster)}:{at.broker_name}{'=' * 29}\n")
        for f in dataclasses.fields(at.config):
            value = getattr(at.config, f.name)
            out.append(f"{f.name:<40}=  {'' if value is None else _java_text(f.name, value)}\n")
    return "".join(out)


def _java_text(name: str, value: object) -> str:
    """Java's ``toString`` of a SubscriptionGroupConfig field value."""
    if name == "groupRetryPolicy" and isinstance(value, Mapping):
        parts = [
            f"{key}={_policy(value.get(key), key)}"
            for key in ("type", "exponentialRetryPolicy", "customizedRetryPolicy")
        ]
        return "GroupRetryPolicy{" + ", ".join(parts) + "}"
    if isinstance(value, Mapping):
        return java_map({str(k): jstr(v) for k, v in value.items()})
    if isinstance(value, list):
        return "[" + ", ".join(jstr(v) for v in value) + "]"
    return jstr(value)


def _policy(value: object, key: str) -> str:
    """A retry policy as Guava's ``toStringHelper`` writes it: ``ExponentialRetryPolicy{initial=…}``."""
    if not isinstance(value, Mapping):
        return jstr(value)
    inner = ", ".join(f"{k}={_java_text(k, v)}" for k, v in value.items())
    return f"{key[0].upper()}{key[1:]}{{{inner}}}"


CQ_RULE = "=" * 38


def consume_queue(body: QueryConsumeQueueResponseBody, index: int) -> str:
    """``queryCq``: the group's subscription and filter when asked, the queue's bounds, then each
    unit as ``ConsumeQueueData.toString``."""
    out = []
    if body.subscriptionData is not None:
        sub = dataclasses.asdict(body.subscriptionData)
        doc = {k: sub[k] for k in sorted(sub) if sub[k] is not None}
        out.append(f"Subscription data: \n{fastjson(doc, 0)}\n{CQ_RULE}\n")
    if body.filterData is not None:
        out.append(f"Filter data: \n{body.filterData}\n{CQ_RULE}\n")
    out.append(f"Queue data: \nmax: {body.maxQueueIndex}, min: {body.minQueueIndex}\n{CQ_RULE}\n")
    for i, unit in enumerate(body.queueData or [], start=index):
        out.append(
            f"idx: {i}\nConsumeQueueData{{physicOffset={unit.physicOffset}, physicSize={unit.physicSize}, "
            f"tagsCode={unit.tagsCode}, extendDataJson='{jstr(unit.extendDataJson)}', "
            f"bitMap='{jstr(unit.bitMap)}', eval={jstr(unit.eval)}, msg='{jstr(unit.msg)}'}}\n{CQ_RULE}\n"
        )
    return "".join(out)
