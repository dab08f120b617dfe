"""mqadmin's commands for clusters, brokers and NameServers: lists, status, HA, configs, KV configs,
write permission and stats."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import NotFound
from cli.mqadmin import render_cluster, render_message
from cli.mqadmin.args import (
    BROKER_OR_CLUSTER,
    Command,
    Handler,
    Values,
    broker_or_cluster,
    cluster_or_broker,
    every,
    flag,
    flag_opt,
    integer,
    now_ms,
    o,
    opt,
    req,
    targets,
)

if TYPE_CHECKING:
    from admin.service import AdminService


async def cluster_list(s: AdminService, v: Values) -> str:
    cluster = opt(v, "clusterName")

    async def one_round() -> str:
        listing = await s.cluster_list(cluster)
        return (
            render_cluster.cluster_list_more(listing)
            if flag(v, "moreStats")
            else render_cluster.cluster_list(listing, now_ms())
        )

    return await every(integer(v, "interval"), one_round)


async def broker_status(s: AdminService, v: Values) -> str:
    from admin.models import BrokerRuntime

    broker = opt(v, "brokerAddr")
    if broker is not None:
        return render_cluster.broker_status(await s.broker_runtime(broker))
    listing = await s.cluster_list(req(v, "clusterName"))
    return render_cluster.broker_status_cluster(
        [BrokerRuntime(b.address, b.runtime) for b in listing.brokers if b.reachable]
    )


async def ha_status(s: AdminService, v: Values) -> str:
    cluster, broker = targets(v)

    async def one_round() -> str:
        return render_cluster.ha_status(await s.broker_ha_runtime(cluster, broker))

    return await every(integer(v, "interval"), one_round)


async def get_broker_config(s: AdminService, v: Values) -> str:
    broker = opt(v, "brokerAddr")
    if broker is not None:
        return render_cluster.config_values(await s.broker_config_get(broker), broker)
    cluster = opt(v, "clusterName")
    if cluster is None:
        return ""
    brokers = (await s.cluster_list(cluster)).brokers
    masters = {b.broker_name: b.address for b in brokers if b.broker_id == 0}
    out = []
    for b in sorted(brokers, key=lambda b: (b.broker_name, b.broker_id)):
        master = masters.get(b.broker_name)
        title = f"Master: {b.address}" if b.broker_id == 0 else f"My Master: {master}=====Slave: {b.address}"
        out.append(render_cluster.config_values(await s.broker_config_get(b.address), title))
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
    return "".join(render_cluster.config_values(c, c.address) for c in configs.servers)


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
    return render_message.stats_all(rows)


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
    return render_message.broker_consume_stats(mine, integer(v, "level", 0) or 0)


COMMANDS: tuple[Command, ...] = (
    Command("updateBrokerConfig", "Update broker's config.", (
        o("b", "brokerAddr", "update which broker"),
        o("c", "clusterName", "update which cluster"),
        o("a", "updateAllBroker", "update all brokers include slave"),
        o("k", "key", "config key", True),
        o("v", "value", "config value", True),
    ), update_broker_config),
    Command("brokerStatus", "Fetch broker runtime status data.", (
        *broker_or_cluster("Broker address", "which cluster"),
    ), broker_status, one_of=BROKER_OR_CLUSTER),
    Command("haStatus", "Fetch ha runtime status data.", (
        *cluster_or_broker("which cluster", "which broker to fetch"),
        o("i", "interval", "the interval(second) of get info"),
    ), ha_status, one_of=BROKER_OR_CLUSTER),
    Command("brokerConsumeStats", "Fetch broker consume stats data.", (
        o("b", "brokerAddr", "Broker address", True),
        o("t", "timeoutMillis", "request timeout Millis"),
        o("l", "level", "threshold of print diff"),
        o("o", "order", "order topic"),
    ), broker_consume_stats),
    Command("clusterList", "List cluster infos.", (
        flag_opt("m", "moreStats", "Print more stats"),
        o("i", "interval", "specify intervals numbers, it is in seconds"),
        o("c", "clusterName", "which cluster"),
    ), cluster_list),
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
    Command("statsAll", "Topic and Consumer tps stats.", (
        flag_opt("a", "activeTopic", "print active topic only"),
        o("t", "topic", "print select topic only"),
    ), stats_all),
    Command("getNamesrvConfig", "Get configs of name server.", (), get_namesrv_config),
    Command("updateNamesrvConfig", "Update configs of name server.", (
        o("k", "key", "config key", True), o("v", "value", "config value", True),
    ), update_namesrv_config),
    Command("getBrokerConfig", "Get broker config by cluster or special broker.", (
        o("b", "brokerAddr", "get which broker"), o("c", "clusterName", "get which cluster"),
    ), get_broker_config),
)  # fmt: skip
