"""``rmq message``: send, consume, pop, get, query, print, track, trace, deliver, resend."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from admin.timeparse import parse_time
from cli.connect import (
    Conn,
    TopicArg,
    connected,
    key_values,
)
from cli.message_view import message_fields, preview
from cli.output import Fields, ProgressBar, Section, Table, emit, ms_time

if TYPE_CHECKING:
    from admin.models import DirectDelivery, MessageRange, Messages, MessageTracks, SendReceipt
    from admin.models.traces import MessageTrace

app = typer.Typer(help="Send, consume, look up and print messages.", no_args_is_help=True)

TagsExprOpt = Annotated[
    str, typer.Option("-s", "--tags", metavar="EXPR", help="Tag filter: 'a || b' or '*'.")
]
BrokerNameOpt = Annotated[str | None, typer.Option("--broker-name", help="Only this broker (by name).")]
QueueOpt = Annotated[int | None, typer.Option("-q", "--queue", help="Only this queue id.")]
FromOpt = Annotated[int | None, typer.Option("--from", metavar="OFFSET", help="First queue offset.")]
ToOpt = Annotated[int | None, typer.Option("--to", metavar="OFFSET", help="Stop before this queue offset.")]
BeginOpt = Annotated[
    str | None, typer.Option("--begin", metavar="TIME", help="Stored at or after (epoch ms, ISO 8601, -1h).")
]
EndOpt = Annotated[str | None, typer.Option("--end", metavar="TIME", help="Stored at or before.")]
LimitOpt = Annotated[int, typer.Option("--limit", "-l", help="At most this many messages.")]
MsgIdArg = Annotated[
    str, typer.Argument(metavar="ID", help="Offset MessageId or UNIQ_KEY.", show_default=False)
]
UniqKeyTopicOpt = Annotated[
    str | None, typer.Option("-t", "--topic", metavar="TOPIC", help="Topic (needed for a UNIQ_KEY).")
]
_PROGRESS_MIN = 8  # queues


@app.command("send")
@connected
def send(
    conn: Conn,
    topic: TopicArg,
    body: Annotated[
        str | None, typer.Argument(help="Message body; '-' reads stdin.", show_default=False)
    ] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", help="Read the body from this file.")] = None,
    tags: Annotated[str | None, typer.Option("--tags", help="Tag.")] = None,
    keys: Annotated[list[str] | None, typer.Option("-k", "--key", help="Key (repeatable).")] = None,
    prop: Annotated[
        list[str] | None,
        typer.Option("-p", "--property", metavar="KEY=VALUE", help="User property (repeatable)."),
    ] = None,
    delay: Annotated[int, typer.Option("--delay", help="Delay level 1-18 (1s ... 2h); 0 = none.")] = 0,
    broker_name: BrokerNameOpt = None,
    queue: QueueOpt = None,
    trace: Annotated[
        bool, typer.Option("--trace", help="Also write its Pub trace record (see `rmq message trace`).")
    ] = False,
) -> None:
    """Send one message (SEND_MESSAGE_V2)."""
    from admin.errors import BadInput
    from admin.models import OutgoingMessage

    if (body is None) == (file is None):
        raise BadInput("give the body as an argument ('-' for stdin) or with --file")
    data = file.read_bytes() if file else sys.stdin.buffer.read() if body == "-" else (body or "").encode()
    msg = OutgoingMessage(
        topic, data, tags, keys or [], key_values(prop or [], "property"), delay, broker_name, queue
    )
    conn.emit(conn.run(lambda s: s.message_send(msg, trace)), _receipt_sections)


@app.command("consume")
@connected
def consume(
    conn: Conn,
    topic: TopicArg,
    count: Annotated[int, typer.Option("-c", "--count", help="At most this many messages.")] = 10,
    group: Annotated[
        str | None,
        typer.Option("-g", "--group", metavar="GROUP", help="Start at and commit this group's offsets."),
    ] = None,
    tags: TagsExprOpt = "*",
) -> None:
    """Pull messages: from each queue's first message, or from a group's offsets (then committed)."""
    conn.emit(conn.run(lambda s: s.message_consume(topic, count, group, tags)), messages_sections)


@app.command("pop")
@connected
def pop(
    conn: Conn,
    topic: TopicArg,
    group: Annotated[str, typer.Option("-g", "--group", metavar="GROUP", help="Consume as this group.")],
    count: Annotated[int, typer.Option("-c", "--count", help="At most this many messages.")] = 10,
    tags: TagsExprOpt = "*",
    invisible: Annotated[
        float,
        typer.Option("--invisible", metavar="SECONDS", help="How long unacked messages stay hidden."),
    ] = 30.0,
    no_ack: Annotated[
        bool, typer.Option("--no-ack", help="Leave them unacked: they come back after --invisible.")
    ] = False,
    wait: Annotated[
        float, typer.Option("--wait", metavar="SECONDS", min=0, help="Wait this long for a first message.")
    ] = 0.0,
) -> None:
    """POP messages as a group (RocketMQ 5 consumption: the broker keeps the group's progress) and
    ack them."""
    conn.emit(
        conn.run(lambda s: s.message_pop(topic, group, count, tags, invisible, not no_ack, wait)),
        messages_sections,
    )


@app.command("get")
@connected
def get(
    conn: Conn,
    msg_id: MsgIdArg,
    topic: UniqKeyTopicOpt = None,
) -> None:
    """One message by its MessageId (from the broker it names) or its UNIQ_KEY (through the index)."""
    conn.emit(conn.run(lambda s: s.message_get(msg_id, topic)), messages_sections)


@app.command("query")
@connected
def query(
    conn: Conn,
    topic: TopicArg,
    key: Annotated[str | None, typer.Option("-k", "--key", help="A KEYS entry.")] = None,
    unique_key: Annotated[str | None, typer.Option("-u", "--unique-key", help="A UNIQ_KEY.")] = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    max_num: Annotated[int, typer.Option("--max", help="At most this many messages.")] = 64,
) -> None:
    """Messages of a topic by key or unique key (through the IndexFile), newest first."""
    lo, hi = _window(begin, end)
    conn.emit(conn.run(lambda s: s.message_query(topic, key, unique_key, lo, hi, max_num)), messages_sections)


def _window(begin: str | None, end: str | None) -> tuple[int, int]:
    """--begin/--end as epoch ms; open ends reach the first and the last message."""
    from admin.service.messages import MAX_TIMESTAMP

    return (parse_time(begin) if begin else 0, parse_time(end) if end else MAX_TIMESTAMP)


@app.command("track")
@connected
def track(
    conn: Conn,
    msg_id: MsgIdArg,
    topic: UniqKeyTopicOpt = None,
) -> None:
    """Whether each group consuming the message's topic consumed it (mqadmin's message tracks)."""
    from admin.store_tools import message_to_dict

    result = conn.run(lambda s: s.message_track(msg_id, topic))
    document = {"message": message_to_dict(result.message), "tracks": result.tracks}
    emit(conn.fmt, document, lambda: _track_sections(result))


@app.command("trace")
@connected
def trace(
    conn: Conn,
    msg_id: Annotated[
        str,
        typer.Argument(
            metavar="ID",
            help="The message's UNIQ_KEY (the msgId its send returned) or offset MessageId.",
            show_default=False,
        ),
    ],
    trace_topic: Annotated[
        str | None,
        typer.Option("--trace-topic", metavar="TOPIC", help="Trace topic [default: RMQ_SYS_TRACE_TOPIC]."),
    ] = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    max_num: Annotated[int, typer.Option("--max", help="At most this many trace messages.")] = 64,
) -> None:
    """What traced clients recorded of a message: its send, each consumption, its transaction's end."""
    lo, hi = _window(begin, end)
    conn.emit(conn.run(lambda s: s.message_trace(msg_id, trace_topic, lo, hi, max_num)), _trace_sections)


