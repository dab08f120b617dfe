"""mqadmin's text layouts: admin dataclasses formatted exactly as Apache RocketMQ's tools print them.

Pure formatting: every function takes what the admin service returned and gives the
text, newline-terminated as Java's ``%n`` leaves it, so scripts that screen-scrape ``mqadmin`` keep
working. Java's own spellings are reproduced on purpose: ``null`` for absent strings, ``Double.toString``
numbers, ``HashMap`` iteration order for message properties, fastjson's pretty JSON.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

from broker.protocol.javahash import java_hash

if TYPE_CHECKING:
    from admin.models import (
        BrokerInfo,
        BrokerRuntime,
        ClientInfo,
        ClientRunningInfo,
        ClusterConfigs,
        ClusterList,
        ConfigValues,
        GroupClients,
        GroupConfigAt,
        GroupConnections,
        GroupLag,
        HARuntime,
        Messages,
        OffsetReset,
        PermChange,
        ProducerInstance,
        SendProbes,
        SendReceipt,
        TopicChange,
        TopicRoute,
        TopicStatus,
        TrackInfo,
    )
    from broker.client.message import SendResult
    from broker.protocol.bodies import TopicConfig
    from broker.protocol.group_bodies import QueryConsumeQueueResponseBody
    from broker.protocol.message import MessageRecord

ROUTE_RULE = "-" * 158
_PROPERTIES_CAPACITY = 128  # MessageDecoder.string2messageProperties: new HashMap<>(128)


# -- Java spellings ---------------------------------------------------------------------------------
def jstr(value: object) -> str:
    """Java's ``%s``: ``null`` for None, ``true``/``false`` for booleans."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def java_double(value: float) -> str:
    """Java's ``Double.toString``: ``0.0``, ``12.5``, ``1.0E7``."""
    x = float(value)
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)
    mantissa, _, exponent = f"{x:e}".partition("e")
    digits = repr(float(mantissa))
    return f"{digits}E{int(exponent)}"


def human_time(epoch_ms: int) -> str:
    """``UtilAll.timeMillisToHumanString2``: ``yyyy-MM-dd HH:mm:ss,SSS`` in local time."""
    t = dt.datetime.fromtimestamp(epoch_ms / 1000)
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{epoch_ms % 1000:03d}"


