"""mqadmin's text for the per-broker operations: setConsumeMode and setCommitLogReadAheadMode, laid
out as RocketMQ's SetConsumeModeSubCommand and CommitLogSetReadAheadSubCommand print them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.models.broker_ops import ConsumeModes, ReadAheadChanges


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