@app.command("deliver")
@connected
def deliver(
    conn: Conn,
    msg_id: MsgIdArg,
    group: Annotated[str, typer.Option("-g", "--group", metavar="GROUP", help="The consumer group.")],
    client: Annotated[
        str, typer.Option("--client", metavar="ID", help="The online client (see 'rmq group connections').")
    ],
    topic: UniqKeyTopicOpt = None,
) -> None:
    """Hand one message to one online client's listener and show what it answered (mqadmin's
    consumeMessageDirectly): to try a fix, or to replay one message for one consumer. Nothing is
    committed; exit 1 when the listener did not succeed."""
    from admin.errors import OperationFailed

    result = conn.run(lambda s: s.message_deliver(msg_id, group, client, topic))
    conn.emit(result, _delivery_sections)
    if not result.ok:
        raise OperationFailed(f"the listener of {client} answered {result.result}: {result.remark or '-'}")


def _delivery_sections(d: DirectDelivery) -> list[Section]:
    return [
        Fields(
            [
                ("message", d.msg_id),
                ("topic", d.topic),
                ("group", d.group),
                ("client", d.client_id),
                ("result", d.result),
                ("remark", d.remark),
                ("spent", f"{d.spent_ms} ms"),
            ],
            title="Delivered",
        )
    ]


