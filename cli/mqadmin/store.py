"""mqadmin's commands for the store: ConsumeQueue queries and the brokers' clean-up chores."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from cli.mqadmin import render_group
from cli.mqadmin.args import (
    Command,
    Handler,
    Values,
    integer,
    o,
    opt,
    req,
)

if TYPE_CHECKING:
    from admin.service import AdminService


async def query_cq(s: AdminService, v: Values) -> str:
    index = integer(v, "index") or 0
    body = await s.consume_queue_query(
        req(v, "topic"),
        integer(v, "queue") or 0,
        index,
        integer(v, "count", 10) or 0,
        opt(v, "consumer"),
        opt(v, "broker"),
    )
    return render_group.consume_queue(body, index)


def _store_chore(
    chore: Callable[[AdminService], Callable[[str | None, str | None], Awaitable[object]]],
) -> Handler:
    """cleanExpiredCQ, deleteExpiredCommitLog, cleanUnusedTopic: on ``-b``, else every broker of
    ``-c`` (or of every cluster); mqadmin prints ``success`` without a newline."""

    async def handler(s: AdminService, v: Values) -> str:
        await chore(s)(opt(v, "cluster"), opt(v, "brokerAddr"))
        return "success"

    return handler


COMMANDS: tuple[Command, ...] = (
    Command("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", (
        o("b", "brokerAddr", "Broker address"), o("c", "cluster", "clustername"),
    ), _store_chore(lambda s: s.broker_clean_expired_consume_queues)),
    Command("deleteExpiredCommitLog", "Delete expired CommitLog files.", (
        o("b", "brokerAddr", "Broker address"), o("c", "cluster", "clustername"),
    ), _store_chore(lambda s: s.broker_delete_expired_commitlog)),
    Command("cleanUnusedTopic", "Clean unused topic on broker.", (
        o("b", "brokerAddr", "Broker address"), o("c", "cluster", "cluster name"),
    ), _store_chore(lambda s: s.broker_clean_unused_topics)),
    Command("queryCq", "Query cq command.", (
        o("t", "topic", "topic name", True),
        o("q", "queue", "queue num, ie. 1", True),
        o("i", "index", "start queue index.", True),
        o("c", "count", "how many."),
        o("b", "broker", "broker addr."),
        o("g", "consumer", "consumer group."),
    ), query_cq),
)  # fmt: skip
