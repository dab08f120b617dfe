"""mqadmin's commands for measured sends: sendMsgStatus, checkMsgSendRT, clusterRT."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admin.errors import NotFound
from cli.mqadmin import render_send_rt
from cli.mqadmin.args import (
    Command,
    Values,
    boolean,
    every,
    integer,
    non_negative,
    now_ms,
    o,
    opt,
    req,
)

if TYPE_CHECKING:
    from admin.service import AdminService


def _hello(size: int) -> bytes:
    """sendMsgStatus' body: ``hello jodie`` once per started 11 bytes of ``size``."""
    return b"hello jodie" * -(-size // 11)


async def send_msg_status(s: AdminService, v: Values) -> str:
    """Send to the topic named after the broker (every broker serves one), after one unmeasured send;
    a failed send ends the command, as in Java."""
    broker = req(v, "brokerName")
    size, count = non_negative(v, "messageSize", 128), non_negative(v, "count", 50)
    if not any(broker in names for names in (await s.cluster_broker_names()).values()):
        raise NotFound(f"broker {broker} not found")
    (probes,) = await s.send_probes(
        [broker], count, _hello(size), group="PID_SMSC", instance_name=f"PID_SMSC_{now_ms()}",
        warmup=_hello(16), strict=True,
    )  # fmt: skip
    return render_send_rt.send_msg_status(probes)


async def check_msg_send_rt(s: AdminService, v: Values) -> str:
    """The i-th message goes to queue ``i % queues`` of the topic; failures are rows, not errors."""
    amount, size = non_negative(v, "amount", 100), non_negative(v, "size", 128)
    (probes,) = await s.send_probes([req(v, "topic")], amount, b"a" * size, group=str(now_ms()), spread=True)
    return render_send_rt.send_rt(probes)


async def cluster_rt(s: AdminService, v: Values) -> str:
    """Per broker of a cluster (or of every cluster), ``amount`` sends to the topic named after it."""
    amount, size = non_negative(v, "amount", 100), non_negative(v, "size", 128)
    tlog = boolean(v, "print log")
    room = opt(v, "machine room") or "noname"
    clusters = await s.cluster_broker_names(opt(v, "cluster"))
    pairs = [(c, name) for c, names in clusters.items() for name in names]
    group = str(now_ms())

    async def one_round() -> str:
        results = await s.send_probes([name for _, name in pairs], amount, b"a" * size, group=group)
        rows = [(c, p) for (c, _), p in zip(pairs, results, strict=True)]
        return render_send_rt.cluster_rt(rows, tlog, room, now_ms())

    return await every(integer(v, "interval"), one_round, "" if tlog else render_send_rt.cluster_rt_header())


COMMANDS: tuple[Command, ...] = (
    Command("sendMsgStatus", "Send msg to broker.", (
        o("b", "brokerName", "Broker Name e.g. clusterName_brokerName as DefaultCluster_broker-a", True),
        o("s", "messageSize", "Message Size, Default: 128"),
        o("c", "count", "send message count, Default: 50"),
    ), send_msg_status),
    Command("clusterRT", "List All clusters Message Send RT.", (
        o("a", "amount", "message amount | default 100"),
        o("s", "size", "message size | default 128 Byte"),
        o("c", "cluster", "cluster name | default display all cluster"),
        o("p", "print log", "print as tlog | default false"),
        o("m", "machine room", "machine room name | default noname"),
        o("i", "interval", "print interval | default 10 seconds"),
    ), cluster_rt),
    Command("checkMsgSendRT", "Check message send response time.", (
        o("t", "topic", "topic name", True),
        o("a", "amount", "message amount | default 100"),
        o("s", "size", "message size | default 128 Byte"),
    ), check_msg_send_rt),
)  # fmt: skip