@app.command("resend")
@connected
def resend(
    conn: Conn,
    msg_id: MsgIdArg,
    topic: UniqKeyTopicOpt = None,
    to: Annotated[
        str | None, typer.Option("--to", metavar="TOPIC", help="Send to this topic instead of its own.")
    ] = None,
) -> None:
    """Send a copy of a message (body, tags, keys, user properties) to its topic or another."""
    conn.emit(conn.run(lambda s: s.message_resend(msg_id, topic, to)), _receipt_sections)


def _track_sections(result: MessageTracks) -> list[Section]:
    return [
        message_fields(result.message),
        Table(["group", "track", "detail"], [(t.group, t.track_type, t.detail) for t in result.tracks]),
    ]


def _trace_sections(result: MessageTrace) -> list[Section]:
    first = next((e for e in result.entries if e.type == "Pub"), None)
    summary: list[tuple[str, object]] = [
        ("msg id", result.msg_id),
        ("topic", result.topic),
        ("tags", first.tags if first else None),
        ("keys", first.keys if first else None),
        ("trace topic", result.trace_topic),
    ]
    if result.undecodable:
        summary.append(("undecodable trace messages", result.undecodable))
    rows = [
        (
            e.type,
            ms_time(e.timestamp),
            e.group,
            e.client_host,
            e.store_host,
            None if e.cost_ms is None else f"{e.cost_ms} ms",
            e.status,
            e.detail,
        )
        for e in result.entries
    ]
    columns = ["type", "time", "group", "client host", "store host", "cost", "status", "detail"]
    return [Fields(summary, title="Message trace"), Table(columns, rows)]


def message_range(
    broker_name: str | None,
    queue: int | None,
    from_offset: int | None,
    to_offset: int | None,
    begin: str | None,
    end: str | None,
    tags: str,
    limit: int,
) -> MessageRange:
    """The range options of ``message print`` and the browse commands."""
    from admin.models import MessageRange

    return MessageRange(
        broker_name,
        queue,
        from_offset,
        to_offset,
        parse_time(begin) if begin else None,
        parse_time(end) if end else None,
        tags,
        limit,
    )


@app.command("print")
@connected
def print_(
    conn: Conn,
    topic: TopicArg,
    broker_name: BrokerNameOpt = None,
    queue: QueueOpt = None,
    from_offset: FromOpt = None,
    to_offset: ToOpt = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    tags: TagsExprOpt = "*",
    limit: LimitOpt = 100,
) -> None:
    """Messages of a topic in queue order, within queue offsets or store times (nothing committed)."""
    rng = message_range(broker_name, queue, from_offset, to_offset, begin, end, tags, limit)
    with ProgressBar(_PROGRESS_MIN) as bar:
        result = conn.run(lambda s: s.message_print(topic, rng, bar))
    conn.emit(result, messages_sections)


# -- layouts for people ---------------------------------------------------------------------------
def _receipt_sections(r: SendReceipt) -> list[Section]:
    return [
        Fields(
            [
                ("status", r.status),
                ("topic", r.topic),
                ("broker", r.broker_name),
                ("queue id", r.queue_id),
                ("queue offset", r.queue_offset),
                ("msg id", r.msg_id),
                ("uniq key", r.uniq_key),
            ],
            title="Sent",
        )
    ]


def messages_sections(result: Messages) -> list[Section]:
    """One message in full, or a table of several."""
    messages = result.messages
    if len(messages) == 1:
        return [message_fields(messages[0])]
    return [
        Table(
            ["topic", "queue", "offset", "uniq key", "tags", "keys", "stored", "body"],
            [
                (
                    m.topic,
                    m.queue_id,
                    m.queue_offset,
                    m.uniq_key,
                    m.tags,
                    " ".join(m.keys) or None,
                    ms_time(m.store_timestamp),
                    preview(m.body),
                )
                for m in messages
            ],
        )
    ]
