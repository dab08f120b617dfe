"""mqadmin's text layouts for measured sends (the Java spellings they share are in render.py)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.models import (
        SendProbes,
    )
    from broker.client.message import SendResult

from cli.mqadmin.render import java_fixed, jstr, message_queue


def send_result_text(r: SendResult) -> str:
    """Java's ``SendResult.toString``."""
    mq = r.message_queue
    return (
        f"SendResult [sendStatus={r.status.name}, msgId={r.msg_id}, offsetMsgId={r.offset_msg_id}, "
        f"messageQueue={message_queue(mq.topic, mq.brokerName, mq.queueId)}, queueOffset={r.queue_offset}, "
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
