"""mqadmin's message trace command: queryMsgTraceById, with RocketMQ's option letters and layout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cli.mqadmin.args import BEGIN_MS, END_MS, MSG_ID, Command, Values, integer, o, opt, req

if TYPE_CHECKING:
    from admin.service import AdminService


async def query_msg_trace_by_id(s: AdminService, v: Values) -> str:
    from admin.service.messages import MAX_TIMESTAMP
    from cli.mqadmin.render_trace import query_msg_trace

    trace = await s.message_trace(
        req(v, "msgId"),
        opt(v, "traceTopic"),
        begin=integer(v, "beginTimestamp", 0) or 0,
        end=integer(v, "endTimestamp", MAX_TIMESTAMP) or MAX_TIMESTAMP,
        max_num=integer(v, "maxNum", 64) or 64,
    )
    return query_msg_trace(trace)


COMMANDS: tuple[Command, ...] = (
    Command("queryMsgTraceById", "Query a message trace.", (
        MSG_ID,
        o("t", "traceTopic", "The name value of message trace topic"),
        BEGIN_MS,
        END_MS,
        o("c", "maxNum", "The maximum number of messages returned by the query, default:64"),
    ), query_msg_trace_by_id),
)  # fmt: skip
