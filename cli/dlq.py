"""``rmq dlq``: dead-letter topics (%DLQ%group). ``resend`` and ``export`` join ``list`` and ``browse``
on :data:`app` later; ``rmq retry`` is built by the same :func:`special_topic_app`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import typer

from cli.connect import GroupArg, NamesrvOpt, OutOpt, ProfileOpt, TimeoutOpt, connect
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


def special_topic_app(kind: Literal["dlq", "retry"], what: str) -> typer.Typer:
    """``list`` and ``browse`` for the groups' dead-letter or retry topics (``what`` names them)."""
    app = typer.Typer(
        help=f"{what.capitalize()} topics: which groups have them, and their messages.", no_args_is_help=True
    )

    @app.command("list", help=f"Groups with a {what} topic and how many messages it holds.")
    def list_(
        namesrv: NamesrvOpt = None,
        profile: ProfileOpt = None,
        timeout: TimeoutOpt = None,
        output: OutOpt = None,
    ) -> None:
        conn = connect(namesrv, profile, timeout, output)
        conn.show(lambda s: s.dlq_list() if kind == "dlq" else s.retry_list(), special_sections)

    @app.command("browse", help=f"The messages in a group's {what} topic.")
    def browse(
        group: GroupArg,
        broker_name: BrokerNameOpt = None,
        queue: QueueOpt = None,
        from_offset: FromOpt = None,
        to_offset: ToOpt = None,
        begin: BeginOpt = None,
        end: EndOpt = None,
        tags: TagsExprOpt = "*",
        limit: LimitOpt = 100,
        namesrv: NamesrvOpt = None,
        profile: ProfileOpt = None,
        timeout: TimeoutOpt = None,
        output: OutOpt = None,
    ) -> None:
        rng = message_range(broker_name, queue, from_offset, to_offset, begin, end, tags, limit)
        conn = connect(namesrv, profile, timeout, output)
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
