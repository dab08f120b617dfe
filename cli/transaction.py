"""``rmq transaction``: transactional (half) messages per topic, waiting for their producer's commit or
rollback or given up after transactionCheckMax checks; ``resume`` has the brokers check those again."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from admin.units import duration
from cli.connect import (
    Conn,
    WatchOpt,
    YesOpt,
    confirm,
    connected,
)
from cli.output import Section, Table, ms_time

if TYPE_CHECKING:
    from admin.models import HalfMessages, ResumedHalves

app = typer.Typer(help="Transactional messages waiting for a commit or rollback.", no_args_is_help=True)


def _age(born_ms: int) -> str:
    return duration(int(time.time() * 1000) - born_ms) if born_ms > 0 else "-"


@app.command("list")
@connected
def list_(
    conn: Conn,
    watch: WatchOpt = None,
) -> None:
    """Per topic and broker: half messages still waiting for their producer (how many, the oldest's
    age, the most state checks one had) and those the broker gave up checking."""
    conn.show(lambda s: s.transaction_list(), _list_sections, watch)


@app.command("resume")
@connected
def resume(
    conn: Conn,
    msg_ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[MSG_ID]...", help="Given-up half messages (see 'list').", show_default=False
        ),
    ] = None,
    topic: Annotated[
        str | None, typer.Option("-t", "--topic", metavar="TOPIC", help="Every given-up one of this topic.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every given-up half message.")] = False,
    yes: YesOpt = False,
) -> None:
    """Have the brokers check given-up half messages again, from zero (RESUME_CHECK_HALF_MESSAGE):
    their producers are asked once more whether to commit or roll back."""
    from admin.errors import BadInput, OperationFailed

    if sum((bool(msg_ids), topic is not None, all_)) != 1:
        raise BadInput("give MSG_IDs, --topic TOPIC or --all")
    what = f"of {topic}" if topic else "named" if msg_ids else "of every topic"
    confirm(f"resume checking the given-up half messages {what}", yes)
    result = conn.run(lambda s: s.transaction_resume(topic, msg_ids or None))
    conn.emit(result, _resumed_sections)
    if result.failed:
        raise OperationFailed(f"{len(result.failed)} half message(s) could not be resumed")


def _list_sections(h: HalfMessages) -> list[Section]:
    return [
        Table(
            ["topic", "broker", "waiting", "oldest waiting", "most checks", "given up", "oldest given up"],
            [
                (
                    t.topic,
                    t.broker_name,
                    t.waiting,
                    _age(t.oldest_waiting_ms),
                    t.most_checks,
                    t.given_up,
                    _age(t.oldest_given_up_ms),
                )
                for t in h.topics
            ],
            title="Transactions waiting for a commit or rollback",
        ),
        Table(
            ["msg id", "topic", "broker", "transaction id", "born", "checks"],
            [
                (m.msg_id, m.topic, m.broker_name, m.transaction_id, ms_time(m.born_ms), m.checks)
                for m in h.given_up
            ],
            title="Given up (rmq transaction resume checks them again)",
        ),
    ]


def _resumed_sections(r: ResumedHalves) -> list[Section]:
    rows: list[tuple[str, str | None, str | None, str]] = [
        (m.msg_id, m.topic, m.broker_name, "resumed") for m in r.resumed
    ]
    rows += [(msg_id, None, None, error) for msg_id, error in r.failed.items()]
    return [Table(["msg id", "topic", "broker", "result"], rows, title="Checks resumed")]
