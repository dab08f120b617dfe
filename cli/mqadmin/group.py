"""mqadmin's commands for subscription groups and their consumers: create, delete, progress,
connections, offsets and export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from cli.mqadmin import render, render_cluster, render_group, render_message, render_topic
from cli.mqadmin.args import (
    BROKER_OR_CLUSTER,
    CLUSTER_LMQ,
    EXPORT_DIR,
    TOPIC,
    Command,
    Values,
    boolean,
    broker_or_cluster,
    cluster_or_broker,
    config_file,
    flag,
    flag_opt,
    integer,
    java_time,
    now_ms,
    o,
    opt,
    req,
    targets,
    write_export,
)

if TYPE_CHECKING:
    from admin.service import AdminService

# the topic and group of the offset commands (cloneGroupOffset, resetOffsetByTime, skipAccumulatedMessage)
_SET_TOPIC = o("t", "topic", "set the topic", True)
_SET_GROUP = o("g", "group", "set the consumer group", True)


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
    cluster, broker = targets(v)
    try:
        change = await s.group_update(spec, cluster, broker)
    except NotFound:
        change = await s.group_create(spec, cluster, broker)
    c = change.config
    lines = [f"create subscription group to {a} success." for a in change.addresses]
    config = (
        f"SubscriptionGroupConfig [groupName={change.group}, consumeEnable={render.jstr(c.consume_enable)}, "
        f"consumeFromMinEnable={render.jstr(c.consume_from_min_enable)}, "
        f"consumeBroadcastEnable={render.jstr(c.consume_broadcast_enable)}, "
        f"consumeMessageOrderly={render.jstr(c.consume_message_orderly)}, "
        f"retryQueueNums={c.retry_queue_nums}, "
        f"retryMaxTimes={c.retry_max_times}, brokerId={c.broker_id}, "
        f"whichBrokerWhenConsumeSlowly={c.which_broker_when_consume_slowly}, "
        f"notifyConsumerIdsChangedEnable={render.jstr(c.notify_consumer_ids_changed_enable)}, "
        f"groupSysFlag={c.group_sys_flag}, consumeTimeoutMinute={c.consume_timeout_minute}, "
        f"attributes={render.java_map(c.attributes)}]"
    )
    return "\n".join(lines) + "\n" + config


async def delete_sub_group(s: AdminService, v: Values) -> str:
    group = req(v, "groupName")
    cluster, broker = targets(v)
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
            return render_group.consumer_progress(await lag)
        clients = s.group_clients(group)  # who owns each queue, as its client reports
        done, owners = await asyncio.gather(lag, clients)
        return render_group.consumer_progress(done, owners.queue_owner_ips())
    # every group, offline ones too (Java lists only groups with a retry topic, so never-started ones
    # are missing there)
    return render_group.consumer_progress_groups((p.connections, p.lag) for p in await s.group_progress())


async def consumer_connection(s: AdminService, v: Values) -> str:
    from admin.errors import OperationFailed

    group = req(v, "consumerGroup")
    conn = await s.group_connections(group)
    if not conn.online:  # Java's examineConsumerConnectionInfo fails with the broker's code
        raise OperationFailed(f"CODE: 206 DESC: the consumer group[{group}] not online")
    return render_group.consumer_connection(conn)


async def consumer_status(s: AdminService, v: Values) -> str:
    group = req(v, "consumerGroup")
    jstack = flag(v, "jstack")
    client_id = opt(v, "clientId")
    if client_id is not None:
        (client,) = (await s.group_clients(group, client_id, jstack)).clients
        return render_message.consumer_running_info(client)
    result = await s.group_clients(group, jstack=jstack, broker=opt(v, "brokerAddr"))
    now = now_ms()
    out = [render_message.consumer_status_header()]
    index = 1
    for client in result.clients:
        if client.error is not None:
            sys.stderr.write(f"{client.client_id}: {client.error}\n")
            continue
        path = Path(str(now)) / client.client_id  # where Java writes it: relative to the working directory
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_message.consumer_running_info(client), encoding="utf-8")
        out.append(render_message.consumer_status_row(index, client, str(path)))
        index += 1
    out.append(render_message.consumer_status_analysis(result))
    return "".join(out)


async def producer_connection(s: AdminService, v: Values) -> str:
    return render_group.producer_connection(
        await s.producer_connections(req(v, "producerGroup"), req(v, "topic"))
    )


async def producer(s: AdminService, v: Values) -> str:
    return render_group.producer_table((await s.producer_table(req(v, "broker"))).groups)


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
    return render_group.offset_reset(reset, stamp_text)


async def clone_group_offset(s: AdminService, v: Values) -> str:
    src, dst, topic = req(v, "srcGroup"), req(v, "destGroup"), req(v, "topic")
    await s.group_clone_offsets(src, dst, topic)
    return f"clone group offset success. srcGroup[{src}], destGroup=[{dst}], topic[{topic}]"


async def update_sub_group_list(s: AdminService, v: Values) -> str:
    from admin.service.maintenance import load_group_configs

    configs = load_group_configs(config_file(v), req(v, "filename"))
    if not configs:
        return ""
    broker = opt(v, "brokerAddr")
    targets = await s.group_create_list(configs, opt(v, "clusterName"), broker)
    return render_topic.batch_submitted(targets, "group" if broker is not None else "subscription group")


async def export_metadata(s: AdminService, v: Values) -> str:
    """Java's ``exportMetadata``: a cluster's tables with queue numbers summed over its masters (one
    broker's as they are), to ``<filePath>/topic.json``, ``subscriptionGroup.json`` or ``metadata.json``."""
    import json

    from admin.metadata_file import GROUPS_KEY, TOPICS_KEY

    cluster, broker = targets(v)
    doc = await s.metadata_export(cluster, broker, flag(v, "specialTopic"), summed=broker is None)
    if flag(v, "topic"):
        name, keep = "topic.json", {TOPICS_KEY}
    elif flag(v, "subscriptionGroup"):
        name, keep = "subscriptionGroup.json", {GROUPS_KEY}
    else:
        name, keep = "metadata.json", {TOPICS_KEY, GROUPS_KEY}
    path = Path(opt(v, "filePath") or EXPORT_DIR) / name
    body = {k: value for k, value in doc.items() if k in keep or k == "exportTime"}
    write_export(path, json.dumps(body, indent=2))
    return f"export {path} success\n"


async def export_configs(s: AdminService, v: Values) -> str:
    """Java's ``exportConfigs``: chosen settings of each master and the cluster's size to
    ``<filePath>/configs.json``; like Java it prints ``export … success`` without a newline."""
    configs = await s.cluster_configs(req(v, "clusterName"))
    path = Path(opt(v, "filePath") or EXPORT_DIR) / "configs.json"
    write_export(path, render_cluster.configs_json(configs))
    return f"export {path} success"


async def get_consumer_config(s: AdminService, v: Values) -> str:
    return render_group.consumer_config(await s.group_config_get(req(v, "groupName")))


async def skip_accumulated_message(s: AdminService, v: Values) -> str:
    from admin.models import ResetKind, ResetTarget

    reset = await s.group_reset_offset(req(v, "group"), ResetTarget(ResetKind.LATEST), req(v, "topic"))
    return render_group.offset_table(reset)


COMMANDS: tuple[Command, ...] = (
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
        *broker_or_cluster("create groups to which broker", "create groups to which cluster"),
        o("f", "filename", "Path to a file with a list of "
           "org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig in json format", True),
    ), update_sub_group_list, one_of=BROKER_OR_CLUSTER),
    Command("deleteSubGroup", "Delete subscription group from broker.", (
        o("b", "brokerAddr", "delete subscription group from which broker"),
        o("c", "clusterName", "delete subscription group from which cluster"),
        o("g", "groupName", "subscription group name", True),
        o("r", "removeOffset", "remove offset"),
    ), delete_sub_group),
    Command("producerConnection", "Query producer's socket connection and client version.", (
        o("g", "producerGroup", "producer group name", True), TOPIC,
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
        CLUSTER_LMQ,
    ), consumer_progress),
    Command("cloneGroupOffset", "Clone offset from other group.", (
        o("s", "srcGroup", "set source consumer group", True),
        o("d", "destGroup", "set destination consumer group", True),
        _SET_TOPIC,
        o("o", "offline", "the group or the topic is offline"),
    ), clone_group_offset),
    Command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", (
        _SET_GROUP,
        _SET_TOPIC,
        o("s", "timestamp", "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", True),
        o("f", "force", "set the force rollback by timestamp switch[true|false]. Deprecated."),
        o("b", "broker", "broker addr"),
        o("q", "queue", "queue id"),
        o("o", "offset", "Expect queue offset, not support old version broker"),
        CLUSTER_LMQ,
    ), reset_offset_by_time),
    Command("skipAccumulatedMessage", "Skip all messages that are accumulated (not consumed) currently.", (
        _SET_GROUP,
        _SET_TOPIC,
        o("f", "force", "set the force rollback by timestamp switch[true|false]"),
        CLUSTER_LMQ,
    ), skip_accumulated_message),
    Command("exportMetadata", "Export metadata.", (
        *cluster_or_broker("choose a cluster to export", "choose a broker to export"),
        o("f", "filePath", "export metadata.json path | default /tmp/rocketmq/export"),
        flag_opt("t", "topic", "only export topic metadata"),
        flag_opt("g", "subscriptionGroup", "only export subscriptionGroup metadata"),
        flag_opt("s", "specialTopic", "need retryTopic and dlqTopic"),
    ), export_metadata, one_of=BROKER_OR_CLUSTER),
    Command("exportConfigs", "Export configs.", (
        o("c", "clusterName", "choose a cluster to export", True),
        o("f", "filePath", "export configs.json path | default /tmp/rocketmq/export"),
    ), export_configs),
    Command("getConsumerConfig", "Get consumer config by subscription group name.", (
        o("g", "groupName", "subscription group name", True),
    ), get_consumer_config),
)  # fmt: skip