def plain_time(epoch_ms: int) -> str:
    """``UtilAll.formatDate(…, YYYY_MM_DD_HH_MM_SS)`` in local time."""
    return dt.datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def hashmap_order(keys: Iterable[str], capacity: int = 16) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` holding ``keys`` (inserted in this order) whose
    table has ``capacity`` buckets: by bucket of the spread hash, then insertion."""
    size = capacity
    wanted = list(keys)
    while len(wanted) > size * 3 // 4:
        size *= 2

    def bucket(key: str) -> int:
        h = java_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (size - 1)

    return sorted(wanted, key=bucket)  # sorted() is stable: insertion order within a bucket


def java_map(values: Mapping[str, str], capacity: int = 16) -> str:
    """``HashMap.toString``: ``{k1=v1, k2=v2}`` in HashMap order."""
    return "{" + ", ".join(f"{k}={values[k]}" for k in hashmap_order(values, capacity)) + "}"


def java_fixed(value: float) -> str:
    """Java's ``String.format("%.2f")``, which spells a NaN ``NaN``."""
    return "NaN" if math.isnan(value) else f"{value:.2f}"


def _first_number(text: str | None) -> float:
    try:
        return float((text or "").split(" ")[0])
    except ValueError:
        return 0.0


# -- help -------------------------------------------------------------------------------------------
def command_list(commands: Sequence[tuple[str, str]]) -> str:
    """What ``mqadmin`` prints without arguments."""
    lines = ["The most commonly used mqadmin commands are:"]
    lines += [f"   {name:<35} {desc}" for name, desc in commands]
    lines += ["", "See 'mqadmin help <command>' for more information on a specific command."]
    return "\n".join(lines) + "\n"


# -- topics -----------------------------------------------------------------------------------------
def _fastjson(value: object, depth: int) -> str:
    """fastjson's PrettyFormat: tab indents; String keys on their own line, other keys inline."""
    pad, inner = "\t" * depth, "\t" * (depth + 1)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        parts = []
        for i, (key, item) in enumerate(value.items()):
            sep = "," if i else ""
            if isinstance(key, str):
                parts.append(f'{sep}\n{inner}"{key}":{_fastjson(item, depth + 1)}')
            else:
                parts.append(f"{sep}{key}:{_fastjson(item, depth + 1)}")
        return "{" + "".join(parts) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        items = ",".join(f"\n{inner}{_fastjson(v, depth + 1)}" for v in value)
        return f"[{items}\n{pad}]"
    if isinstance(value, bool):
        return jstr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def topic_route_json(route: TopicRoute) -> str:
    """``TopicRouteData.toJson(true)``: keys alphabetical, absent values left out."""
    data: dict[str, object] = {
        "brokerDatas": [
            {
                "brokerAddrs": dict(b.addresses),
                "brokerName": b.broker_name,
                "cluster": b.cluster,
                "enableActingMaster": False,
            }
            for b in route.brokers
        ],
        "filterServerTable": {},
    }
    if route.order_conf is not None:
        data["orderTopicConf"] = route.order_conf
    data["queueDatas"] = [
        {
            "brokerName": q.broker_name,
            "perm": q.perm,
            "readQueueNums": q.read_queues,
            "topicSysFlag": q.topic_sys_flag,
            "writeQueueNums": q.write_queues,
        }
        for q in route.queues
    ]
    return _fastjson(data, 0) + "\n"


def topic_route_list(route: TopicRoute) -> str:
    """``topicRoute -l``: one row per broker, then totals."""
    row = "{:<45} {:<32} {:<50} {:<10} {:<11} {:<5}\n"
    out = [row.format("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")]
    queues = {q.broker_name: q for q in route.queues}
    total_read = total_write = 0
    for b in route.brokers:
        q = queues.get(b.broker_name)
        read, write = (q.read_queues, q.write_queues) if q else (0, 0)
        total_read, total_write = total_read + read, total_write + write
        addrs = "{" + ", ".join(f"{i}={a}" for i, a in b.addresses.items()) + "}"
        out.append(row.format(b.cluster, b.broker_name, addrs, read, write, q.perm if q else 0))
    out.append(ROUTE_RULE + "\n")
    out.append(row.format("Total:", len(route.brokers), "", total_read, total_write, ""))
    return "".join(out)


def topic_status(status: TopicStatus) -> str:
    out = ["{:<32}  {:<4}  {:<20}  {:<20}    {}\n".format(
        "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"
    )]  # fmt: skip
    for q in status.queues:
        last = human_time(q.last_updated) if q.last_updated > 0 else ""
        out.append(
            f"{q.broker_name:<32}  {q.queue_id:<4}  {q.min_offset:<20}  {q.max_offset:<20}    {last}\n"
        )
    out.append(f"\nTopic Put TPS: {java_double(status.put_tps)}\n")
    return "".join(out)


def topic_list_clusters(rows: Iterable[tuple[str, str, str]]) -> str:
    """``topicList -c``: (cluster, topic, group) rows under a header narrower than the rows."""
    out = ["{:<20}  {:<48}  {:<48}\n".format("#Cluster Name", "#Topic", "#Consumer Group")]
    out += [f"{c:<20}  {t:<64}  {g:<64}\n" for c, t, g in rows]
    return "".join(out)


def topic_change(change: TopicChange, by_cluster: bool, filter_type: str = "SINGLE_TAG") -> str:
    """``updateTopic``: a line per broker written, the order conf when ordered, the TopicConfig."""
    lines = [f"create topic to {a} success." for a in change.addresses]
    if change.order and change.order_conf:
        scope = "cluster" if by_cluster else "broker"
        lines.append(f"set {scope} orderConf. isOrder=true, orderConf=[{change.order_conf}]")
        if not by_cluster:
            lines.insert(0, lines.pop())
    lines.append(
        f"TopicConfig [topicName={change.topic}, readQueueNums={change.read_queues}, "
        f"writeQueueNums={change.write_queues}, perm={_perm(change.perm)}, topicFilterType={filter_type}, "
        f"topicSysFlag=0, order={jstr(change.order)}, attributes={_java_map(change.attributes)}]"
    )
    return "\n".join(lines) + "\n"


def _java_map(values: dict[str, str]) -> str:
    """A Java Map's toString (in the map's own order)."""
    return "{" + ", ".join(f"{k}={v}" for k, v in values.items()) + "}"


def _perm(perm: int) -> str:
    return ("R" if perm & 4 else "-") + ("W" if perm & 2 else "-") + ("X" if perm & 1 else "-")


def topic_config_text(c: TopicConfig) -> str:
    """``TopicConfig.toString``."""
    return (
        f"TopicConfig [topicName={c.topicName}, readQueueNums={c.readQueueNums}, "
        f"writeQueueNums={c.writeQueueNums}, perm={_perm(c.perm)}, topicFilterType={c.topicFilterType.name}, "
        f"topicSysFlag={c.topicSysFlag}, order={jstr(c.order)}, attributes={java_map(c.attributes)}]"
    )


def topic_perm_change(changes: Sequence[PermChange], by_broker: bool) -> str:
    """``updateTopicPerm``: with ``-b`` the one broker's change and its TopicConfig (or that nothing
    changed); with ``-c`` a line per master."""
    lines = []
    for c in changes:
        if by_broker and c.old_perm == c.config.perm:
            return "new perm equals to the old one!\n"
        lines.append(f"update topic perm from {c.old_perm} to {c.config.perm} in {c.address} success.")
        if by_broker:
            lines.append(f"{topic_config_text(c.config)}.")
    return "".join(f"{line}\n" for line in lines)


def batch_submitted(addresses: Sequence[str], what: str) -> str:
    """``updateTopicList`` / ``updateSubGroupList``: a line per broker the batch went to."""
    return "".join(
        f"submit batch of {what} config to {a} success, please check the result later.\n" for a in addresses
    )


# -- clusters and brokers ---------------------------------------------------------------------------
def cluster_list(listing: ClusterList, now_ms: int) -> str:
    """``clusterList``: one row per broker address, with the runtime figures mqadmin derives."""
    out = [
        "{:<22}  {:<22}  {:<4}  {:<22} {:<16}  {:>16}  {:>30}  {:<22}  {:<11}  {:<12}  {:<8}  {:<10}\n".format(  # noqa: E501
            "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
            "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED",
        )
    ]  # fmt: skip
    for b in listing.brokers:
        out.append(_cluster_row(b, now_ms))
    return "".join(out)


def _cluster_row(b: BrokerInfo, now_ms: int) -> str:
    r = b.runtime
    g = r.get

    def num(key: str) -> float:
        try:
            return float(r[key])
        except (KeyError, ValueError):
            return 0.0

    in_tps = f"{_first_number(g('putTps')):9.2f}({jstr(g('sendThreadPoolQueueSize'))},"
    in_tps += f"{jstr(g('sendThreadPoolQueueHeadWaitTimeMills'))}ms)"
    out_tps = (
        f"{_first_number(g('getTransferredTps')):9.2f}({jstr(g('pullThreadPoolQueueSize'))},"
        f"{jstr(g('pullThreadPoolQueueHeadWaitTimeMills'))}ms|{g('ackThreadPoolQueueSize', 'N')},"
        f"{g('ackThreadPoolQueueHeadWaitTimeMills', 'N')}ms)"
    )
    timer = (
        f"{int(num('timerReadBehind'))}-{int(num('timerOffsetBehind'))}"
        f"({num('timerCongestNum') / 10000:.1f}w, {num('timerEnqueueTps'):.1f}, {num('timerDequeueTps'):.1f})"
    )
    earliest = g("earliestMessageTimeStamp")
    hour = (now_ms - int(earliest)) / 1000 / 3600 if earliest else 0.0
    space = num("commitLogDiskRatio")
    active = jstr(g("brokerActive", "false").lower() == "true")
    return (
        f"{b.cluster:<22}  {b.broker_name:<22}  {b.broker_id:<4}  {b.address:<22} {jstr(b.version):<16}  "
        f"{in_tps:>16}  {out_tps:>30}  {timer:<22}  {jstr(g('pageCacheLockTimeMills')):>11}  "
        f"{hour:<12.2f}  {space:<8.4f}  {active:>10}\n"
    )


def cluster_list_more(listing: ClusterList) -> str:
    """``clusterList -m``: yesterday's and today's message totals per master broker."""
    out = ["{:<16}  {:<32} {:>14} {:>14} {:>14} {:>14}\n".format(
        "#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday"
    )]  # fmt: skip
    for b in listing.brokers:
        if b.broker_id != 0:
            continue
        r = b.runtime

        def total(key: str, runtime: Mapping[str, str] = r) -> int:
            try:
                return int(runtime.get(key, "0"))
            except ValueError:
                return 0

        in_yest = total("msgPutTotalTodayMorning") - total("msgPutTotalYesterdayMorning")
        out_yest = total("msgGetTotalTodayMorning") - total("msgGetTotalYesterdayMorning")
        in_today = total("msgPutTotalTodayNow") - total("msgPutTotalTodayMorning")
        out_today = total("msgGetTotalTodayNow") - total("msgGetTotalTodayMorning")
        out.append(
            f"{b.cluster:<16}  {b.broker_name:<32} {in_yest:>14} {out_yest:>14} "
            f"{in_today:>14} {out_today:>14}\n"
        )
    return "".join(out)


def broker_status(runtime: BrokerRuntime) -> str:
    """``brokerStatus -b``: every runtime key, sorted."""
    return "".join(f"{k:<32}: {v}\n" for k, v in sorted(runtime.values.items()))


def broker_status_cluster(runtimes: Sequence[BrokerRuntime]) -> str:
    """``brokerStatus -c``: every runtime key of every broker, prefixed by its address."""
    return "".join(f"{r.address:<24} {k:<32}: {v}\n" for r in runtimes for k, v in sorted(r.values.items()))


def config_values(config: ConfigValues, title: str) -> str:
    """``getBrokerConfig`` / ``getNamesrvConfig``: a title line, then ``key=  value`` lines."""
    lines = [f"============{title}============"]
    lines += [f"{k:<50}=  {v}" for k, v in config.values.items()]
    return "\n".join(lines) + "\n"


def ha_status(runtimes: Sequence[HARuntime]) -> str:
    """``haStatus``: per master its slaves (ack offset, diff, speed, in sync), per slave its client."""
    out = []
    for r in runtimes:
        info = r.info
        if info.master:
            out.append(
                f"\n#MasterAddr\t{r.address}\n#MasterCommitLogMaxOffset\t{info.masterCommitLogMaxOffset}\n"
                f"#SlaveNum\t{len(info.haConnectionInfo)}\n#InSyncSlaveNum\t{info.inSyncSlaveNums}\n"
            )
            out.append("{:<32}  {:<16} {:>16} {:>16} {:>16} {:>16}\n".format(
                "#SlaveAddr", "#SlaveAckOffset", "#Diff", "#TransferSpeed(KB/s)", "#Status",
                "#TransferFromWhere",
            ))  # fmt: skip
            out += [
                f"{c.addr:<32}  {c.slaveAckOffset:<16} {c.diff:>16} "
                f"{c.transferredByteInSecond / 1024:>16.2f} "
                f"{'OK' if c.inSync else 'Fall Behind':>16} {c.transferFromWhere:>16}\n"
                for c in info.haConnectionInfo
            ]
            continue
        c = info.haClientRuntimeInfo
        out.append(
            f"\n#MasterAddr\t{jstr(c.masterAddr or None)}\n#CommitLogMaxOffset\t{c.maxOffset}\n"
            f"#TransferSpeed(KB/s)\t{c.transferredByteInSecond / 1024:.2f}\n"
            f"#LastReadTime\t{human_time(c.lastReadTimestamp)}\n"
            f"#LastWriteTime\t{human_time(c.lastWriteTimestamp)}\n#MasterFlushOffset\t{c.masterFlushOffset}\n"
        )
    return "".join(out)


def _properties_capacity(size: int) -> int:
    """The table size of a ``java.util.Properties`` (a ConcurrentHashMap of 16, doubled on reaching 12
    entries) holding ``size`` keys."""
    capacity = 16
    while size >= capacity * 3 // 4:
        capacity *= 2
    return capacity


def configs_json(configs: ClusterConfigs) -> str:
    """``exportConfigs``' configs.json: fastjson's pretty JSON of its HashMaps (and of each broker's
    Properties) in their iteration order, without a final newline."""

    def ordered(values: Mapping[str, object], capacity: int = 16) -> dict[str, object]:
        return {k: values[k] for k in hashmap_order(values, capacity)}

    brokers = configs.broker_configs
    scale = {
        "namesrvSize": configs.namesrv_size,
        "masterBrokerSize": configs.master_size,
        "slaveBrokerSize": configs.slave_size,
    }
    doc = {
        "brokerConfigs": ordered(
            {name: ordered(c, _properties_capacity(len(c))) for name, c in brokers.items()}
        ),
        "clusterScale": ordered(scale),
    }
    return _fastjson(ordered(doc), 0)


# -- groups -----------------------------------------------------------------------------------------
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
        out.append(f"Subscription data: \n{_fastjson(doc, 0)}\n{CQ_RULE}\n")
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


def _version_names() -> list[str]:
    """``MQVersion.Version`` in declaration order: 3.0.0's pre-releases, then a SNAPSHOT and a release
    for every patch (3.0.1-3.0.15, 3.1.x-3.2.x from 0, 3.3.x-3.9.x from 1, 4.x and 5.x from 0 to 9)."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", *(f"V3_0_0_BETA{i}" for i in range(1, 6))]
    names += [n for i in range(6, 10) for n in (f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}")]
    names.append("V3_0_0_FINAL")
    patches = [(3, 0, 1, 15), (3, 1, 0, 9), (3, 2, 0, 9), *((3, m, 1, 9) for m in range(3, 10))]
    patches += [(major, m, 0, 9) for major in (4, 5) for m in range(10)]
    for major, minor, first, last in patches:
        for patch in range(first, last + 1):
            names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    return names


def version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc``: the name of a client's version number (the last one beyond)."""
    names = _version_names()
    return names[min(max(version, 0), len(names) - 1)]


# -- messages ---------------------------------------------------------------------------------------
def message_detail(
    msg: MessageRecord,
    body_path: str,
    tracks: Sequence[TrackInfo] | None,
    body_charset: str | None = None,
    with_offset_id: bool = True,
) -> str:
    """``queryMsgById`` (and ``queryMsgByUniqueKey`` without the OffsetID line): the message, where its
    body was written, and the tracks of the groups consuming its topic."""
    fields: list[tuple[str, object]] = [("OffsetID:", msg.offset_msg_id)] if with_offset_id else []
    fields += [
        ("Topic:", msg.topic),
        ("Tags:", f"[{jstr(msg.tags)}]"),
        ("Keys:", f"[{jstr(msg.properties.get('KEYS'))}]"),
        ("Queue ID:", msg.queue_id),
        ("Queue Offset:", msg.queue_offset),
        ("CommitLog Offset:", msg.physical_offset),
        ("Reconsume Times:", msg.reconsume_times),
        ("Born Timestamp:", human_time(msg.born_timestamp)),
        ("Store Timestamp:", human_time(msg.store_timestamp)),
        ("Born Host:", msg.born_host),
        ("Store Host:", msg.store_host),
        ("System Flag:", msg.sys_flag),
        ("Properties:", java_map(msg.properties, _PROPERTIES_CAPACITY)),
        ("Message Body Path:", body_path),
    ]
    if body_charset is not None:
        fields.append(("Message Body:", msg.body.decode(body_charset, "replace")))
    text = "".join(f"{name:<20} {value}\n" for name, value in fields)
    if tracks is None:
        return text
    if not tracks:
        return text + "\n\nWARN: No Consumer"
    return text + "\n\n" + "".join(track_line(t) + "\n" for t in tracks)


def track_line(track: TrackInfo) -> str:
    """Java's ``MessageTrack.toString``."""
    return (
        f"MessageTrack [consumerGroup={track.group}, trackType={track.track_type}, "
        f"exceptionDesc={jstr(track.detail)}]"
    )


def message_not_found() -> str:
    return "\nMessage not found!"


def query_by_key(messages: Messages) -> str:
    """``queryMsgByKey``: client id (UNIQ_KEY), queue and queue offset of each message."""
    out = [f"{'#Message ID':<50} {'#QID':>4} {'#Offset':>40}\n"]
    out += [f"{m.msg_id:<50} {m.queue_id:>4} {m.queue_offset:>40}\n" for m in messages.messages]
    return "".join(out)


def message_ext(msg: MessageRecord) -> str:
    """A short ``MessageExt.toString`` for ``printMsg`` lines."""
    return (
        f"MessageExt [brokerName=null, queueId={msg.queue_id}, storeSize={msg.total_size}, "
        f"queueOffset={msg.queue_offset}, sysFlag={msg.sys_flag}, bornTimestamp={msg.born_timestamp}, "
        f"bornHost=/{msg.born_host}, storeTimestamp={msg.store_timestamp}, storeHost=/{msg.store_host}, "
        f"msgId={msg.offset_msg_id}, commitLogOffset={msg.physical_offset}, bodyCRC={msg.body_crc}, "
        f"reconsumeTimes={msg.reconsume_times}, preparedTransactionOffset={msg.prepared_transaction_offset}, "
        f"toString()=Message{{topic='{msg.topic}', flag={msg.flag}, "
        f"properties={java_map(msg.properties, _PROPERTIES_CAPACITY)}, body=[{len(msg.body)} bytes]}}]"
    )


def print_messages(messages: Messages, charset: str | None) -> str:
    """``printMsg`` / ``printMsgByQueue`` lines: ``MSGID: <id> <MessageExt> BODY: <body>``."""
    out = []
    for m in messages.messages:
        body = m.body.decode(charset, "replace") if charset else "NOT PRINT BODY"
        out.append(f"MSGID: {m.offset_msg_id} {message_ext(m)} BODY: {body}\n")
    return "".join(out)


def send_result(receipt: SendReceipt | None) -> str:
    """``sendMessage``: one row with the broker, queue, status and client message id."""
    row = "{:<32}  {:<4}  {:<20}    {}\n"
    head = row.format("#Broker Name", "#QID", "#Send Result", "#MsgId")
    if receipt is None:
        return head + row.format("Unknown", "Unknown", "Failed", "None")
    return head + row.format(receipt.broker_name, receipt.queue_id, receipt.status, receipt.uniq_key)


def stats_all(rows: Iterable[tuple[str, str | None, int, float, float]]) -> str:
    """``statsAll``: (topic, group or None, accumulation, in TPS, out TPS) rows; the 24-hour counts
    are not kept by these brokers and print as 0."""
    out = ["{:<64}  {:<64} {:>12} {:>11} {:>11} {:>14} {:>14}\n".format(
        "#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"
    )]  # fmt: skip
    for topic, group, accumulation, in_tps, out_tps in rows:
        if group is None:
            out.append(f"{topic[:64]:<64}  {'':<64} {0:>12} {in_tps:>11.2f} {'':>11} {0:>14} {'':>14}\n")
        else:
            out.append(
                f"{topic[:64]:<64}  {group[:64]:<64} {accumulation:>12} {in_tps:>11.2f} {out_tps:>11.2f} "
                f"{0:>14} {0:>14}\n"
            )
    return "".join(out)


def broker_consume_stats(lags: Sequence[GroupLag], level: int) -> str:
    """``brokerConsumeStats``: queues of every group whose diff reaches ``level``, then the total."""
    out = ["{:<64}  {:<64}  {:<32}  {:<4}  {:<20}  {:<20}  {:<20}  {}\n".format(
        "#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime"
    )]  # fmt: skip
    total = 0
    for lag in lags:
        for q in lag.queues:
            total += q.diff
            if q.diff < level or q.last_timestamp <= 0:
                continue
            out.append(
                f"{q.topic[:64]:<64}  {lag.group:<64}  {q.broker_name[:32]:<32}  {q.queue_id:<4}  "
                f"{q.broker_offset:<20}  {q.consumer_offset:<20}  {q.diff:<20}  "
                f"{plain_time(q.last_timestamp)}\n"
            )
    out.append(f"\nDiff Total: {total}\n")
    return "".join(out)


def java_stamp(epoch_ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: ``yyyyMMddHHmmssSSS`` in local time (0 too: the epoch)."""
    t = dt.datetime.fromtimestamp(epoch_ms / 1000)
    return t.strftime("%Y%m%d%H%M%S") + f"{epoch_ms % 1000:03d}"


def _message_queue(topic: str, broker_name: str, queue_id: int) -> str:
    return f"MessageQueue [topic={topic}, brokerName={broker_name}, queueId={queue_id}]"


def consumer_running_info(c: ClientRunningInfo) -> str:
    """``ConsumerRunningInfo.formatString``: what ``consumerStatus -i`` prints (and writes per client)."""
    out = ["#Consumer Properties#\n"]
    out += [f"{key:<40}: {value}\n" for key, value in sorted(c.properties.items())]
    out.append("\n\n#Consumer Subscription#\n")
    out += [
        f"{i:03d} Topic: {s.topic:<40} ClassFilter: {'false':<8} SubExpression: {s.expression}\n"
        for i, s in enumerate(c.subscriptions, 1)
    ]
    out.append("\n\n#Consumer Offset#\n")
    out.append(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Consumer Offset':<20}\n")
    out += [f"{q.topic:<32}  {q.broker_name:<32}  {q.queue_id:<4}  {q.commit_offset:<20}\n" for q in c.queues]
    out.append("\n\n#Consumer MQ Detail#\n")
    out.append(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#ProcessQueueInfo':<20}\n")
    for q in c.queues:
        info = (
            f"ProcessQueueInfo [commitOffset={q.commit_offset}, cachedMsgMinOffset={q.cached_min_offset}, "
            f"cachedMsgMaxOffset={q.cached_max_offset}, cachedMsgCount={q.cached_count}, "
            f"cachedMsgSizeInMiB={q.cached_size_mib}, transactionMsgMinOffset={q.consuming_min_offset}, "
            f"transactionMsgMaxOffset={q.consuming_max_offset}, transactionMsgCount={q.consuming_count}, "
            f"locked={jstr(q.locked)}, tryUnlockTimes={q.try_unlock_times}, "
            f"lastLockTimestamp={java_stamp(q.last_lock_timestamp)}, droped={jstr(q.dropped)}, "
            f"lastPullTimestamp={java_stamp(q.last_pull_timestamp)}, "
            f"lastConsumeTimestamp={java_stamp(q.last_consume_timestamp)}]"
        )
        out.append(f"{q.topic:<64}  {q.broker_name:<32}  {q.queue_id:<4}  {info}\n")
    out.append("\n\n#Consumer Pop Detail#\n")
    out.append(f"{'#Topic':<32}  {'#Broker Name':<32}  {'#QID':<4}  {'#ProcessQueueInfo':<20}\n")
    out.append("\n\n#Consumer RT&TPS#\n")
    out.append(
        f"{'#Topic':<64}  {'#Pull RT':>14} {'#Pull TPS':>14} {'#Consume RT':>14} {'#ConsumeOK TPS':>14} "
        f"{'#ConsumeFailed TPS':>18} {'#ConsumeFailedMsgsInHour':>25}\n"
    )
    out += [
        f"{r.topic:<32}  {r.pull_rt:14.2f} {r.pull_tps:14.2f} {r.consume_rt:14.2f} {r.consume_ok_tps:14.2f} "
        f"{r.consume_failed_tps:18.2f} {r.consume_failed_msgs:25d}\n"
        for r in c.rates
    ]
    out.append("\n\n#User Consume Info#\n")
    if c.jstack is not None:
        out.append(f"\n\n#Consumer jstack#\n{c.jstack}")
    return "".join(out)


def consumer_status_header() -> str:
    return f"{'#Index':<10} {'#ClientId':<40} {'#Version':<20} #ConsumerRunningInfoFile\n"


def consumer_status_row(index: int, c: ClientRunningInfo, path: str) -> str:
    return f"{index:<10} {c.client_id:<40} {version_desc(c.version):<20} {path}\n"


def consumer_status_analysis(result: GroupClients) -> str:
    """The verdict after the listing: subscriptions alike, rebalance, queues in trouble."""
    from admin.models import ProblemKind

    answered = [c for c in result.clients if c.error is None]
    if not answered:
        return ""
    if not result.same_subscriptions:
        return "\n\nWARN: Different subscription in the same group of consumer!!!"
    out = ["\n\nSame subscription in the same group of consumer", "\n\nRebalance OK\n"]
    for c in answered:
        for p in c.problems:
            mq = _message_queue(p.topic, p.broker_name, p.queue_id)
            if p.kind is ProblemKind.NOT_LOCKED:
                out.append(f"{c.client_id} {mq} can't lock for a while, {p.for_ms}ms\n")
            elif p.kind is ProblemKind.UNLOCK_FAILED:
                out.append(f"{c.client_id} {mq} unlock {p.unlock_tries} times, still failed\n")
            else:
                out.append(f"{c.client_id} {mq} can't consume for a while, maybe blocked, {p.for_ms}ms\n")
    return "".join(out)


# -- measured sends ---------------------------------------------------------------------------------
def send_result_text(r: SendResult) -> str:
    """Java's ``SendResult.toString``."""
    mq = r.message_queue
    return (
        f"SendResult [sendStatus={r.status.name}, msgId={r.msg_id}, offsetMsgId={r.offset_msg_id}, "
        f"messageQueue={_message_queue(mq.topic, mq.brokerName, mq.queueId)}, queueOffset={r.queue_offset}, "
        f"recallHandle={jstr(r.recall_handle)}]"
    )


def send_msg_status(probes: SendProbes) -> str:
    """``sendMsgStatus``: each send's round trip and result."""
    return "".join(
        f"rt={p.rt_ms}ms, SendResult={send_result_text(p.result) if p.result else jstr(p.error)}\n"
        for p in probes.probes
    )


def send_rt(probes: SendProbes) -> str:
    """``checkMsgSendRT``: per send the queue, whether it succeeded and its round trip; the mean."""
    row = "{:<32}  {:<4}  {:<20}    {}\n"
    out = [row.format("#Broker Name", "#QID", "#Send Result", "#RT")]
    out += [row.format(p.broker_name, p.queue_id, jstr(p.result is not None), p.rt_ms) for p in probes.probes]
    out.append(f"Avg RT: {java_fixed(probes.avg_rt_ms)}\n")
    return "".join(out)


def cluster_rt_header() -> str:
    return "{:<24}  {:<24}  {:<4}  {:<8}  {:<8}\n".format(
        "#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount"
    )


def cluster_rt(rows: Iterable[tuple[str, SendProbes]], tlog: bool, machine_room: str, now_ms: int) -> str:
    """``clusterRT``: per (cluster, broker) the mean round trip and the counts; with ``tlog`` the
    ``time|room|cluster|broker|rt`` lines (time in GMT+8, the mean rounded half up)."""
    out = []
    if tlog:
        china = dt.timezone(dt.timedelta(hours=8))
        stamp = dt.datetime.fromtimestamp(now_ms / 1000, china).strftime("%Y-%m-%d %H:%M:%S")
    for cluster, probes in rows:
        rt = probes.avg_rt_ms
        if not tlog:
            out.append(
                f"{cluster:<24}  {probes.topic:<24}  {java_fixed(rt):<8}  {probes.successes:<16}  "
                f"{probes.failures:<16}\n"
            )
            continue
        rounded = "NaN" if math.isnan(rt) else str(Decimal(rt).quantize(Decimal(1), ROUND_HALF_UP))
        out.append(f"{stamp}|{machine_room}|{cluster}|{probes.topic}|{rounded}\n")
    return "".join(out)
