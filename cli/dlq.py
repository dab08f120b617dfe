"""``rmq dlq``: dead-letter topics (%DLQ%group): ``list`` and ``browse`` (shared with ``rmq retry``, built
by :func:`special_topic_app`), ``resend`` back to the failing group (or the original topics),
``export`` to JSON lines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from cli.connect import (
    Conn,
    GroupArg,
    NamesrvOpt,
    ProfileOpt,
    TimeoutOpt,
    YesOpt,
    confirm,
    connect,
    connected,
)
from cli.message import (
    BeginOpt,
    BrokerNameOpt,
    EndOpt,
    FromOpt,
    LimitOpt,
    QueueOpt,
    TagsExprOpt,
    ToOpt,
    message_range,
    messages_sections,
)
from cli.output import ProgressBar, Section, Table, ms_time

if TYPE_CHECKING:
    from admin.models import SpecialTopics
    from broker.client.dlq_ops import ResendReport


def special_topic_app(kind: Literal["dlq", "retry"], what: str) -> typer.Typer:
    """``list`` and ``browse`` for the groups' dead-letter or retry topics (``what`` names them)."""
    app = typer.Typer(
        help=f"{what.capitalize()} topics: which groups have them, and their messages.", no_args_is_help=True
    )

    @app.command("list", help=f"Groups with a {what} topic and how many messages it holds.")
    @connected
    def list_(
        conn: Conn,
    ) -> None:
        conn.show(lambda s: s.dlq_list() if kind == "dlq" else s.retry_list(), special_sections)

    @app.command("browse", help=f"The messages in a group's {what} topic.")
    @connected
    def browse(
        conn: Conn,
        group: GroupArg,
        broker_name: BrokerNameOpt = None,
        queue: QueueOpt = None,
        from_offset: FromOpt = None,
        to_offset: ToOpt = None,
        begin: BeginOpt = None,
        end: EndOpt = None,
        tags: TagsExprOpt = "*",
        limit: LimitOpt = 100,
    ) -> None:
        rng = message_range(broker_name, queue, from_offset, to_offset, begin, end, tags, limit)
        with ProgressBar() as bar:
            if kind == "dlq":
                result = conn.run(lambda s: s.dlq_browse(group, rng, bar))
            else:
                result = conn.run(lambda s: s.retry_browse(group, rng, bar))
        conn.emit(result, messages_sections)

    return app


def special_sections(result: SpecialTopics) -> list[Section]:
    return [
        Table(
            ["group", "topic", "messages", "brokers", "last updated"],
            [
                (t.group, t.topic, t.messages, ", ".join(t.brokers), ms_time(t.last_updated))
                for t in result.topics
            ],
        )
    ]


app = special_topic_app("dlq", "dead-letter")


@app.command("resend")
@connected
def resend(
    conn: Conn,
    group: GroupArg,
    offset: Annotated[
        list[int] | None,
        typer.Option("--offset", metavar="N", help="Queue offset in %DLQ%GROUP to resend (repeatable)."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Resend every dead letter of the group.")] = False,
    broker: Annotated[
        str | None, typer.Option("-b", "--broker", metavar="ADDR", help="The broker the offsets belong to.")
    ] = None,
    to_topic: Annotated[
        bool,
        typer.Option(
            "--to-topic",
            help="Send to the original topic instead: every group consuming it gets the message again.",
        ),
    ] = False,
    again: Annotated[
        bool, typer.Option("--again", help="Also resend the dead letters resent before.")
    ] = False,
    rate: Annotated[
        float | None, typer.Option("--rate", metavar="N", help="At most N messages per second.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what would be resent.")] = False,
    yes: YesOpt = False,
) -> None:
    """Send dead letters back to the group that failed them, and to no other group: through the
    group's retry topic, as RocketMQ redelivers, with the original topic restored for its listener.
    Dead letters resent before are skipped (--again resends them)."""
    import sys

    from admin.errors import BadInput

    if bool(offset) == all_:
        raise BadInput("give --offset N (repeatable) or --all")
    negative = [o for o in offset or [] if o < 0]
    if negative:
        raise BadInput(f"--offset must be a queue offset (0 or more), not {negative[0]}")
    offsets = None if all_ else offset

    def run(dry: bool, bar: ProgressBar | None = None) -> ResendReport:
        return conn.run(
            lambda s: s.dlq_resend(
                group, offsets, broker, dry, bar, to_topic=to_topic, again=again, rate=rate
            )
        )

    preview = run(True) if to_topic else None  # to say who else gets them before anything is sent
    if preview is not None and preview.other_groups:
        others = preview.other_groups
        sys.stderr.write(
            f"warning: --to-topic also delivers to {len(others)} other group(s): {', '.join(others)}\n"
        )
    if dry_run and preview is not None:
        report = preview
    else:
        if not dry_run:
            confirm(f"resend {'all' if all_ else len(offset or [])} dead letter(s) of {group}", yes)
        with ProgressBar() as bar:
            report = run(dry_run, bar)
    conn.emit(report, resend_sections)
    if report.missing or report.failed:
        from admin.errors import OperationFailed

        raise OperationFailed(
            f"{len(report.failed)} failed, {len(report.missing)} offset(s) not in {report.dlq_topic}"
        )


def resend_sections(report: ResendReport) -> list[Section]:
    verb = "would resend" if report.dry_run else "resent"
    rows = (
        [
            (m.dlq_offset, m.msg_id, m.uniq_key, m.topic, m.sent_to, m.new_msg_id, m.error or verb)
            for m in report.messages
        ]
        + [(o, None, None, None, None, None, "skipped: resent before (--again)") for o in report.skipped]
        + [(o, None, None, None, None, None, "not in the DLQ") for o in report.missing]
    )
    title = (
        f"{report.dlq_topic}: {len(report.resent)} {verb}, {len(report.skipped)} skipped, "
        f"{len(report.failed)} failed"
    )
    columns = ["dlq offset", "msg id", "uniq key", "topic", "sent to", "new msg id", "result"]
    return [Table(columns, rows, title=title)]


@app.command("export")
def export(
    group: GroupArg,
    file: Annotated[Path, typer.Option("--file", "-f", help="Write JSON lines here ('-' for stdout).")],
    limit: LimitOpt = 100_000,
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Write a group's dead letters as JSON lines, one message object (docs/cli-json.md) per line."""
    import json
    import sys

    from admin.store_tools import message_to_dict

    rng = message_range(None, None, None, None, None, None, "*", limit)
    conn = connect(namesrv, profile, timeout, None)
    with ProgressBar() as bar:
        result = conn.run(lambda s: s.dlq_browse(group, rng, bar))
    lines = "".join(
        json.dumps(message_to_dict(m), sort_keys=True, ensure_ascii=False) + "\n" for m in result.messages
    )
    if str(file) == "-":
        sys.stdout.write(lines)
    else:
        file.write_text(lines, encoding="utf-8")
        sys.stderr.write(f"{len(result.messages)} message(s) written to {file}\n")
