"""mqadmin's text layouts for clusters and brokers (the Java spellings they share are in render.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.models import (
        BrokerInfo,
        BrokerRuntime,
        ClusterConfigs,
        ClusterList,
        ConfigValues,
        HARuntime,
    )

from cli.mqadmin.render import _first_number, fastjson, hashmap_order, human_time, jstr


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
    return fastjson(ordered(doc), 0)
