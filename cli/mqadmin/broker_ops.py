"""mqadmin commands for per-broker operations: setConsumeMode (how a group reads a topic: PULL or POP),
setCommitLogReadAheadMode (the kernel's read-ahead of CommitLog files) and exportMetrics (a cluster's
load figures as a JSON file)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from admin.errors import BadInput
from cli.mqadmin import render_broker
from cli.mqadmin.args import Command, Values, integer, o, opt, req, targets

if TYPE_CHECKING:
    from admin.service import AdminService

READ_AHEAD_MODES = {"0": False, "1": True}  # the -m value -> read-ahead off (MADV_RANDOM)


def _usage(name: str) -> str:
    from cli.mqadmin import usage

    return usage(next(c for c in COMMANDS if c.name == name))


async def set_consume_mode(s: AdminService, v: Values) -> str:
    """Java's ``setConsumeMode``: the mode on ``-b`` or every master of ``-c``; neither prints help."""
    topic, group, mode = req(v, "topicName"), req(v, "groupName"), req(v, "mode")
    if mode not in ("PULL", "POP"):  # MessageRequestMode.valueOf: exact names
        raise BadInput(f"--mode: {mode!r} is not a consume mode (PULL or POP)")
    share = integer(v, "popShareQueueNum", 0) or 0
    cluster, broker = targets(v)
    if broker is None and cluster is None:
        return _usage("setConsumeMode")
    return render_broker.consume_mode_set(
        await s.group_consume_mode_set(topic, group, mode == "POP", share, cluster, broker)
    )


async def set_read_ahead_mode(s: AdminService, v: Values) -> str:
    """Java's ``setCommitLogReadAheadMode``: on ``-b``, else every master and slave of ``-c``."""
    random = READ_AHEAD_MODES.get(req(v, "commitLogReadAheadMode"))
    if random is None:
        return "set the read mode error; 0 is default, 1 random read\n"  # and exit 0, as Java does
    cluster, broker = targets(v)
    if broker is None and cluster is None:
        return ""
    return render_broker.read_ahead(
        await s.broker_set_read_ahead(random, cluster, broker), by_cluster=broker is None
    )


async def export_metrics(s: AdminService, v: Values) -> str:
    """Java's ``exportMetrics``: each master's load, settings and client versions, and the cluster's
    sums, to ``<filePath>/metrics.json``; prints ``export … success`` without a newline, as Java does.

    The half-message and delayed-message figures come from those topics' queues (put rate of the
    last minute, messages stored in the last 24 hours), not from VIEW_BROKER_STATS_DATA, which
    rmqkit brokers do not serve. ``messageAverageSize`` is the broker's putMessageAverageSize, else its
    putMessageSizeTotal / putMessageTimesTotal (what RocketMQ computes it from). ``cpuNum`` and
    ``totalMemKBytes`` appear only when a broker reports them (rmqkit brokers report neither)."""
    from cli.mqadmin.args import EXPORT_DIR, write_export

    metrics = await s.cluster_metrics(req(v, "clusterName"))
    path = Path(opt(v, "filePath") or EXPORT_DIR) / "metrics.json"
    write_export(path, render_broker.metrics_json(metrics))
    return f"export {path} success"


COMMANDS: tuple[Command, ...] = (
    Command("setConsumeMode", "Set consume message mode. pull/pop etc.", (
        o("b", "brokerAddr", "create subscription group to which broker"),
        o("c", "clusterName", "create subscription group to which cluster"),
        o("t", "topicName", "topic name", True),
        o("g", "groupName", "consumer group name", True),
        o("m", "mode", "consume mode. PULL/POP", True),
        o("q", "popShareQueueNum", "num of queue which share in pop mode"),
    ), set_consume_mode),
    Command("setCommitLogReadAheadMode", "Set read ahead mode for all commitlog files.", (
        o("b", "brokerAddr", "set which broker"),
        o("c", "clusterName", "set which cluster"),
        o("m", "commitLogReadAheadMode",
          "set the CommitLog read ahead mode; 0 is default, 1 random read", True),
    ), set_read_ahead_mode),
    Command("exportMetrics", "Export metrics.", (
        o("c", "clusterName", "choose a cluster to export", True),
        o("f", "filePath", "export metrics.json path | default /tmp/rocketmq/export"),
    ), export_metrics),
)  # fmt: skip
