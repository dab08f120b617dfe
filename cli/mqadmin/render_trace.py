"""mqadmin's text layout of ``queryMsgTraceById`` (QueryMsgTraceByIdSubCommand.printMessageTrace).

Each Pub record under its own heading, then one block per consumer group (in the order of Java's
HashMap of groups) with a line per SubAfter record; other record types are not printed, as in Java.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cli.mqadmin.render import hashmap_order, plain_time

if TYPE_CHECKING:
    from admin.models.traces import MessageTrace, TraceEntry


def _line(*cells: object) -> str:
    a, b, c, d, e, f = (str(x) for x in cells)
    return f"{a:<10} {b:<20} {c:<20} {d:<20} {e:<10} {f:<10}\n"


def _row(kind: str, entry: TraceEntry) -> str:
    status = "success" if entry.success else "failed"
    return _line(
        kind, entry.group, entry.client_host, plain_time(entry.timestamp), f"{entry.cost_ms}ms", status
    )


def query_msg_trace(trace: MessageTrace) -> str:
    out: list[str] = []
    by_group: dict[str, list[TraceEntry]] = {}
    for entry in trace.entries:
        if entry.type == "Pub":
            out.append(_line("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"))
            out.append(_row("Pub", entry))
            out.append("\n")
        elif entry.type == "SubAfter":
            by_group.setdefault(entry.group, []).append(entry)
    for group in hashmap_order(by_group):
        out.append(_line("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"))
        out += [_row("Sub", entry) for entry in by_group[group]]
        out.append("\n")
    return "".join(out)
