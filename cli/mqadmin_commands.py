"""The mqadmin commands: their options (letters, long names, descriptions as in RocketMQ's
``buildCommandlineOptions``) and what each does: parse the values, call the admin service, render with
:mod:`admin.render_mqadmin`. Nothing here computes what a view shows.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from admin import render_mqadmin as R
from admin.errors import BadInput, NotFound

if TYPE_CHECKING:
    from admin.models import MessageRange, Messages
    from admin.service import AdminService

Values = dict[str, str | bool | None]
Handler = Callable[["AdminService", Values], Awaitable[str]]
BODY_DIR = Path("/tmp/rocketmq/msgbodys")  # where queryMsgById writes message bodies
EXPORT_DIR = Path("/tmp/rocketmq/export")  # exportMetadata's default -f
ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"
_READ_ALL = 10_000_000  # printMsg reads whole queues


@dataclass(frozen=True, slots=True)
class Opt:
    short: str | None
    long: str
    arg: bool
    desc: str
    required: bool = False

    @property
    def key(self) -> str:
        """commons-cli's Option.getKey: the short name, else the long one."""
        return self.short or self.long


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    desc: str
    options: tuple[Opt, ...]
    run: Handler
    one_of: tuple[str, ...] = ()  # long names of a required option group


COMMON_OPTIONS = (
    Opt("h", "help", False, "Print help"),
    Opt("n", "namesrvAddr", True, "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'"),
)


# -- values -----------------------------------------------------------------------------------------
def _opt(v: Values, name: str) -> str | None:
    value = v.get(name)
    return value.strip() if isinstance(value, str) else None


def _req(v: Values, name: str) -> str:
    value = _opt(v, name)
    if value is None:
        raise BadInput(f"missing option --{name}")
    return value


def _flag(v: Values, name: str) -> bool:
    return v.get(name) is True


def _bool(v: Values, name: str, default: bool = False) -> bool:
    """Java's Boolean.parseBoolean of an option's text."""
    value = _opt(v, name)
    return default if value is None else value.lower() == "true"


