"""``rmq timer``: pending timer (delayed) messages: ``list`` by topic and due time, ``cancel`` one by
message id or key (no recall handle needed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.connect import (
    Conn,
    TopicArg,
    TopicOpt,
    YesOpt,
    confirm,
    connected,
)
from cli.output import Section, Table, ms_time

if TYPE_CHECKING:
    from admin.models import TimerCancelReport, TimerEntry, TimerList

app = typer.Typer(help="Pending timer (delayed) messages: list and cancel them.", no_args_is_help=True)

BrokerOpt = Annotated[
    str | None, typer.Option("-b", "--broker", metavar="ADDR", help="Only this broker (its address).")
]
_COLUMNS = ["due", "topic", "queue", "msg id", "keys", "tags", "size", "broker"]


def _rows(entries: list[TimerEntry]) -> list[tuple[object, ...]]:
    return [
        (ms_time(e.deliver_timestamp), e.topic, e.queue_id, e.msg_id, e.keys, e.tags, e.body_size, e.broker)
        for e in entries
    ]


@app.command("list")
@connected
def list_(
    conn: Conn,
    topic: TopicOpt = None,
    begin: Annotated[
        str | None,
        typer.Option("--from", metavar="TIME", help="Due at or after (epoch ms, ISO 8601, -1h, +1h)."),
    ] = None,
    end: Annotated[str | None, typer.Option("--to", metavar="TIME", help="Due at or before.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-l", help="At most this many timers.")] = 100,
    broker: BrokerOpt = None,
) -> None:
    """Pending timer messages, soonest first."""
    from admin.timeparse import parse_time

    begin_ms = parse_time(begin) if begin else 0
    end_ms = parse_time(end) if end else 2**62
    conn.show(lambda s: s.timer_list(topic, broker, begin_ms, end_ms, limit), list_sections)


def list_sections(result: TimerList) -> list[Section]:
    title = f"{len(result.timers)} pending timer(s)" + (" (more not shown)" if result.more else "")
    if result.not_yet_listed:
        title += f", {result.not_yet_listed} just stored and not yet listed"
    return [Table(_COLUMNS, _rows(result.timers), title=title)]


@app.command("cancel")
@connected
def cancel(
    conn: Conn,
    topic: TopicArg,
    msg_id: Annotated[
        str | None, typer.Option("--id", "-i", metavar="MSGID", help="The message id (UNIQ_KEY).")
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", "-k", metavar="KEY", help="Every timer message with this key.")
    ] = None,
    broker: BrokerOpt = None,
    yes: YesOpt = False,
) -> None:
    """Cancel a pending timer message of TOPIC: it will not be delivered."""
    from admin.errors import BadInput

    if (msg_id is None) == (key is None):
        raise BadInput("give --id MSGID or --key KEY")
    confirm(
        f"cancel the timer message(s) of {topic} with {'id ' + msg_id if msg_id else 'key ' + (key or '')}",
        yes,
    )
    conn.emit(conn.run(lambda s: s.timer_cancel(topic, msg_id, key, broker)), cancel_sections)


def cancel_sections(result: TimerCancelReport) -> list[Section]:
    return [Table(_COLUMNS, _rows(result.cancelled), title=f"{len(result.cancelled)} cancelled")]
