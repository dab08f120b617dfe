"""mqadmin's text layouts for topics (the Java spellings they share are in render.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.models import (
        PermChange,
        TopicChange,
        TopicRoute,
        TopicStatus,
    )
    from broker.protocol.bodies import TopicConfig

from cli.mqadmin.render import ROUTE_RULE, fastjson, human_time, java_double, java_map, jstr


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
    return fastjson(data, 0) + "\n"


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
