"""The mqadmin commands: their options (letters, long names, descriptions as in RocketMQ's
``buildCommandlineOptions``) and what each does: parse the values, call the admin service, render with
:mod:`cli.mqadmin.render`. Nothing here computes what a view shows.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from cli.mqadmin import acl as mqadmin_acl
from cli.mqadmin import auth as mqadmin_auth
from cli.mqadmin import broker_ops as mqadmin_broker_ops
from cli.mqadmin import controller as mqadmin_controller
from cli.mqadmin import render as R
from cli.mqadmin import trace as mqadmin_trace
from cli.mqadmin.args import (
    Command,
    Handler,
    Values,
    attributes,
    boolean,
    every,
    flag,
    flag_opt,
    integer,
    java_time,
    non_negative,
    o,
    opt,
    req,
)

if TYPE_CHECKING:
    from admin.models import MessageRange, Messages
    from admin.service import AdminService

BODY_DIR = Path("/tmp/rocketmq/msgbodys")  # where queryMsgById writes message bodies
EXPORT_DIR = Path("/tmp/rocketmq/export")  # exportMetadata's default -f
ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"
_READ_ALL = 10_000_000  # printMsg reads whole queues


# -- topics -----------------------------------------------------------------------------------------
async def update_topic(s: AdminService, v: Values) -> str:
    from admin.models import TopicSpec

    topic = req(v, "topic")
    order = opt(v, "order")
    spec = TopicSpec(
        topic,
        integer(v, "readQueueNums", 8),
        integer(v, "writeQueueNums", 8),
        integer(v, "perm", 6),
        None if order is None else order.lower() == "true",
        attributes(opt(v, "attributes")),
    )
    cluster, broker = opt(v, "clusterName"), opt(v, "brokerAddr")
    try:
        await s.topic_route(topic)
    except NotFound:
        change = await s.topic_create(spec, cluster, broker)
    else:
        change = await s.topic_update(spec, cluster, broker)
    return R.topic_change(change, by_cluster=broker is None)


async def delete_topic(s: AdminService, v: Values) -> str:
    topic, cluster = req(v, "topic"), req(v, "clusterName")
    await s.topic_delete(topic, cluster)
    return (
        f"delete topic [{topic}] from cluster [{cluster}] success.\n"
        f"delete topic [{topic}] from NameServer success.\n"
    )


async def topic_list(s: AdminService, v: Values) -> str:
    from admin.models import TopicKind

    listing = await s.topic_list()
    if not flag(v, "clusterModel"):
        return "".join(f"{t.name}\n" for t in listing.topics)
    topics = [t for t in listing.topics if t.kind not in (TopicKind.RETRY, TopicKind.DLQ)]
    groups = await s.topic_consumers([t.name for t in topics])
    rows = [
        (t.clusters[0] if t.clusters else "", t.name, g) for t in topics for g in (groups.get(t.name) or [""])
    ]
    return R.topic_list_clusters(rows)


async def topic_route(s: AdminService, v: Values) -> str:
    route = await s.topic_route(req(v, "topic"))
    return R.topic_route_list(route) if flag(v, "list") else R.topic_route_json(route)


async def topic_status(s: AdminService, v: Values) -> str:
    return R.topic_status(await s.topic_status(req(v, "topic")))


async def topic_cluster_list(s: AdminService, v: Values) -> str:
    route = await s.topic_route(req(v, "topic"))
    return "".join(f"{c}\n" for c in sorted({b.cluster for b in route.brokers}))


async def update_order_conf(s: AdminService, v: Values) -> str:
    topic, method = req(v, "topic"), req(v, "method")
    if method == "get":
        entries = await s.namesrv_kv_get(ORDER_TOPIC_NAMESPACE, topic)
        return f"get orderConf success. topic=[{topic}], orderConf=[{entries.entries[topic]}] "
    if method == "put":
        conf = req(v, "orderConf")
        await s.namesrv_kv_put(ORDER_TOPIC_NAMESPACE, topic, conf)
        return f"update orderConf success. topic=[{topic}], orderConf=[{conf}]"
    if method == "delete":
        await s.namesrv_kv_delete(ORDER_TOPIC_NAMESPACE, topic)
        return f"delete orderConf success. topic=[{topic}]"
    raise BadInput(f"--method must be put, get or delete, not {method!r}")


async def allocate_mq(s: AdminService, v: Values) -> str:
    topic = req(v, "topic")
    clients = [c.strip() for c in req(v, "ipList").split(",") if c.strip()]
    plan = await s.topic_allocation(topic, clients)
    parts = [
        f'"{cid}":['
        + ",".join(f'{{"brokerName":"{b}","queueId":{q},"topic":"{topic}"}}' for b, q in plan[cid])
        + "]"
        for cid in R.hashmap_order(plan)
    ]
    return '{"result":{' + ",".join(parts) + "}}\n"


async def update_topic_perm(s: AdminService, v: Values) -> str:
    cluster, broker = opt(v, "clusterName"), opt(v, "brokerAddr")
    if cluster is None and broker is None:
        raise BadInput("give -b brokerAddr or -c clusterName")
    changes = await s.topic_set_perm(req(v, "topic"), integer(v, "perm") or 0, cluster, broker)
    return R.topic_perm_change(changes, by_broker=broker is not None)


def _config_file(v: Values) -> bytes:
    name = req(v, "filename")
    try:
        return Path(name).read_bytes()
    except FileNotFoundError:
        raise BadInput(f"the file path {name} does not exists") from None
    except OSError as exc:
        raise BadInput(f"cannot read {name}: {exc.strerror}") from None


async def update_topic_list(s: AdminService, v: Values) -> str:
    from admin.service.maintenance import load_topic_configs

    configs = load_topic_configs(_config_file(v), req(v, "filename"))
    if not configs:
        return ""
    targets = await s.topic_create_list(configs, opt(v, "clusterName"), opt(v, "brokerAddr"))
    return R.batch_submitted(targets, "topic")


# -- groups -----------------------------------------------------------------------------------------
async def update_sub_group(s: AdminService, v: Values) -> str:
    from admin.models import GroupSpec

    def maybe_bool(name: str) -> bool | None:
        return None if opt(v, name) is None else boolean(v, name)

    spec = GroupSpec(
        req(v, "groupName"),
        maybe_bool("consumeEnable"),
        maybe_bool("consumeFromMinEnable"),
        maybe_bool("consumeBroadcastEnable"),
        maybe_bool("consumeMessageOrderly"),
        integer(v, "retryQueueNums"),
        integer(v, "retryMaxTimes"),
    )
    cluster, broker = opt(v, "clusterName"), opt(v, "brokerAddr")
    try:
        change = await s.group_update(spec, cluster, broker)
    except NotFound:
        change = await s.group_create(spec, cluster, broker)
    c = change.config
    lines = [f"create subscription group to {a} success." for a in change.addresses]
    config = (
        f"SubscriptionGroupConfig [groupName={change.group}, consumeEnable={R.jstr(c.consume_enable)}, "
        f"consumeFromMinEnable={R.jstr(c.consume_from_min_enable)}, "
        f"consumeBroadcastEnable={R.jstr(c.consume_broadcast_enable)}, "
        f"consumeMessageOrderly={R.jstr(c.consume_message_orderly)}, retryQueueNums={c.retry_queue_nums}, "
        f"retryMaxTimes={c.retry_max_times}, brokerId={c.broker_id}, "
        f"whichBrokerWhenConsumeSlowly={c.which_broker_when_consume_slowly}, "
        f"notifyConsumerIdsChangedEnable={R.jstr(c.notify_consumer_ids_changed_enable)}, "
        f"groupSysFlag={c.group_sys_flag}, consumeTimeoutMinute={c.consume_timeout_minute}, "
        f"attributes={R.java_map(c.attributes)}]"
    )
    return "\n".join(lines) + "\n" + config


async def delete_sub_group(s: AdminService, v: Values) -> str:
    group = req(v, "groupName")
    cluster, broker = opt(v, "clusterName"), opt(v, "brokerAddr")
    if cluster is None and broker is None:
        raise BadInput("give -b brokerAddr or -c clusterName")
    deletion = await s.group_delete(group, cluster, broker, remove_offsets=boolean(v, "removeOffset"))
    where = f" in cluster [{cluster}]" if broker is None else ""
    return "".join(
        f"delete subscription group [{group}] from broker [{a}]{where} success.\n" for a in deletion.addresses
    )


async def consumer_progress(s: AdminService, v: Values) -> str:
    import asyncio

    group = opt(v, "groupName")
    if group is not None:
        lag = s.group_lag(group, opt(v, "topicName"))
        if not boolean(v, "showClientIP"):
            return R.consumer_progress(await lag)
        clients = s.group_clients(group)  # who owns each queue, as its client reports
        done, owners = await asyncio.gather(lag, clients)
        return R.consumer_progress(done, owners.queue_owner_ips())
    # every group, offline ones too (Java lists only groups with a retry topic, so never-started ones
    # are missing there)
    return R.consumer_progress_groups((p.connections, p.lag) for p in await s.group_progress())


async def consumer_connection(s: AdminService, v: Values) -> str:
    from admin.errors import OperationFailed

    group = req(v, "consumerGroup")
    conn = await s.group_connections(group)
    if not conn.online:  # Java's examineConsumerConnectionInfo fails with the broker's code
        raise OperationFailed(f"CODE: 206 DESC: the consumer group[{group}] not online")
    return R.consumer_connection(conn)


async def consumer_status(s: AdminService, v: Values) -> str:
    group = req(v, "consumerGroup")
    jstack = flag(v, "jstack")
    client_id = opt(v, "clientId")
    if client_id is not None:
        (client,) = (await s.group_clients(group, client_id, jstack)).clients
        return R.consumer_running_info(client)
    result = await s.group_clients(group, jstack=jstack, broker=opt(v, "brokerAddr"))
    now = _now()
    out = [R.consumer_status_header()]
    index = 1
    for client in result.clients:
        if client.error is not None:
            sys.stderr.write(f"{client.client_id}: {client.error}\n")
            continue
        path = Path(str(now)) / client.client_id  # where Java writes it: relative to the working directory
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(R.consumer_running_info(client), encoding="utf-8")
        out.append(R.consumer_status_row(index, client, str(path)))
        index += 1
    out.append(R.consumer_status_analysis(result))
    return "".join(out)


async def producer_connection(s: AdminService, v: Values) -> str:
    return R.producer_connection(await s.producer_connections(req(v, "producerGroup"), req(v, "topic")))


async def producer(s: AdminService, v: Values) -> str:
    return R.producer_table((await s.producer_table(req(v, "broker"))).groups)


async def reset_offset_by_time(s: AdminService, v: Values) -> str:
    from admin.models import ResetKind, ResetTarget

    stamp_text = req(v, "timestamp")
    offset = integer(v, "offset")
    target = (
        ResetTarget(ResetKind.OFFSET, offset)
        if offset is not None
        else ResetTarget(ResetKind.TIME, java_time(stamp_text))
    )
    reset = await s.group_reset_offset(req(v, "group"), target, req(v, "topic"))
    return R.offset_reset(reset, stamp_text)


async def clone_group_offset(s: AdminService, v: Values) -> str:
    src, dst, topic = req(v, "srcGroup"), req(v, "destGroup"), req(v, "topic")
    await s.group_clone_offsets(src, dst, topic)
    return f"clone group offset success. srcGroup[{src}], destGroup=[{dst}], topic[{topic}]"


async def update_sub_group_list(s: AdminService, v: Values) -> str:
    from admin.service.maintenance import load_group_configs

    configs = load_group_configs(_config_file(v), req(v, "filename"))
    if not configs:
        return ""
    broker = opt(v, "brokerAddr")
    targets = await s.group_create_list(configs, opt(v, "clusterName"), broker)
    return R.batch_submitted(targets, "group" if broker is not None else "subscription group")


async def export_metadata(s: AdminService, v: Values) -> str:
    """Java's ``exportMetadata``: a cluster's tables with queue numbers summed over its masters (one
    broker's as they are), to ``<filePath>/topic.json``, ``subscriptionGroup.json`` or ``metadata.json``."""
    import json

    from admin.metadata_file import GROUPS_KEY, TOPICS_KEY

    cluster, broker = opt(v, "clusterName"), opt(v, "brokerAddr")
    doc = await s.metadata_export(cluster, broker, flag(v, "specialTopic"), summed=broker is None)
    if flag(v, "topic"):
        name, keep = "topic.json", {TOPICS_KEY}
    elif flag(v, "subscriptionGroup"):
        name, keep = "subscriptionGroup.json", {GROUPS_KEY}
    else:
        name, keep = "metadata.json", {TOPICS_KEY, GROUPS_KEY}
    path = Path(opt(v, "filePath") or EXPORT_DIR) / name
    body = {k: value for k, value in doc.items() if k in keep or k == "exportTime"}
    _write_export(path, json.dumps(body, indent=2))
    return f"export {path} success\n"


async def export_configs(s: AdminService, v: Values) -> str:
    """Java's ``exportConfigs``: chosen settings of each master and the cluster's size to
    ``<filePath>/configs.json``; like Java it prints ``export … success`` without a newline."""
    configs = await s.cluster_configs(req(v, "clusterName"))
    path = Path(opt(v, "filePath") or EXPORT_DIR) / "configs.json"
    _write_export(path, R.configs_json(configs))
    return f"export {path} success"


def _write_export(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: cannot be written: {exc.strerror or exc}") from None


async def get_consumer_config(s: AdminService, v: Values) -> str:
    return R.consumer_config(await s.group_config_get(req(v, "groupName")))


async def skip_accumulated_message(s: AdminService, v: Values) -> str:
    from admin.models import ResetKind, ResetTarget

    reset = await s.group_reset_offset(req(v, "group"), ResetTarget(ResetKind.LATEST), req(v, "topic"))
    return R.offset_table(reset)


# -- messages ---------------------------------------------------------------------------------------
def _body_file(msg_id: str, body: bytes) -> str:
    """Write a body where queryMsgById leaves it; the path."""
    BODY_DIR.mkdir(parents=True, exist_ok=True)
    path = BODY_DIR / msg_id
    path.write_bytes(body)
    return str(path)


async def query_msg_by_id(s: AdminService, v: Values) -> str:
    topic = req(v, "topic")
    charset = opt(v, "bodyFormat")
    out = []
    for msg_id in (i.strip() for i in req(v, "msgId").split(",")):
        if not msg_id:
            continue
        if boolean(v, "sendMessage"):
            receipt = await s.message_resend(msg_id, topic)
            out.append(f"prepare resend msg. originalMsgId={msg_id}{R.send_result(receipt)}")
            continue
        try:
            found = await s.message_track(msg_id, topic)
        except NotFound:
            out.append(R.message_not_found())
            continue
        msg = found.message
        path = _body_file(msg.msg_id, msg.body)
        out.append(R.message_detail(msg, path, found.tracks, charset))
    return "".join(out)


async def query_msg_by_key(s: AdminService, v: Values) -> str:
    from admin.models import Messages
    from admin.service.messages import MAX_TIMESTAMP

    topic = req(v, "topic")
    await s.topic_route(topic)  # a topic that does not exist fails, as Java's route lookup does
    try:
        found = await s.message_query(
            topic,
            key=req(v, "msgKey"),
            begin=integer(v, "beginTimestamp", 0) or 0,
            end=integer(v, "endTimestamp", MAX_TIMESTAMP) or MAX_TIMESTAMP,
            max_num=integer(v, "maxNum", 64) or 64,
        )
    except NotFound:
        found = Messages([])
    return R.query_by_key(found)


async def query_msg_by_unique_key(s: AdminService, v: Values) -> str:
    topic, msg_id = req(v, "topic"), req(v, "msgId")
    if flag(v, "showAll"):
        found = await s.message_query(topic, unique_key=msg_id, max_num=32)
        records = found.messages
    else:
        records = [(await s.message_get(msg_id, topic)).messages[0]]
    out = []
    for msg in records:
        tracks = (await s.message_track(msg.offset_msg_id, topic)).tracks
        out.append(R.message_detail(msg, _body_file(msg.msg_id, msg.body), tracks, with_offset_id=False))
    return "".join(out)


async def query_msg_by_offset(s: AdminService, v: Values) -> str:
    from admin.models import MessageRange

    topic, offset = req(v, "topic"), integer(v, "offset") or 0
    rng = MessageRange(req(v, "brokerName"), integer(v, "queueId"), offset, offset + 1, limit=1)
    found = await s.message_print(topic, rng)
    if not found.messages:
        return R.message_not_found()
    tracked = await s.message_track(found.messages[0].offset_msg_id, topic)
    msg = tracked.message
    return R.message_detail(msg, _body_file(msg.msg_id, msg.body), tracked.tracks, opt(v, "bodyFormat"))


def _print_range(v: Values, broker: str | None, queue: int | None, limit: int = _READ_ALL) -> MessageRange:
    from admin.models import MessageRange

    begin, end = opt(v, "beginTimestamp"), opt(v, "endTimestamp")
    return MessageRange(
        broker,
        queue,
        begin_ms=java_time(begin) if begin else None,
        end_ms=java_time(end) if end else None,
        expression=opt(v, "subExpression") or "*",
        limit=limit,
    )


def _charset(v: Values) -> str | None:
    return (opt(v, "charsetName") or "UTF-8") if boolean(v, "printBody", True) else None


async def print_msg(s: AdminService, v: Values) -> str:
    found = await s.message_print(req(v, "topic"), _print_range(v, None, None))
    return R.print_messages(found, _charset(v))


async def print_msg_by_queue(s: AdminService, v: Values) -> str:
    from collections import Counter

    rng = _print_range(v, req(v, "brokerName"), integer(v, "queueId"))
    found = await s.message_print(req(v, "topic"), rng)
    out = R.print_messages(found, _charset(v)) if boolean(v, "print msg") else ""
    if boolean(v, "calculate"):
        counts = Counter(m.tags or "" for m in found.messages)
        out += "".join(f"Tag: {tag:<30} Count: {n}\n" for tag, n in counts.most_common())
    return out


async def send_message(s: AdminService, v: Values) -> str:
    from admin.models import OutgoingMessage

    key = opt(v, "key")
    msg = OutgoingMessage(
        req(v, "topic"),
        req(v, "body").encode(),
        opt(v, "tags"),
        [key] if key else [],
        broker_name=opt(v, "broker"),
        queue_id=integer(v, "qid"),
    )
    return R.send_result(await s.message_send(msg, trace=boolean(v, "msgTraceEnable")))


async def consume_message(s: AdminService, v: Values) -> str:
    topic = req(v, "topic")
    count = integer(v, "MessageNumber", 128) or 128
    broker, queue, offset = opt(v, "brokerName"), integer(v, "queueId"), integer(v, "offset")
    found: Messages
    if broker is None and queue is None and offset is None:
        found = await s.message_consume(topic, count, opt(v, "consumerGroup"))
    else:
        from dataclasses import replace

        rng = replace(_print_range(v, broker, queue, count), from_offset=offset)
        found = await s.message_print(topic, rng)
    return R.print_messages(found, "UTF-8")


async def dump_compaction_log(s: AdminService, v: Values) -> str:
    from admin.store_tools import compaction_log_messages

    name = opt(v, "file")
    if name is None:
        return "miss dump log file name"
    return "".join(R.message_ext(m) + "\n" for m in compaction_log_messages(Path(name)))


async def decode_message_id(s: AdminService, v: Values) -> str:
    from broker.protocol.msgid import decode_uniq_key

    info = decode_uniq_key(req(v, "messageId"))
    stamp = dt.datetime.fromtimestamp(info.timestamp_ms / 1000).strftime("%Y-%m-%d#%H:%M:%S:")
    return f"ip={info.ip}date={stamp}{info.timestamp_ms % 1000:03d}"


# -- clusters, brokers, NameServers -----------------------------------------------------------------
async def cluster_list(s: AdminService, v: Values) -> str:
    cluster = opt(v, "clusterName")

    async def one_round() -> str:
        listing = await s.cluster_list(cluster)
        return R.cluster_list_more(listing) if flag(v, "moreStats") else R.cluster_list(listing, _now())

    return await every(integer(v, "interval"), one_round)


def _now() -> int:
    return int(time.time() * 1000)


async def broker_status(s: AdminService, v: Values) -> str:
    from admin.models import BrokerRuntime

    broker = opt(v, "brokerAddr")
    if broker is not None:
        return R.broker_status(await s.broker_runtime(broker))
    listing = await s.cluster_list(req(v, "clusterName"))
    return R.broker_status_cluster(
        [BrokerRuntime(b.address, b.runtime) for b in listing.brokers if b.reachable]
    )


async def ha_status(s: AdminService, v: Values) -> str:
    cluster, broker = opt(v, "clusterName"), opt(v, "brokerAddr")

    async def one_round() -> str:
        return R.ha_status(await s.broker_ha_runtime(cluster, broker))

    return await every(integer(v, "interval"), one_round)


async def get_broker_config(s: AdminService, v: Values) -> str:
    broker = opt(v, "brokerAddr")
    if broker is not None:
        return R.config_values(await s.broker_config_get(broker), broker)
    cluster = opt(v, "clusterName")
    if cluster is None:
        return ""
    brokers = (await s.cluster_list(cluster)).brokers
    masters = {b.broker_name: b.address for b in brokers if b.broker_id == 0}
    out = []
    for b in sorted(brokers, key=lambda b: (b.broker_name, b.broker_id)):
        master = masters.get(b.broker_name)
        title = f"Master: {b.address}" if b.broker_id == 0 else f"My Master: {master}=====Slave: {b.address}"
        out.append(R.config_values(await s.broker_config_get(b.address), title))
    return "".join(out)


async def update_broker_config(s: AdminService, v: Values) -> str:
    change = await s.broker_config_set(
        {req(v, "key"): req(v, "value")}, opt(v, "brokerAddr"), opt(v, "clusterName")
    )
    return "".join(f"update broker config success, {a}\n" for a in change.addresses)


async def update_kv_config(s: AdminService, v: Values) -> str:
    await s.namesrv_kv_put(req(v, "namespace"), req(v, "key"), req(v, "value"))
    return "create or update kv config to namespace success.\n"


async def delete_kv_config(s: AdminService, v: Values) -> str:
    await s.namesrv_kv_delete(req(v, "namespace"), req(v, "key"))
    return "delete kv config from namespace success.\n"


async def get_namesrv_config(s: AdminService, v: Values) -> str:
    configs = await s.namesrv_config_get()
    return "".join(R.config_values(c, c.address) for c in configs.servers)


async def update_namesrv_config(s: AdminService, v: Values) -> str:
    key, value = req(v, "key"), req(v, "value")
    change = await s.namesrv_config_set({key: value})
    servers = "[" + ", ".join(change.addresses) + "]" if opt(v, "namesrvAddr") else ""
    return f"update name server config success!{servers}\n{key} : {value}\n"


def _write_perm(writable: bool) -> Handler:
    verb = "add" if writable else "wipe"

    async def handler(s: AdminService, v: Values) -> str:
        broker = req(v, "brokerName")
        counts = await s.namesrv_write_perm(broker, writable)
        return "".join(
            f"{verb} write perm of broker[{broker}] in name server[{ns}] OK, {n}\n"
            for ns, n in counts.items()
        )

    return handler


async def stats_all(s: AdminService, v: Values) -> str:
    import asyncio

    from admin.models import TopicKind

    only = opt(v, "topic")
    names = [only] if only else [t.name for t in (await s.topic_list()).topics if t.kind is TopicKind.NORMAL]
    statuses, consumers = await asyncio.gather(
        asyncio.gather(*(s.topic_status(t) for t in names)), s.topic_consumers(names)
    )
    rows: list[tuple[str, str | None, int, float, float]] = []
    for topic, status in zip(names, statuses, strict=True):
        groups = consumers.get(topic, [])
        lags = await asyncio.gather(*(s.group_lag(g, topic) for g in groups))
        rows += [
            (topic, g, lag.diff_total, status.put_tps, lag.consume_tps)
            for g, lag in zip(groups, lags, strict=True)
        ]
        if not groups and (not flag(v, "activeTopic") or status.put_tps > 0):
            rows.append((topic, None, 0, status.put_tps, 0.0))
    return R.stats_all(rows)


async def broker_consume_stats(s: AdminService, v: Values) -> str:
    import asyncio
    from dataclasses import replace

    addr = req(v, "brokerAddr")
    brokers = (await s.cluster_list()).brokers
    name = next((b.broker_name for b in brokers if b.address == addr), None)
    if name is None:
        raise NotFound(f"broker {addr} is not registered")
    groups = await s.group_names()
    lags = await asyncio.gather(*(s.group_lag(g) for g in groups), return_exceptions=True)
    mine = [
        replace(lag, queues=[q for q in lag.queues if q.broker_name == name])
        for lag in lags
        if not isinstance(lag, BaseException)
    ]
    return R.broker_consume_stats(mine, integer(v, "level", 0) or 0)


# -- measured sends ---------------------------------------------------------------------------------
def _hello(size: int) -> bytes:
    """sendMsgStatus' body: ``hello jodie`` once per started 11 bytes of ``size``."""
    return b"hello jodie" * -(-size // 11)


async def send_msg_status(s: AdminService, v: Values) -> str:
    """Send to the topic named after the broker (every broker serves one), after one unmeasured send;
    a failed send ends the command, as in Java."""
    broker = req(v, "brokerName")
    size, count = non_negative(v, "messageSize", 128), non_negative(v, "count", 50)
    if not any(broker in names for names in (await s.cluster_broker_names()).values()):
        raise NotFound(f"broker {broker} not found")
    (probes,) = await s.send_probes(
        [broker], count, _hello(size), group="PID_SMSC", instance_name=f"PID_SMSC_{_now()}",
        warmup=_hello(16), strict=True,
    )  # fmt: skip
    return R.send_msg_status(probes)


async def check_msg_send_rt(s: AdminService, v: Values) -> str:
    """The i-th message goes to queue ``i % queues`` of the topic; failures are rows, not errors."""
    amount, size = non_negative(v, "amount", 100), non_negative(v, "size", 128)
    (probes,) = await s.send_probes([req(v, "topic")], amount, b"a" * size, group=str(_now()), spread=True)
    return R.send_rt(probes)


async def cluster_rt(s: AdminService, v: Values) -> str:
    """Per broker of a cluster (or of every cluster), ``amount`` sends to the topic named after it."""
    amount, size = non_negative(v, "amount", 100), non_negative(v, "size", 128)
    tlog = boolean(v, "print log")
    room = opt(v, "machine room") or "noname"
    clusters = await s.cluster_broker_names(opt(v, "cluster"))
    pairs = [(c, name) for c, names in clusters.items() for name in names]
    group = str(_now())

    async def one_round() -> str:
        results = await s.send_probes([name for _, name in pairs], amount, b"a" * size, group=group)
        rows = [(c, p) for (c, _), p in zip(pairs, results, strict=True)]
        return R.cluster_rt(rows, tlog, room, _now())

    return await every(integer(v, "interval"), one_round, "" if tlog else R.cluster_rt_header())


# -- the store --------------------------------------------------------------------------------------
async def query_cq(s: AdminService, v: Values) -> str:
    index = integer(v, "index") or 0
    body = await s.consume_queue_query(
        req(v, "topic"),
        integer(v, "queue") or 0,
        index,
        integer(v, "count", 10) or 0,
        opt(v, "consumer"),
        opt(v, "broker"),
    )
    return R.consume_queue(body, index)


def _store_chore(
    chore: Callable[[AdminService], Callable[[str | None, str | None], Awaitable[object]]],
) -> Handler:
    """cleanExpiredCQ, deleteExpiredCommitLog, cleanUnusedTopic: on ``-b``, else every broker of
    ``-c`` (or of every cluster); mqadmin prints ``success`` without a newline."""

    async def handler(s: AdminService, v: Values) -> str:
        await chore(s)(opt(v, "cluster"), opt(v, "brokerAddr"))
        return "success"

    return handler


# -- the table --------------------------------------------------------------------------------------
_TOPIC = o("t", "topic", "topic name", True)
_CLUSTER_LMQ = o("c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
_BEGIN = o("b", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
_END = o("e", "endTimestamp", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
_CHARSET = o("c", "charsetName", "CharsetName(eg: UTF-8,GBK)")
_SUBEXPR = o("s", "subExpression", "Subscribe Expression(eg: TagA || TagB)")

_CORE: tuple[Command, ...] = (
    Command("updateTopic", "Update or create topic.", (
        o("b", "brokerAddr", "create topic to which broker"),
        o("c", "clusterName", "create topic to which cluster"),
        o("a", "attributes", "attribute(+a=b,+c=d,-e)"),
        _TOPIC,
        o("r", "readQueueNums", "set read queue nums"),
        o("w", "writeQueueNums", "set write queue nums"),
        o("p", "perm", "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]"),
        o("o", "order", "set topic's order(true|false)"),
        o("u", "unit", "is unit topic (true|false)"),
        o("s", "hasUnitSub", "has unit sub (true|false)"),
    ), update_topic, one_of=("brokerAddr", "clusterName")),
    Command("updateTopicList", "create or update topic in batch", (
        o("b", "brokerAddr", "create topic to which broker"),
        o("c", "clusterName", "create topic to which cluster"),
        o("f", "filename", "Path to a file with list of org.apache.rocketmq.common.TopicConfig "
           "in json format", True),
    ), update_topic_list, one_of=("brokerAddr", "clusterName")),
    Command("deleteTopic", "Delete topic from broker and NameServer.", (
        _TOPIC, o("c", "clusterName", "delete topic from which cluster", True),
    ), delete_topic),
    Command("updateSubGroup", "Update or create subscription group.", (
        o("b", "brokerAddr", "create subscription group to which broker"),
        o("c", "clusterName", "create subscription group to which cluster"),
        o("g", "groupName", "consumer group name", True),
        o("s", "consumeEnable", "consume enable"),
        o("m", "consumeFromMinEnable", "from min offset"),
        o("d", "consumeBroadcastEnable", "broadcast"),
        o("o", "consumeMessageOrderly", "consume message orderly"),
        o("q", "retryQueueNums", "retry queue nums"),
        o("r", "retryMaxTimes", "retry max times"),
        o("i", "brokerId", "consumer from which broker id"),
        o("w", "whichBrokerWhenConsumeSlowly", "which broker id when consume slowly"),
        o("a", "notifyConsumerIdsChanged", "notify consumerId changed"),
        o(None, "attributes", "attribute(+a=b,+c=d,-e)"),
    ), update_sub_group),
    Command("updateSubGroupList", "Update or create subscription group in batch", (
        o("b", "brokerAddr", "create groups to which broker"),
        o("c", "clusterName", "create groups to which cluster"),
        o("f", "filename", "Path to a file with a list of "
           "org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig in json format", True),
    ), update_sub_group_list, one_of=("brokerAddr", "clusterName")),
    Command("deleteSubGroup", "Delete subscription group from broker.", (
        o("b", "brokerAddr", "delete subscription group from which broker"),
        o("c", "clusterName", "delete subscription group from which cluster"),
        o("g", "groupName", "subscription group name", True),
        o("r", "removeOffset", "remove offset"),
    ), delete_sub_group),
    Command("updateBrokerConfig", "Update broker's config.", (
        o("b", "brokerAddr", "update which broker"),
        o("c", "clusterName", "update which cluster"),
        o("a", "updateAllBroker", "update all brokers include slave"),
        o("k", "key", "config key", True),
        o("v", "value", "config value", True),
    ), update_broker_config),
    Command("updateTopicPerm", "Update topic perm.", (
        o("b", "brokerAddr", "create topic to which broker"),
        o("c", "clusterName", "create topic to which cluster"),
        _TOPIC,
        o("p", "perm", "set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]", True),
    ), update_topic_perm),
    Command("topicRoute", "Examine topic route info.", (
        _TOPIC, flag_opt("l", "list", "Use list format to print data"),
    ), topic_route),
    Command("topicStatus", "Examine topic Status info.", (
        _TOPIC, o("c", "cluster", "cluster name or lmq parent topic, lmq is used to find the route."),
    ), topic_status),
    Command("topicClusterList", "Get cluster info for topic.", (_TOPIC,), topic_cluster_list),
    Command("brokerStatus", "Fetch broker runtime status data.", (
        o("b", "brokerAddr", "Broker address"), o("c", "clusterName", "which cluster"),
    ), broker_status, one_of=("brokerAddr", "clusterName")),
    Command("haStatus", "Fetch ha runtime status data.", (
        o("c", "clusterName", "which cluster"),
        o("b", "brokerAddr", "which broker to fetch"),
        o("i", "interval", "the interval(second) of get info"),
    ), ha_status, one_of=("brokerAddr", "clusterName")),
    Command("sendMsgStatus", "Send msg to broker.", (
        o("b", "brokerName", "Broker Name e.g. clusterName_brokerName as DefaultCluster_broker-a", True),
        o("s", "messageSize", "Message Size, Default: 128"),
        o("c", "count", "send message count, Default: 50"),
    ), send_msg_status),
    Command("queryMsgById", "Query Message by Id.", (
        _TOPIC,
        o("i", "msgId", "Message Id", True),
        o("g", "consumerGroup", "consumer group name"),
        o("d", "clientId", "The consumer's client id"),
        o("s", "sendMessage", "resend message"),
        o("u", "unitName", "unit name"),
        o("f", "bodyFormat", "print message body by the specified format"),
        _CLUSTER_LMQ,
    ), query_msg_by_id),
    Command("queryMsgByKey", "Query Message by Key.", (
        o("t", "topic", "Topic name", True),
        o("k", "msgKey", "Message Key", True),
        o("b", "beginTimestamp", "Begin timestamp(ms). default:0, eg:1676730526212"),
        o("e", "endTimestamp", "End timestamp(ms). default:Long.MAX_VALUE, eg:1676730526212"),
        o("m", "maxNum", "The maximum number of messages returned by the query, default:64"),
        _CLUSTER_LMQ,
    ), query_msg_by_key),
    Command("queryMsgByUniqueKey", "Query Message by Unique key.", (
        o("i", "msgId", "Message Id", True),
        o("g", "consumerGroup", "consumer group name"),
        o("d", "clientId", "The consumer's client id"),
        o("t", "topic", "The topic of msg", True),
        flag_opt("a", "showAll", "Print all message, the limit is 32"),
        _CLUSTER_LMQ,
    ), query_msg_by_unique_key),
    Command("queryMsgByOffset", "Query Message by offset.", (
        _TOPIC,
        o("b", "brokerName", "Broker Name", True),
        o("i", "queueId", "Queue Id", True),
        o("o", "offset", "Queue Offset", True),
        o("f", "bodyFormat", "print message body by the specified format"),
    ), query_msg_by_offset),
    Command("printMsg", "Print Message Detail.", (
        _TOPIC, _CHARSET, _SUBEXPR, _BEGIN, _END,
        o("d", "printBody", "print body"),
        o("l", "lmqParentTopic", "Lmq parent topic, lmq is used to find the route."),
    ), print_msg),
    Command("printMsgByQueue", "Print Message Detail by queueId.", (
        _TOPIC,
        o("a", "brokerName", "broker name", True),
        o("i", "queueId", "queue id", True),
        _CHARSET, _SUBEXPR, _BEGIN, _END,
        o("p", "print msg", "print msg. eg: true | false(default)"),
        o("d", "printBody", "print body. eg: true | false(default)"),
        o("f", "calculate", "calculate by tag. eg: true | false(default)"),
    ), print_msg_by_queue),
    Command("brokerConsumeStats", "Fetch broker consume stats data.", (
        o("b", "brokerAddr", "Broker address", True),
        o("t", "timeoutMillis", "request timeout Millis"),
        o("l", "level", "threshold of print diff"),
        o("o", "order", "order topic"),
    ), broker_consume_stats),
    Command("producerConnection", "Query producer's socket connection and client version.", (
        o("g", "producerGroup", "producer group name", True), _TOPIC,
    ), producer_connection),
    Command("producer", "Query producer's instances, connection, status, etc.", (
        o("b", "broker", "broker address", True),
    ), producer),
    Command("consumerConnection", "Query consumer's socket connection, client version and subscription.", (
        o("g", "consumerGroup", "consumer group name", True), o("b", "brokerAddr", "broker address"),
    ), consumer_connection),
    Command("consumerStatus", "Query consumer's internal data structure.", (
        o("g", "consumerGroup", "consumer group name", True),
        o("i", "clientId", "The consumer's client id"),
        o("b", "brokerAddr", "broker address"),
        o("s", "jstack", "Run jstack command in the consumer progress", arg=False),
    ), consumer_status),
    Command("consumerProgress", "Query consumer's progress, speed.", (
        o("g", "groupName", "consumer group name"),
        o("t", "topicName", "topic name"),
        o("s", "showClientIP", "Show Client IP per Queue"),
        _CLUSTER_LMQ,
    ), consumer_progress),
    Command("cloneGroupOffset", "Clone offset from other group.", (
        o("s", "srcGroup", "set source consumer group", True),
        o("d", "destGroup", "set destination consumer group", True),
        o("t", "topic", "set the topic", True),
        o("o", "offline", "the group or the topic is offline"),
    ), clone_group_offset),
    Command("clusterList", "List cluster infos.", (
        flag_opt("m", "moreStats", "Print more stats"),
        o("i", "interval", "specify intervals numbers, it is in seconds"),
        o("c", "clusterName", "which cluster"),
    ), cluster_list),
    Command("clusterRT", "List All clusters Message Send RT.", (
        o("a", "amount", "message amount | default 100"),
        o("s", "size", "message size | default 128 Byte"),
        o("c", "cluster", "cluster name | default display all cluster"),
        o("p", "print log", "print as tlog | default false"),
        o("m", "machine room", "machine room name | default noname"),
        o("i", "interval", "print interval | default 10 seconds"),
    ), cluster_rt),
    Command("topicList", "Fetch all topic list from name server.", (
        flag_opt("c", "clusterModel", "clusterModel"),
    ), topic_list),
    Command("updateKvConfig", "Create or update KV config.", (
        o("s", "namespace", "set the namespace", True),
        o("k", "key", "set the key name", True),
        o("v", "value", "set the key value", True),
    ), update_kv_config),
    Command("deleteKvConfig", "Delete KV config.", (
        o("s", "namespace", "set the namespace", True), o("k", "key", "set the key name", True),
    ), delete_kv_config),
    Command("wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param.", (
        o("b", "brokerName", "broker name", True),
    ), _write_perm(False)),
    Command("addWritePerm", "Add write perm of broker in all name server you defined in the -n param.", (
        o("b", "brokerName", "broker name", True),
    ), _write_perm(True)),
    Command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", (
        o("g", "group", "set the consumer group", True),
        o("t", "topic", "set the topic", True),
        o("s", "timestamp", "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", True),
        o("f", "force", "set the force rollback by timestamp switch[true|false]. Deprecated."),
        o("b", "broker", "broker addr"),
        o("q", "queue", "queue id"),
        o("o", "offset", "Expect queue offset, not support old version broker"),
        _CLUSTER_LMQ,
    ), reset_offset_by_time),
    Command("skipAccumulatedMessage", "Skip all messages that are accumulated (not consumed) currently.", (
        o("g", "group", "set the consumer group", True),
        o("t", "topic", "set the topic", True),
        o("f", "force", "set the force rollback by timestamp switch[true|false]"),
        _CLUSTER_LMQ,
    ), skip_accumulated_message),
    Command("updateOrderConf", "Create or update or delete order conf.", (
        _TOPIC,
        o("v", "orderConf", "set order conf [eg. brokerName1:num;brokerName2:num]"),
        o("m", "method", "option type [eg. put|get|delete", True),
    ), update_order_conf),
    Command("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", (
        o("b", "brokerAddr", "Broker address"), o("c", "cluster", "clustername"),
    ), _store_chore(lambda s: s.broker_clean_expired_consume_queues)),
    Command("deleteExpiredCommitLog", "Delete expired CommitLog files.", (
        o("b", "brokerAddr", "Broker address"), o("c", "cluster", "clustername"),
    ), _store_chore(lambda s: s.broker_delete_expired_commitlog)),
    Command("cleanUnusedTopic", "Clean unused topic on broker.", (
        o("b", "brokerAddr", "Broker address"), o("c", "cluster", "cluster name"),
    ), _store_chore(lambda s: s.broker_clean_unused_topics)),
    Command("statsAll", "Topic and Consumer tps stats.", (
        flag_opt("a", "activeTopic", "print active topic only"),
        o("t", "topic", "print select topic only"),
    ), stats_all),
    Command("allocateMQ", "Allocate MQ.", (_TOPIC, o("i", "ipList", "ipList", True)), allocate_mq),
    Command("getNamesrvConfig", "Get configs of name server.", (), get_namesrv_config),
    Command("updateNamesrvConfig", "Update configs of name server.", (
        o("k", "key", "config key", True), o("v", "value", "config value", True),
    ), update_namesrv_config),
    Command("getBrokerConfig", "Get broker config by cluster or special broker.", (
        o("b", "brokerAddr", "get which broker"), o("c", "clusterName", "get which cluster"),
    ), get_broker_config),
    Command("exportMetadata", "Export metadata.", (
        o("c", "clusterName", "choose a cluster to export"),
        o("b", "brokerAddr", "choose a broker to export"),
        o("f", "filePath", "export metadata.json path | default /tmp/rocketmq/export"),
        flag_opt("t", "topic", "only export topic metadata"),
        flag_opt("g", "subscriptionGroup", "only export subscriptionGroup metadata"),
        flag_opt("s", "specialTopic", "need retryTopic and dlqTopic"),
    ), export_metadata, one_of=("clusterName", "brokerAddr")),
    Command("exportConfigs", "Export configs.", (
        o("c", "clusterName", "choose a cluster to export", True),
        o("f", "filePath", "export configs.json path | default /tmp/rocketmq/export"),
    ), export_configs),
    Command("getConsumerConfig", "Get consumer config by subscription group name.", (
        o("g", "groupName", "subscription group name", True),
    ), get_consumer_config),
    Command("queryCq", "Query cq command.", (
        o("t", "topic", "topic name", True),
        o("q", "queue", "queue num, ie. 1", True),
        o("i", "index", "start queue index.", True),
        o("c", "count", "how many."),
        o("b", "broker", "broker addr."),
        o("g", "consumer", "consumer group."),
    ), query_cq),
    Command("sendMessage", "Send a message.", (
        o("t", "topic", "Topic name", True),
        o("p", "body", "UTF-8 string format of the message body", True),
        o("k", "key", "Message keys"),
        o("c", "tags", "Message tags"),
        o("b", "broker", "Send message to target broker"),
        o("i", "qid", "Send message to target queue"),
        o("m", "msgTraceEnable", "Message Trace Enable, Default: false"),
    ), send_message),
    Command("checkMsgSendRT", "Check message send response time.", (
        o("t", "topic", "topic name", True),
        o("a", "amount", "message amount | default 100"),
        o("s", "size", "message size | default 128 Byte"),
    ), check_msg_send_rt),
    Command("consumeMessage", "Consume message.", (
        o("t", "topic", "Topic name", True),
        o("b", "brokerName", "Broker name"),
        o("i", "queueId", "Queue Id"),
        o("o", "offset", "Queue offset"),
        o("g", "consumerGroup", "Consumer group name"),
        o("s", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
        _END,
        o("c", "MessageNumber", "Number of message to be consumed"),
    ), consume_message),
    Command("decodeMessageId", "decode unique message ID", (
        o("i", "messageId", "unique message ID"),
    ), decode_message_id),
    Command("dumpCompactionLog", "Parse compaction log to message.", (
        o("f", "file", "to dump file name"),
    ), dump_compaction_log),
)  # fmt: skip
COMMANDS = (
    _CORE
    + mqadmin_acl.COMMANDS
    + mqadmin_trace.COMMANDS
    + mqadmin_broker_ops.COMMANDS
    + mqadmin_auth.COMMANDS
    + mqadmin_controller.COMMANDS
)
_BY_NAME = {c.name.lower(): c for c in COMMANDS}


def find(name: str) -> Command | None:
    """A command by name, ignoring case as mqadmin does."""
    return _BY_NAME.get(name.lower())
