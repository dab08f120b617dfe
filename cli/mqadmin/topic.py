"""mqadmin's commands for topics: create, delete, permissions, routes, status, order configuration
and queue allocation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from cli.mqadmin import render, render_topic
from cli.mqadmin.args import (
    BROKER_OR_CLUSTER,
    TOPIC,
    Command,
    Values,
    attributes,
    broker_or_cluster,
    config_file,
    flag,
    flag_opt,
    integer,
    o,
    opt,
    req,
    targets,
)

if TYPE_CHECKING:
    from admin.service import AdminService

ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"


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
    cluster, broker = targets(v)
    try:
        await s.topic_route(topic)
    except NotFound:
        change = await s.topic_create(spec, cluster, broker)
    else:
        change = await s.topic_update(spec, cluster, broker)
    return render_topic.topic_change(change, by_cluster=broker is None)


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
    return render_topic.topic_list_clusters(rows)


async def topic_route(s: AdminService, v: Values) -> str:
    route = await s.topic_route(req(v, "topic"))
    return render_topic.topic_route_list(route) if flag(v, "list") else render_topic.topic_route_json(route)


async def topic_status(s: AdminService, v: Values) -> str:
    return render_topic.topic_status(await s.topic_status(req(v, "topic")))


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
        for cid in render.hashmap_order(plan)
    ]
    return '{"result":{' + ",".join(parts) + "}}\n"


async def update_topic_perm(s: AdminService, v: Values) -> str:
    cluster, broker = targets(v)
    if cluster is None and broker is None:
        raise BadInput("give -b brokerAddr or -c clusterName")
    changes = await s.topic_set_perm(req(v, "topic"), integer(v, "perm") or 0, cluster, broker)
    return render_topic.topic_perm_change(changes, by_broker=broker is not None)


async def update_topic_list(s: AdminService, v: Values) -> str:
    from admin.service.maintenance import load_topic_configs

    configs = load_topic_configs(config_file(v), req(v, "filename"))
    if not configs:
        return ""
    written = await s.topic_create_list(configs, *targets(v))
    return render_topic.batch_submitted(written, "topic")


COMMANDS: tuple[Command, ...] = (
    Command("updateTopic", "Update or create topic.", (
        *broker_or_cluster("create topic to which broker", "create topic to which cluster"),
        o("a", "attributes", "attribute(+a=b,+c=d,-e)"),
        TOPIC,
        o("r", "readQueueNums", "set read queue nums"),
        o("w", "writeQueueNums", "set write queue nums"),
        o("p", "perm", "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]"),
        o("o", "order", "set topic's order(true|false)"),
        o("u", "unit", "is unit topic (true|false)"),
        o("s", "hasUnitSub", "has unit sub (true|false)"),
    ), update_topic, one_of=BROKER_OR_CLUSTER),
    Command("updateTopicList", "create or update topic in batch", (
        *broker_or_cluster("create topic to which broker", "create topic to which cluster"),
        o("f", "filename", "Path to a file with list of org.apache.rocketmq.common.TopicConfig "
           "in json format", True),
    ), update_topic_list, one_of=BROKER_OR_CLUSTER),
    Command("deleteTopic", "Delete topic from broker and NameServer.", (
        TOPIC, o("c", "clusterName", "delete topic from which cluster", True),
    ), delete_topic),
    Command("updateTopicPerm", "Update topic perm.", (
        o("b", "brokerAddr", "create topic to which broker"),
        o("c", "clusterName", "create topic to which cluster"),
        TOPIC,
        o("p", "perm", "set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]", True),
    ), update_topic_perm),
    Command("topicRoute", "Examine topic route info.", (
        TOPIC, flag_opt("l", "list", "Use list format to print data"),
    ), topic_route),
    Command("topicStatus", "Examine topic Status info.", (
        TOPIC, o("c", "cluster", "cluster name or lmq parent topic, lmq is used to find the route."),
    ), topic_status),
    Command("topicClusterList", "Get cluster info for topic.", (TOPIC,), topic_cluster_list),
    Command("topicList", "Fetch all topic list from name server.", (
        flag_opt("c", "clusterModel", "clusterModel"),
    ), topic_list),
    Command("updateOrderConf", "Create or update or delete order conf.", (
        TOPIC,
        o("v", "orderConf", "set order conf [eg. brokerName1:num;brokerName2:num]"),
        o("m", "method", "option type [eg. put|get|delete", True),
    ), update_order_conf),
    Command("allocateMQ", "Allocate MQ.", (TOPIC, o("i", "ipList", "ipList", True)), allocate_mq),
)  # fmt: skip