def _int(v: Values, name: str, default: int | None = None) -> int | None:
    value = _opt(v, name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise BadInput(f"--{name}: {value!r} is not a number") from None


def _count(v: Values, name: str, default: int) -> int:
    """A count or size option: a number, not negative."""
    value = _int(v, name, default)
    assert value is not None
    if value < 0:
        raise BadInput(f"--{name} must not be negative, not {value}")
    return value


async def _every(interval: int | None, one_round: Callable[[], Awaitable[str]], head: str = "") -> str:
    """``head`` and one round's text; with an interval (seconds), print them and then a round every
    ``interval`` seconds until interrupted, as the Java tools' ``-i`` loops do."""
    import asyncio

    if interval is None:
        return head + await one_round()
    if interval <= 0:
        raise BadInput(f"--interval must be a positive number of seconds, not {interval}")
    sys.stdout.write(head)
    while True:
        sys.stdout.write(await one_round())
        sys.stdout.flush()
        await asyncio.sleep(interval)


def _java_time(text: str) -> int:
    """``currentTimeMillis``, ``now`` or ``yyyy-MM-dd#HH:mm:ss:SSS`` (local time) to epoch ms."""
    if text == "now":
        return int(time.time() * 1000)
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        parsed = dt.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise BadInput(f"{text!r} is not a time: use epoch ms or yyyy-MM-dd#HH:mm:ss:SSS") from None
    return int(parsed.timestamp() * 1000)


def _attributes(text: str | None) -> dict[str, str]:
    """The additions of ``+a=b,+c=d`` (AttributeParser's format); the broker checks keys and values."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        key, equals, value = item.strip().partition("=")
        if not key:
            continue
        if not key.startswith("+") or not equals:
            raise BadInput(f"--attributes: {item.strip()!r} is not +key=value (removals are not supported)")
        out[key[1:]] = value
    return out


# -- topics -----------------------------------------------------------------------------------------
async def update_topic(s: AdminService, v: Values) -> str:
    from admin.models import TopicSpec

    topic = _req(v, "topic")
    order = _opt(v, "order")
    spec = TopicSpec(
        topic,
        _int(v, "readQueueNums", 8),
        _int(v, "writeQueueNums", 8),
        _int(v, "perm", 6),
        None if order is None else order.lower() == "true",
        _attributes(_opt(v, "attributes")),
    )
    cluster, broker = _opt(v, "clusterName"), _opt(v, "brokerAddr")
    try:
        await s.topic_route(topic)
    except NotFound:
        change = await s.topic_create(spec, cluster, broker)
    else:
        change = await s.topic_update(spec, cluster, broker)
    return R.topic_change(change, by_cluster=broker is None)


async def delete_topic(s: AdminService, v: Values) -> str:
    topic, cluster = _req(v, "topic"), _req(v, "clusterName")
    await s.topic_delete(topic, cluster)
    return (
        f"delete topic [{topic}] from cluster [{cluster}] success.\n"
        f"delete topic [{topic}] from NameServer success.\n"
    )


async def topic_list(s: AdminService, v: Values) -> str:
    from admin.models import TopicKind

    listing = await s.topic_list()
    if not _flag(v, "clusterModel"):
        return "".join(f"{t.name}\n" for t in listing.topics)
    topics = [t for t in listing.topics if t.kind not in (TopicKind.RETRY, TopicKind.DLQ)]
    groups = await s.topic_consumers([t.name for t in topics])
    rows = [
        (t.clusters[0] if t.clusters else "", t.name, g) for t in topics for g in (groups.get(t.name) or [""])
    ]
    return R.topic_list_clusters(rows)


async def topic_route(s: AdminService, v: Values) -> str:
    route = await s.topic_route(_req(v, "topic"))
    return R.topic_route_list(route) if _flag(v, "list") else R.topic_route_json(route)


async def topic_status(s: AdminService, v: Values) -> str:
    return R.topic_status(await s.topic_status(_req(v, "topic")))


async def topic_cluster_list(s: AdminService, v: Values) -> str:
    route = await s.topic_route(_req(v, "topic"))
    return "".join(f"{c}\n" for c in sorted({b.cluster for b in route.brokers}))


async def update_order_conf(s: AdminService, v: Values) -> str:
    topic, method = _req(v, "topic"), _req(v, "method")
    if method == "get":
        entries = await s.namesrv_kv_get(ORDER_TOPIC_NAMESPACE, topic)
        return f"get orderConf success. topic=[{topic}], orderConf=[{entries.entries[topic]}] "
    if method == "put":
        conf = _req(v, "orderConf")
        await s.namesrv_kv_put(ORDER_TOPIC_NAMESPACE, topic, conf)
        return f"update orderConf success. topic=[{topic}], orderConf=[{conf}]"
    if method == "delete":
        await s.namesrv_kv_delete(ORDER_TOPIC_NAMESPACE, topic)
        return f"delete orderConf success. topic=[{topic}]"
    raise BadInput(f"--method must be put, get or delete, not {method!r}")


async def allocate_mq(s: AdminService, v: Values) -> str:
    topic = _req(v, "topic")
    clients = [c.strip() for c in _req(v, "ipList").split(",") if c.strip()]
    plan = await s.topic_allocation(topic, clients)
    parts = [
        f'"{cid}":['
        + ",".join(f'{{"brokerName":"{b}","queueId":{q},"topic":"{topic}"}}' for b, q in plan[cid])
        + "]"
        for cid in R.hashmap_order(plan)
    ]
    return '{"result":{' + ",".join(parts) + "}}\n"


async def update_topic_perm(s: AdminService, v: Values) -> str:
    cluster, broker = _opt(v, "clusterName"), _opt(v, "brokerAddr")
    if cluster is None and broker is None:
        raise BadInput("give -b brokerAddr or -c clusterName")
    changes = await s.topic_set_perm(_req(v, "topic"), _int(v, "perm") or 0, cluster, broker)
    return R.topic_perm_change(changes, by_broker=broker is not None)


def _config_file(v: Values) -> bytes:
    name = _req(v, "filename")
    try:
        return Path(name).read_bytes()
    except FileNotFoundError:
        raise BadInput(f"the file path {name} does not exists") from None
    except OSError as exc:
        raise BadInput(f"cannot read {name}: {exc.strerror}") from None


async def update_topic_list(s: AdminService, v: Values) -> str:
    from admin.service.maintenance import load_topic_configs

    configs = load_topic_configs(_config_file(v), _req(v, "filename"))
    if not configs:
        return ""
    targets = await s.topic_create_list(configs, _opt(v, "clusterName"), _opt(v, "brokerAddr"))
    return R.batch_submitted(targets, "topic")


# -- groups -----------------------------------------------------------------------------------------
async def update_sub_group(s: AdminService, v: Values) -> str:
    from admin.models import GroupSpec

    def maybe_bool(name: str) -> bool | None:
        return None if _opt(v, name) is None else _bool(v, name)

    spec = GroupSpec(
        _req(v, "groupName"),
        maybe_bool("consumeEnable"),
        maybe_bool("consumeFromMinEnable"),
        maybe_bool("consumeBroadcastEnable"),
        maybe_bool("consumeMessageOrderly"),
        _int(v, "retryQueueNums"),
        _int(v, "retryMaxTimes"),
    )
    cluster, broker = _opt(v, "clusterName"), _opt(v, "brokerAddr")
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
    group = _req(v, "groupName")
    cluster, broker = _opt(v, "clusterName"), _opt(v, "brokerAddr")
    if cluster is None and broker is None:
        raise BadInput("give -b brokerAddr or -c clusterName")
    deletion = await s.group_delete(group, cluster, broker, remove_offsets=_bool(v, "removeOffset"))
    where = f" in cluster [{cluster}]" if broker is None else ""
    return "".join(
        f"delete subscription group [{group}] from broker [{a}]{where} success.\n" for a in deletion.addresses
    )


async def consumer_progress(s: AdminService, v: Values) -> str:
    import asyncio

    from admin.models import RETRY_PREFIX, TopicKind

    group = _opt(v, "groupName")
    if group is not None:
        lag = s.group_lag(group, _opt(v, "topicName"))
        if not _bool(v, "showClientIP"):
            return R.consumer_progress(await lag)
        clients = s.group_clients(group)  # who owns each queue, as its client reports
        done, owners = await asyncio.gather(lag, clients)
        return R.consumer_progress(done, owners.queue_owner_ips())
    retry = (await s.topic_list(kinds=frozenset({TopicKind.RETRY}))).topics
    groups = [t.name[len(RETRY_PREFIX) :] for t in retry]
    conns, lags = await asyncio.gather(
        asyncio.gather(*(s.group_connections(g) for g in groups)),
        asyncio.gather(*(s.group_lag(g) for g in groups)),
    )
    return R.consumer_progress_groups(zip(conns, lags, strict=True))


async def consumer_connection(s: AdminService, v: Values) -> str:
    return R.consumer_connection(await s.group_connections(_req(v, "consumerGroup")))


async def consumer_status(s: AdminService, v: Values) -> str:
    group = _req(v, "consumerGroup")
    jstack = _flag(v, "jstack")
    client_id = _opt(v, "clientId")
    if client_id is not None:
        (client,) = (await s.group_clients(group, client_id, jstack)).clients
        return R.consumer_running_info(client)
    result = await s.group_clients(group, jstack=jstack, broker=_opt(v, "brokerAddr"))
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
    return R.producer_connection(await s.producer_connections(_req(v, "producerGroup"), _req(v, "topic")))


async def producer(s: AdminService, v: Values) -> str:
    return R.producer_table((await s.producer_table(_req(v, "broker"))).groups)


async def reset_offset_by_time(s: AdminService, v: Values) -> str:
    from admin.models import ResetKind, ResetTarget

    stamp_text = _req(v, "timestamp")
    offset = _int(v, "offset")
    target = (
        ResetTarget(ResetKind.OFFSET, offset)
        if offset is not None
        else ResetTarget(ResetKind.TIME, _java_time(stamp_text))
    )
    reset = await s.group_reset_offset(_req(v, "group"), target, _req(v, "topic"))
    return R.offset_reset(reset, stamp_text)


async def clone_group_offset(s: AdminService, v: Values) -> str:
    src, dst, topic = _req(v, "srcGroup"), _req(v, "destGroup"), _req(v, "topic")
    await s.group_clone_offsets(src, dst, topic)
    return f"clone group offset success. srcGroup[{src}], destGroup=[{dst}], topic[{topic}]"


async def update_sub_group_list(s: AdminService, v: Values) -> str:
    from admin.service.maintenance import load_group_configs

    configs = load_group_configs(_config_file(v), _req(v, "filename"))
    if not configs:
        return ""
    broker = _opt(v, "brokerAddr")
    targets = await s.group_create_list(configs, _opt(v, "clusterName"), broker)
    return R.batch_submitted(targets, "group" if broker is not None else "subscription group")


async def export_metadata(s: AdminService, v: Values) -> str:
    """Java's ``exportMetadata``: a cluster's tables with queue numbers summed over its masters (one
    broker's as they are), to ``<filePath>/topic.json``, ``subscriptionGroup.json`` or ``metadata.json``."""
    import json

    from admin.metadata_file import GROUPS_KEY, TOPICS_KEY

    cluster, broker = _opt(v, "clusterName"), _opt(v, "brokerAddr")
    doc = await s.metadata_export(cluster, broker, _flag(v, "specialTopic"), summed=broker is None)
    if _flag(v, "topic"):
        name, keep = "topic.json", {TOPICS_KEY}
    elif _flag(v, "subscriptionGroup"):
        name, keep = "subscriptionGroup.json", {GROUPS_KEY}
    else:
        name, keep = "metadata.json", {TOPICS_KEY, GROUPS_KEY}
    path = Path(_opt(v, "filePath") or EXPORT_DIR) / name
    body = {k: value for k, value in doc.items() if k in keep or k == "exportTime"}
    _write_export(path, json.dumps(body, indent=2))
    return f"export {path} success\n"


async def export_configs(s: AdminService, v: Values) -> str:
    """Java's ``exportConfigs``: chosen settings of each master and the cluster's size to
    ``<filePath>/configs.json``; like Java it prints ``export … success`` without a newline."""
    configs = await s.cluster_configs(_req(v, "clusterName"))
    path = Path(_opt(v, "filePath") or EXPORT_DIR) / "configs.json"
    _write_export(path, R.configs_json(configs))
    return f"export {path} success"


def _write_export(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: cannot be written: {exc.strerror or exc}") from None


async def get_consumer_config(s: AdminService, v: Values) -> str:
    return R.consumer_config(await s.group_config_get(_req(v, "groupName")))


async def skip_accumulated_message(s: AdminService, v: Values) -> str:
    from admin.models import ResetKind, ResetTarget

    reset = await s.group_reset_offset(_req(v, "group"), ResetTarget(ResetKind.LATEST), _req(v, "topic"))
    return R.offset_table(reset)


# -- messages ---------------------------------------------------------------------------------------
def _body_file(msg_id: str, body: bytes) -> str:
    """Write a body where queryMsgById leaves it; the path."""
    BODY_DIR.mkdir(parents=True, exist_ok=True)
    path = BODY_DIR / msg_id
    path.write_bytes(body)
    return str(path)


async def query_msg_by_id(s: AdminService, v: Values) -> str:
    topic = _req(v, "topic")
    charset = _opt(v, "bodyFormat")
    out = []
    for msg_id in (i.strip() for i in _req(v, "msgId").split(",")):
        if not msg_id:
            continue
        if _bool(v, "sendMessage"):
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

    try:
        found = await s.message_query(
            _req(v, "topic"),
            key=_req(v, "msgKey"),
            begin=_int(v, "beginTimestamp", 0) or 0,
            end=_int(v, "endTimestamp", MAX_TIMESTAMP) or MAX_TIMESTAMP,
            max_num=_int(v, "maxNum", 64) or 64,
        )
    except NotFound:
        found = Messages([])
    return R.query_by_key(found)


async def query_msg_by_unique_key(s: AdminService, v: Values) -> str:
    topic, msg_id = _req(v, "topic"), _req(v, "msgId")
    if _flag(v, "showAll"):
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

    topic, offset = _req(v, "topic"), _int(v, "offset") or 0
    rng = MessageRange(_req(v, "brokerName"), _int(v, "queueId"), offset, offset + 1, limit=1)
    found = await s.message_print(topic, rng)
    if not found.messages:
        return R.message_not_found()
    tracked = await s.message_track(found.messages[0].offset_msg_id, topic)
    msg = tracked.message
    return R.message_detail(msg, _body_file(msg.msg_id, msg.body), tracked.tracks, _opt(v, "bodyFormat"))


def _print_range(v: Values, broker: str | None, queue: int | None, limit: int = _READ_ALL) -> MessageRange:
    from admin.models import MessageRange

    begin, end = _opt(v, "beginTimestamp"), _opt(v, "endTimestamp")
    return MessageRange(
        broker,
        queue,
        begin_ms=_java_time(begin) if begin else None,
        end_ms=_java_time(end) if end else None,
        expression=_opt(v, "subExpression") or "*",
        limit=limit,
    )


def _charset(v: Values) -> str | None:
    return (_opt(v, "charsetName") or "UTF-8") if _bool(v, "printBody", True) else None


async def print_msg(s: AdminService, v: Values) -> str:
    found = await s.message_print(_req(v, "topic"), _print_range(v, None, None))
    return R.print_messages(found, _charset(v))


async def print_msg_by_queue(s: AdminService, v: Values) -> str:
    from collections import Counter

    rng = _print_range(v, _req(v, "brokerName"), _int(v, "queueId"))
    found = await s.message_print(_req(v, "topic"), rng)
    out = R.print_messages(found, _charset(v)) if _bool(v, "print msg") else ""
    if _bool(v, "calculate"):
        counts = Counter(m.tags or "" for m in found.messages)
        out += "".join(f"Tag: {tag:<30} Count: {n}\n" for tag, n in counts.most_common())
    return out


async def send_message(s: AdminService, v: Values) -> str:
    from admin.models import OutgoingMessage

    key = _opt(v, "key")
    msg = OutgoingMessage(
        _req(v, "topic"),
        _req(v, "body").encode(),
        _opt(v, "tags"),
        [key] if key else [],
        broker_name=_opt(v, "broker"),
        queue_id=_int(v, "qid"),
    )
    return R.send_result(await s.message_send(msg))


async def consume_message(s: AdminService, v: Values) -> str:
    topic = _req(v, "topic")
    count = _int(v, "MessageNumber", 128) or 128
    broker, queue, offset = _opt(v, "brokerName"), _int(v, "queueId"), _int(v, "offset")
    found: Messages
    if broker is None and queue is None and offset is None:
        found = await s.message_consume(topic, count, _opt(v, "consumerGroup"))
    else:
        from dataclasses import replace

        rng = replace(_print_range(v, broker, queue, count), from_offset=offset)
        found = await s.message_print(topic, rng)
    return R.print_messages(found, "UTF-8")


async def decode_message_id(s: AdminService, v: Values) -> str:
    from broker.protocol.msgid import decode_uniq_key

    info = decode_uniq_key(_req(v, "messageId"))
    stamp = dt.datetime.fromtimestamp(info.timestamp_ms / 1000).strftime("%Y-%m-%d#%H:%M:%S:")
    return f"ip={info.ip}date={stamp}{info.timestamp_ms % 1000:03d}"


# -- clusters, brokers, NameServers -----------------------------------------------------------------
async def cluster_list(s: AdminService, v: Values) -> str:
    cluster = _opt(v, "clusterName")

    async def one_round() -> str:
        listing = await s.cluster_list(cluster)
        return R.cluster_list_more(listing) if _flag(v, "moreStats") else R.cluster_list(listing, _now())

    return await _every(_int(v, "interval"), one_round)


def _now() -> int:
    return int(time.time() * 1000)


async def broker_status(s: AdminService, v: Values) -> str:
    from admin.models import BrokerRuntime

    broker = _opt(v, "brokerAddr")
    if broker is not None:
        return R.broker_status(await s.broker_runtime(broker))
    listing = await s.cluster_list(_req(v, "clusterName"))
    return R.broker_status_cluster(
        [BrokerRuntime(b.address, b.runtime) for b in listing.brokers if b.reachable]
    )


async def ha_status(s: AdminService, v: Values) -> str:
    cluster, broker = _opt(v, "clusterName"), _opt(v, "brokerAddr")

    async def one_round() -> str:
        return R.ha_status(await s.broker_ha_runtime(cluster, broker))

    return await _every(_int(v, "interval"), one_round)


async def get_broker_config(s: AdminService, v: Values) -> str:
    broker = _opt(v, "brokerAddr")
    if broker is not None:
        return R.config_values(await s.broker_config_get(broker), broker)
    cluster = _opt(v, "clusterName")
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
        {_req(v, "key"): _req(v, "value")}, _opt(v, "brokerAddr"), _opt(v, "clusterName")
    )
    return "".join(f"update broker config success, {a}\n" for a in change.addresses)


async def update_kv_config(s: AdminService, v: Values) -> str:
    await s.namesrv_kv_put(_req(v, "namespace"), _req(v, "key"), _req(v, "value"))
    return "create or update kv config to namespace success.\n"


async def delete_kv_config(s: AdminService, v: Values) -> str:
    await s.namesrv_kv_delete(_req(v, "namespace"), _req(v, "key"))
    return "delete kv config from namespace success.\n"


async def get_namesrv_config(s: AdminService, v: Values) -> str:
    configs = await s.namesrv_config_get()
    return "".join(R.config_values(c, c.address) for c in configs.servers)


async def update_namesrv_config(s: AdminService, v: Values) -> str:
    key, value = _req(v, "key"), _req(v, "value")
    change = await s.namesrv_config_set({key: value})
    servers = "[" + ", ".join(change.addresses) + "]" if _opt(v, "namesrvAddr") else ""
    return f"update name server config success!{servers}\n{key} : {value}\n"


def _write_perm(writable: bool) -> Handler:
    verb = "add" if writable else "wipe"

    async def handler(s: AdminService, v: Values) -> str:
        broker = _req(v, "brokerName")
        counts = await s.namesrv_write_perm(broker, writable)
        return "".join(
            f"{verb} write perm of broker[{broker}] in name server[{ns}] OK, {n}\n"
            for ns, n in counts.items()
        )

    return handler


async def stats_all(s: AdminService, v: Values) -> str:
    import asyncio

    from admin.models import TopicKind

    only = _opt(v, "topic")
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
        if not groups and (not _flag(v, "activeTopic") or status.put_tps > 0):
            rows.append((topic, None, 0, status.put_tps, 0.0))
    return R.stats_all(rows)


async def broker_consume_stats(s: AdminService, v: Values) -> str:
    import asyncio
    from dataclasses import replace

    addr = _req(v, "brokerAddr")
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
    return R.broker_consume_stats(mine, _int(v, "level", 0) or 0)


# -- measured sends ---------------------------------------------------------------------------------
def _hello(size: int) -> bytes:
    """sendMsgStatus' body: ``hello jodie`` once per started 11 bytes of ``size``."""
    return b"hello jodie" * -(-size // 11)


async def send_msg_status(s: AdminService, v: Values) -> str:
    """Send to the topic named after the broker (every broker serves one), after one unmeasured send;
    a failed send ends the command, as in Java."""
    broker = _req(v, "brokerName")
    size, count = _count(v, "messageSize", 128), _count(v, "count", 50)
    if not any(broker in names for names in (await s.cluster_broker_names()).values()):
        raise NotFound(f"broker {broker} not found")
    (probes,) = await s.send_probes(
        [broker], count, _hello(size), group="PID_SMSC", instance_name=f"PID_SMSC_{_now()}",
        warmup=_hello(16), strict=True,
    )  # fmt: skip
    return R.send_msg_status(probes)


async def check_msg_send_rt(s: AdminService, v: Values) -> str:
    """The i-th message goes to queue ``i % queues`` of the topic; failures are rows, not errors."""
    amount, size = _count(v, "amount", 100), _count(v, "size", 128)
    (probes,) = await s.send_probes([_req(v, "topic")], amount, b"a" * size, group=str(_now()), spread=True)
    return R.send_rt(probes)


async def cluster_rt(s: AdminService, v: Values) -> str:
    """Per broker of a cluster (or of every cluster), ``amount`` sends to the topic named after it."""
    amount, size = _count(v, "amount", 100), _count(v, "size", 128)
    tlog = _bool(v, "print log")
    room = _opt(v, "machine room") or "noname"
    clusters = await s.cluster_broker_names(_opt(v, "cluster"))
    pairs = [(c, name) for c, names in clusters.items() for name in names]
    group = str(_now())

    async def one_round() -> str:
        results = await s.send_probes([name for _, name in pairs], amount, b"a" * size, group=group)
        rows = [(c, p) for (c, _), p in zip(pairs, results, strict=True)]
        return R.cluster_rt(rows, tlog, room, _now())

    return await _every(_int(v, "interval"), one_round, "" if tlog else R.cluster_rt_header())


# -- the store --------------------------------------------------------------------------------------
async def query_cq(s: AdminService, v: Values) -> str:
    index = _int(v, "index") or 0
    body = await s.consume_queue_query(
        _req(v, "topic"),
        _int(v, "queue") or 0,
        index,
        _int(v, "count", 10) or 0,
        _opt(v, "consumer"),
        _opt(v, "broker"),
    )
    return R.consume_queue(body, index)


def _store_chore(
    chore: Callable[[AdminService], Callable[[str | None, str | None], Awaitable[object]]],
) -> Handler:
    """cleanExpiredCQ, deleteExpiredCommitLog, cleanUnusedTopic: on ``-b``, else every broker of
    ``-c`` (or of every cluster); mqadmin prints ``success`` without a newline."""

    async def handler(s: AdminService, v: Values) -> str:
        await chore(s)(_opt(v, "cluster"), _opt(v, "brokerAddr"))
        return "success"

    return handler


# -- the table --------------------------------------------------------------------------------------
def _o(short: str | None, long: str, desc: str, required: bool = False, arg: bool = True) -> Opt:
    return Opt(short, long, arg, desc, required)


def _flag_opt(short: str, long: str, desc: str) -> Opt:
    return Opt(short, long, False, desc)


_TOPIC = _o("t", "topic", "topic name", True)
_CLUSTER_LMQ = _o("c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
_BEGIN = _o("b", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
_END = _o("e", "endTimestamp", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
_CHARSET = _o("c", "charsetName", "CharsetName(eg: UTF-8,GBK)")
_SUBEXPR = _o("s", "subExpression", "Subscribe Expression(eg: TagA || TagB)")

COMMANDS: tuple[Command, ...] = (
    Command("updateTopic", "Update or create topic.", (
        _o("b", "brokerAddr", "create topic to which broker"),
        _o("c", "clusterName", "create topic to which cluster"),
        _o("a", "attributes", "attribute(+a=b,+c=d,-e)"),
        _TOPIC,
        _o("r", "readQueueNums", "set read queue nums"),
        _o("w", "writeQueueNums", "set write queue nums"),
        _o("p", "perm", "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]"),
        _o("o", "order", "set topic's order(true|false)"),
        _o("u", "unit", "is unit topic (true|false)"),
        _o("s", "hasUnitSub", "has unit sub (true|false)"),
    ), update_topic, one_of=("brokerAddr", "clusterName")),
    Command("updateTopicList", "create or update topic in batch", (
        _o("b", "brokerAddr", "create topic to which broker"),
        _o("c", "clusterName", "create topic to which cluster"),
        _o("f", "filename", "Path to a file with list of org.apache.rocketmq.common.TopicConfig "
           "in json format", True),
    ), update_topic_list, one_of=("brokerAddr", "clusterName")),
    Command("deleteTopic", "Delete topic from broker and NameServer.", (
        _TOPIC, _o("c", "clusterName", "delete topic from which cluster", True),
    ), delete_topic),
    Command("updateSubGroup", "Update or create subscription group.", (
        _o("b", "brokerAddr", "create subscription group to which broker"),
        _o("c", "clusterName", "create subscription group to which cluster"),
        _o("g", "groupName", "consumer group name", True),
        _o("s", "consumeEnable", "consume enable"),
        _o("m", "consumeFromMinEnable", "from min offset"),
        _o("d", "consumeBroadcastEnable", "broadcast"),
        _o("o", "consumeMessageOrderly", "consume message orderly"),
        _o("q", "retryQueueNums", "retry queue nums"),
        _o("r", "retryMaxTimes", "retry max times"),
        _o("i", "brokerId", "consumer from which broker id"),
        _o("w", "whichBrokerWhenConsumeSlowly", "which broker id when consume slowly"),
        _o("a", "notifyConsumerIdsChanged", "notify consumerId changed"),
        _o(None, "attributes", "attribute(+a=b,+c=d,-e)"),
    ), update_sub_group),
    Command("updateSubGroupList", "Update or create subscription group in batch", (
        _o("b", "brokerAddr", "create groups to which broker"),
        _o("c", "clusterName", "create groups to which cluster"),
        _o("f", "filename", "Path to a file with a list of "
           "org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig in json format", True),
    ), update_sub_group_list, one_of=("brokerAddr", "clusterName")),
    Command("deleteSubGroup", "Delete subscription group from broker.", (
        _o("b", "brokerAddr", "delete subscription group from which broker"),
        _o("c", "clusterName", "delete subscription group from which cluster"),
        _o("g", "groupName", "subscription group name", True),
        _o("r", "removeOffset", "remove offset"),
    ), delete_sub_group),
    Command("updateBrokerConfig", "Update broker's config.", (
        _o("b", "brokerAddr", "update which broker"),
        _o("c", "clusterName", "update which cluster"),
        _o("a", "updateAllBroker", "update all brokers include slave"),
        _o("k", "key", "config key", True),
        _o("v", "value", "config value", True),
    ), update_broker_config),
    Command("updateTopicPerm", "Update topic perm.", (
        _o("b", "brokerAddr", "create topic to which broker"),
        _o("c", "clusterName", "create topic to which cluster"),
        _TOPIC,
        _o("p", "perm", "set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]", True),
    ), update_topic_perm),
    Command("topicRoute", "Examine topic route info.", (
        _TOPIC, _flag_opt("l", "list", "Use list format to print data"),
    ), topic_route),
    Command("topicStatus", "Examine topic Status info.", (
        _TOPIC, _o("c", "cluster", "cluster name or lmq parent topic, lmq is used to find the route."),
    ), topic_status),
    Command("topicClusterList", "Get cluster info for topic.", (_TOPIC,), topic_cluster_list),
    Command("brokerStatus", "Fetch broker runtime status data.", (
        _o("b", "brokerAddr", "Broker address"), _o("c", "clusterName", "which cluster"),
    ), broker_status, one_of=("brokerAddr", "clusterName")),
    Command("haStatus", "Fetch ha runtime status data.", (
        _o("c", "clusterName", "which cluster"),
        _o("b", "brokerAddr", "which broker to fetch"),
        _o("i", "interval", "the interval(second) of get info"),
    ), ha_status, one_of=("brokerAddr", "clusterName")),
    Command("sendMsgStatus", "Send msg to broker.", (
        _o("b", "brokerName", "Broker Name e.g. clusterName_brokerName as DefaultCluster_broker-a", True),
        _o("s", "messageSize", "Message Size, Default: 128"),
        _o("c", "count", "send message count, Default: 50"),
    ), send_msg_status),
    Command("queryMsgById", "Query Message by Id.", (
        _TOPIC,
        _o("i", "msgId", "Message Id", True),
        _o("g", "consumerGroup", "consumer group name"),
        _o("d", "clientId", "The consumer's client id"),
        _o("s", "sendMessage", "resend message"),
        _o("u", "unitName", "unit name"),
        _o("f", "bodyFormat", "print message body by the specified format"),
        _CLUSTER_LMQ,
    ), query_msg_by_id),
    Command("queryMsgByKey", "Query Message by Key.", (
        _o("t", "topic", "Topic name", True),
        _o("k", "msgKey", "Message Key", True),
        _o("b", "beginTimestamp", "Begin timestamp(ms). default:0, eg:1676730526212"),
        _o("e", "endTimestamp", "End timestamp(ms). default:Long.MAX_VALUE, eg:1676730526212"),
        _o("m", "maxNum", "The maximum number of messages returned by the query, default:64"),
        _CLUSTER_LMQ,
    ), query_msg_by_key),
    Command("queryMsgByUniqueKey", "Query Message by Unique key.", (
        _o("i", "msgId", "Message Id", True),
        _o("g", "consumerGroup", "consumer group name"),
        _o("d", "clientId", "The consumer's client id"),
        _o("t", "topic", "The topic of msg", True),
        _flag_opt("a", "showAll", "Print all message, the limit is 32"),
        _CLUSTER_LMQ,
    ), query_msg_by_unique_key),
    Command("queryMsgByOffset", "Query Message by offset.", (
        _TOPIC,
        _o("b", "brokerName", "Broker Name", True),
        _o("i", "queueId", "Queue Id", True),
        _o("o", "offset", "Queue Offset", True),
        _o("f", "bodyFormat", "print message body by the specified format"),
    ), query_msg_by_offset),
    Command("printMsg", "Print Message Detail.", (
        _TOPIC, _CHARSET, _SUBEXPR, _BEGIN, _END,
        _o("d", "printBody", "print body"),
        _o("l", "lmqParentTopic", "Lmq parent topic, lmq is used to find the route."),
    ), print_msg),
    Command("printMsgByQueue", "Print Message Detail by queueId.", (
        _TOPIC,
        _o("a", "brokerName", "broker name", True),
        _o("i", "queueId", "queue id", True),
        _CHARSET, _SUBEXPR, _BEGIN, _END,
        _o("p", "print msg", "print msg. eg: true | false(default)"),
        _o("d", "printBody", "print body. eg: true | false(default)"),
        _o("f", "calculate", "calculate by tag. eg: true | false(default)"),
    ), print_msg_by_queue),
    Command("brokerConsumeStats", "Fetch broker consume stats data.", (
        _o("b", "brokerAddr", "Broker address", True),
        _o("t", "timeoutMillis", "request timeout Millis"),
        _o("l", "level", "threshold of print diff"),
        _o("o", "order", "order topic"),
    ), broker_consume_stats),
    Command("producerConnection", "Query producer's socket connection and client version.", (
        _o("g", "producerGroup", "producer group name", True), _TOPIC,
    ), producer_connection),
    Command("producer", "Query producer's instances, connection, status, etc.", (
        _o("b", "broker", "broker address", True),
    ), producer),
    Command("consumerConnection", "Query consumer's socket connection, client version and subscription.", (
        _o("g", "consumerGroup", "consumer group name", True), _o("b", "brokerAddr", "broker address"),
    ), consumer_connection),
    Command("consumerStatus", "Query consumer's internal data structure.", (
        _o("g", "consumerGroup", "consumer group name", True),
        _o("i", "clientId", "The consumer's client id"),
        _o("b", "brokerAddr", "broker address"),
        _o("s", "jstack", "Run jstack command in the consumer progress", arg=False),
    ), consumer_status),
    Command("consumerProgress", "Query consumer's progress, speed.", (
        _o("g", "groupName", "consumer group name"),
        _o("t", "topicName", "topic name"),
        _o("s", "showClientIP", "Show Client IP per Queue"),
        _CLUSTER_LMQ,
    ), consumer_progress),
    Command("cloneGroupOffset", "Clone offset from other group.", (
        _o("s", "srcGroup", "set source consumer group", True),
        _o("d", "destGroup", "set destination consumer group", True),
        _o("t", "topic", "set the topic", True),
        _o("o", "offline", "the group or the topic is offline"),
    ), clone_group_offset),
    Command("clusterList", "List cluster infos.", (
        _flag_opt("m", "moreStats", "Print more stats"),
        _o("i", "interval", "specify intervals numbers, it is in seconds"),
        _o("c", "clusterName", "which cluster"),
    ), cluster_list),
    Command("clusterRT", "List All clusters Message Send RT.", (
        _o("a", "amount", "message amount | default 100"),
        _o("s", "size", "message size | default 128 Byte"),
        _o("c", "cluster", "cluster name | default display all cluster"),
        _o("p", "print log", "print as tlog | default false"),
        _o("m", "machine room", "machine room name | default noname"),
        _o("i", "interval", "print interval | default 10 seconds"),
    ), cluster_rt),
    Command("topicList", "Fetch all topic list from name server.", (
        _flag_opt("c", "clusterModel", "clusterModel"),
    ), topic_list),
    Command("updateKvConfig", "Create or update KV config.", (
        _o("s", "namespace", "set the namespace", True),
        _o("k", "key", "set the key name", True),
        _o("v", "value", "set the key value", True),
    ), update_kv_config),
    Command("deleteKvConfig", "Delete KV config.", (
        _o("s", "namespace", "set the namespace", True), _o("k", "key", "set the key name", True),
    ), delete_kv_config),
    Command("wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param.", (
        _o("b", "brokerName", "broker name", True),
    ), _write_perm(False)),
    Command("addWritePerm", "Add write perm of broker in all name server you defined in the -n param.", (
        _o("b", "brokerName", "broker name", True),
    ), _write_perm(True)),
    Command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", (
        _o("g", "group", "set the consumer group", True),
        _o("t", "topic", "set the topic", True),
        _o("s", "timestamp", "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", True),
        _o("f", "force", "set the force rollback by timestamp switch[true|false]. Deprecated."),
        _o("b", "broker", "broker addr"),
        _o("q", "queue", "queue id"),
        _o("o", "offset", "Expect queue offset, not support old version broker"),
        _CLUSTER_LMQ,
    ), reset_offset_by_time),
    Command("skipAccumulatedMessage", "Skip all messages that are accumulated (not consumed) currently.", (
        _o("g", "group", "set the consumer group", True),
        _o("t", "topic", "set the topic", True),
        _o("f", "force", "set the force rollback by timestamp switch[true|false]"),
        _CLUSTER_LMQ,
    ), skip_accumulated_message),
    Command("updateOrderConf", "Create or update or delete order conf.", (
        _TOPIC,
        _o("v", "orderConf", "set order conf [eg. brokerName1:num;brokerName2:num]"),
        _o("m", "method", "option type [eg. put|get|delete", True),
    ), update_order_conf),
    Command("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", (
        _o("b", "brokerAddr", "Broker address"), _o("c", "cluster", "clustername"),
    ), _store_chore(lambda s: s.broker_clean_expired_consume_queues)),
    Command("deleteExpiredCommitLog", "Delete expired CommitLog files.", (
        _o("b", "brokerAddr", "Broker address"), _o("c", "cluster", "clustername"),
    ), _store_chore(lambda s: s.broker_delete_expired_commitlog)),
    Command("cleanUnusedTopic", "Clean unused topic on broker.", (
        _o("b", "brokerAddr", "Broker address"), _o("c", "cluster", "cluster name"),
    ), _store_chore(lambda s: s.broker_clean_unused_topics)),
    Command("statsAll", "Topic and Consumer tps stats.", (
        _flag_opt("a", "activeTopic", "print active topic only"),
        _o("t", "topic", "print select topic only"),
    ), stats_all),
    Command("allocateMQ", "Allocate MQ.", (_TOPIC, _o("i", "ipList", "ipList", True)), allocate_mq),
    Command("getNamesrvConfig", "Get configs of name server.", (), get_namesrv_config),
    Command("updateNamesrvConfig", "Update configs of name server.", (
        _o("k", "key", "config key", True), _o("v", "value", "config value", True),
    ), update_namesrv_config),
    Command("getBrokerConfig", "Get broker config by cluster or special broker.", (
        _o("b", "brokerAddr", "get which broker"), _o("c", "clusterName", "get which cluster"),
    ), get_broker_config),
    Command("exportMetadata", "Export metadata.", (
        _o("c", "clusterName", "choose a cluster to export"),
        _o("b", "brokerAddr", "choose a broker to export"),
        _o("f", "filePath", "export metadata.json path | default /tmp/rocketmq/export"),
        _flag_opt("t", "topic", "only export topic metadata"),
        _flag_opt("g", "subscriptionGroup", "only export subscriptionGroup metadata"),
        _flag_opt("s", "specialTopic", "need retryTopic and dlqTopic"),
    ), export_metadata, one_of=("clusterName", "brokerAddr")),
    Command("exportConfigs", "Export configs.", (
        _o("c", "clusterName", "choose a cluster to export", True),
        _o("f", "filePath", "export configs.json path | default /tmp/rocketmq/export"),
    ), export_configs),
    Command("getConsumerConfig", "Get consumer config by subscription group name.", (
        _o("g", "groupName", "subscription group name", True),
    ), get_consumer_config),
    Command("queryCq", "Query cq command.", (
        _o("t", "topic", "topic name", True),
        _o("q", "queue", "queue num, ie. 1", True),
        _o("i", "index", "start queue index.", True),
        _o("c", "count", "how many."),
        _o("b", "broker", "broker addr."),
        _o("g", "consumer", "consumer group."),
    ), query_cq),
    Command("sendMessage", "Send a message.", (
        _o("t", "topic", "Topic name", True),
        _o("p", "body", "UTF-8 string format of the message body", True),
        _o("k", "key", "Message keys"),
        _o("c", "tags", "Message tags"),
        _o("b", "broker", "Send message to target broker"),
        _o("i", "qid", "Send message to target queue"),
        _o("m", "msgTraceEnable", "Message Trace Enable, Default: false"),
    ), send_message),
    Command("checkMsgSendRT", "Check message send response time.", (
        _o("t", "topic", "topic name", True),
        _o("a", "amount", "message amount | default 100"),
        _o("s", "size", "message size | default 128 Byte"),
    ), check_msg_send_rt),
    Command("consumeMessage", "Consume message.", (
        _o("t", "topic", "Topic name", True),
        _o("b", "brokerName", "Broker name"),
        _o("i", "queueId", "Queue Id"),
        _o("o", "offset", "Queue offset"),
        _o("g", "consumerGroup", "Consumer group name"),
        _o("s", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
        _END,
        _o("c", "MessageNumber", "Number of message to be consumed"),
    ), consume_message),
    Command("decodeMessageId", "decode unique message ID", (
        _o("i", "messageId", "unique message ID"),
    ), decode_message_id),
)  # fmt: skip
_BY_NAME = {c.name.lower(): c for c in COMMANDS}


def find(name: str) -> Command | None:
    """A command by name, ignoring case as mqadmin does."""
    return _BY_NAME.get(name.lower())
