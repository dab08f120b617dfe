"""mqadmin's text for the per-broker operations: setConsumeMode and setCommitLogReadAheadMode, laid
out as RocketMQ's SetConsumeModeSubCommand and CommitLogSetReadAheadSubCommand print them, and the
metrics.json ExportMetricsCommand writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from broker.protocol.codes import CURRENT_VERSION
from cli.mqadmin.render import fastjson, hashmap_order, java_double, version_desc

if TYPE_CHECKING:
    from admin.models.broker_ops import BrokerMetrics, ClusterMetrics, ConsumeModes, ReadAheadChanges


def consume_mode_set(result: ConsumeModes) -> str:
    """One ``success`` line per broker written to, then the mode set (Java prints no final newline)."""
    lines = "".join(f"set consume mode to {b.address} success.\n" for b in result.brokers)
    first = result.brokers[0] if result.brokers else None
    mode, share = (first.mode, first.pop_share_queue_num) if first is not None else ("PULL", 0)
    return (
        lines + f"topic[{result.topic}] group[{result.group}] consume mode[{mode}] popShareQueueNum[{share}]"
    )


def read_ahead(result: ReadAheadChanges, *, by_cluster: bool) -> str:
    """Per broker a banner (masters and their slaves told apart with ``-c``) and the broker's remark."""
    out = []
    for change in result.brokers:
        if not by_cluster:
            banner = f"============{change.address}============"
        elif change.master is None:
            banner = f"============Master: {change.address}============"
        else:
            banner = f"============My Master: {change.master}=====Slave: {change.address}============"
        out.append(f" {banner}\ncommitLog set readAhead mode rstStr{change.remark or 'null'}\n")
    return "".join(out)


def _hashmap(values: Mapping[str, object]) -> dict[str, object]:
    """A Java HashMap of ``values`` (inserted in this order) as fastjson writes it: in the map's
    iteration order, without the null values."""
    present = {k: v for k, v in values.items() if v is not None}
    return {k: present[k] for k in hashmap_order(present)}


def _broker_report(b: BrokerMetrics) -> dict[str, object]:
    clients = dict.fromkeys(f"{c.language}%{version_desc(c.version)}" for c in b.clients)
    quota = {
        "diskRatio": _hashmap(
            {
                "commitLogDiskRatio": b.commitlog_disk_ratio,
                "consumeQueueDiskRatio": b.consume_queue_disk_ratio,
            }
        ),
        "tps": _hashmap(
            {
                "normalInTps": b.normal_in_tps,
                "normalOutTps": b.normal_out_tps,
                "transInTps": b.trans_in_tps,
                "scheduleInTps": b.schedule_in_tps,
            }
        ),
        "oneDayNum": _hashmap(
            {
                "normalOneDayInNum": b.normal_one_day_in,
                "normalOneDayOutNum": b.normal_one_day_out,
                "transOneDayInNum": b.trans_one_day_in,
                "scheduleOneDayInNum": b.schedule_one_day_in,
            }
        ),
        "messageAverageSize": None if b.message_average_size is None else java_double(b.message_average_size),
        "topicSize": b.topics,
        "groupSize": b.groups,
    }
    return _hashmap(
        {
            "runtimeEnv": _hashmap({"cpuNum": b.cpu_num, "totalMemKBytes": b.total_mem_kbytes}),
            "runtimeQuota": _hashmap(quota),
            "runtimeVersion": _hashmap(
                {"rocketmqVersion": version_desc(CURRENT_VERSION), "clientInfo": hashmap_order(clients)}
            ),
        }
    )


def metrics_json(metrics: ClusterMetrics) -> str:
    """``exportMetrics``' metrics.json: each master's report under its broker name and the cluster's
    sums, fastjson's pretty JSON of the Java tool's HashMaps, without a final newline."""
    t = metrics.totals
    total = {
        "totalTps": _hashmap(
            {
                "totalNormalInTps": t.normal_in_tps,
                "totalNormalOutTps": t.normal_out_tps,
                "totalTransInTps": t.trans_in_tps,
                "totalScheduleInTps": t.schedule_in_tps,
            }
        ),
        "totalOneDayNum": _hashmap(
            {
                "normalOneDayInNum": t.normal_one_day_in,
                "normalOneDayOutNum": t.normal_one_day_out,
                "transOneDayInNum": t.trans_one_day_in,
                "scheduleOneDayInNum": t.schedule_one_day_in,
            }
        ),
    }
    doc = {
        "evaluateReport": _hashmap({b.broker_name: _broker_report(b) for b in metrics.brokers}),
        "totalData": _hashmap(total),
    }
    return fastjson(_hashmap(doc), 0)
