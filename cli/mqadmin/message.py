"""mqadmin's commands for messages: query by id, key, unique key and offset; print, send, consume,
decode, and compaction logs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from admin.errors import NotFound
from cli.mqadmin import render_message
from cli.mqadmin.args import (
    BEGIN,
    BEGIN_MS,
    CHARSET,
    CLUSTER_LMQ,
    END,
    END_MS,
    MSG_ID,
    SUBEXPR,
    TOPIC,
    Command,
    Values,
    boolean,
    flag,
    flag_opt,
    integer,
    java_time,
    o,
    opt,
    req,
)

if TYPE_CHECKING:
    from admin.models import MessageRange, Messages
    from admin.service import AdminService

BODY_DIR = Path("/tmp/rocketmq/msgbodys")  # where queryMsgById writes message bodies
_READ_ALL = 10_000_000  # printMsg reads whole queues
# options several message commands declare alike
_TOPIC_NAME = o("t", "topic", "Topic name", True)
_CONSUMER_GROUP = o("g", "consumerGroup", "consumer group name")
_CLIENT_ID = o("d", "clientId", "The consumer's client id")
_BODY_FORMAT = o("f", "bodyFormat", "print message body by the specified format")


def _body_file(msg_id: str, body: bytes) -> str:
    """Write a body where queryMsgById leaves it; the path."""
    BODY_DIR.mkdir(parents=True, exist_ok=True)
    path = BODY_DIR / msg_id
    path.write_bytes(body)
    return str(path)


async def query_msg_by_id(s: AdminService, v: Values) -> str:
    topic = req(v, "topic")
    charset = opt(v, "bodyFormat")
    out = []
    for msg_id in (i.strip() for i in req(v, "msgId").split(",")):
        if not msg_id:
            continue
        if boolean(v, "sendMessage"):
            receipt = await s.message_resend(msg_id, topic)
            out.append(f"prepare resend msg. originalMsgId={msg_id}{render_message.send_result(receipt)}")
            continue
        try:
            found = await s.message_track(msg_id, topic)
        except NotFound:
            out.append(render_message.message_not_found())
            continue
        msg = found.message
        path = _body_file(msg.msg_id, msg.body)
        out.append(render_message.message_detail(msg, path, found.tracks, charset))
    return "".join(out)


async def query_msg_by_key(s: AdminService, v: Values) -> str:
    from admin.models import Messages
    from admin.service.messages import MAX_TIMESTAMP

    topic = req(v, "topic")
    await s.topic_route(topic)  # a topic that does not exist fails, as Java's route lookup does
    try:
        found = await s.message_query(
            topic,
            key=req(v, "msgKey"),
            begin=integer(v, "beginTimestamp", 0) or 0,
            end=integer(v, "endTimestamp", MAX_TIMESTAMP) or MAX_TIMESTAMP,
            max_num=integer(v, "maxNum", 64) or 64,
        )
    except NotFound:
        found = Messages([])
    return render_message.query_by_key(found)


async def query_msg_by_unique_key(s: AdminService, v: Values) -> str:
    topic, msg_id = req(v, "topic"), req(v, "msgId")
    if flag(v, "showAll"):
        found = await s.message_query(topic, unique_key=msg_id, max_num=32)
        records = found.messages
    else:
        records = [(await s.message_get(msg_id, topic)).messages[0]]
    out = []
    for msg in records:
        tracks = (await s.message_track(msg.offset_msg_id, topic)).tracks
        out.append(
            render_message.message_detail(msg, _body_file(msg.msg_id, msg.body), tracks, with_offset_id=False)
        )
    return "".join(out)


async def query_msg_by_offset(s: AdminService, v: Values) -> str:
    from admin.models import MessageRange

    topic, offset = req(v, "topic"), integer(v, "offset") or 0
    rng = MessageRange(req(v, "brokerName"), integer(v, "queueId"), offset, offset + 1, limit=1)
    found = await s.message_print(topic, rng)
    if not found.messages:
        return render_message.message_not_found()
    tracked = await s.message_track(found.messages[0].offset_msg_id, topic)
    msg = tracked.message
    return render_message.message_detail(
        msg, _body_file(msg.msg_id, msg.body), tracked.tracks, opt(v, "bodyFormat")
    )


def _print_range(v: Values, broker: str | None, queue: int | None, limit: int = _READ_ALL) -> MessageRange:
    from admin.models import MessageRange

    begin, end = opt(v, "beginTimestamp"), opt(v, "endTimestamp")
    return MessageRange(
        broker,
        queue,
        begin_ms=java_time(begin) if begin else None,
        end_ms=java_time(end) if end else None,
        expression=opt(v, "subExpression") or "*",
        limit=limit,
    )


def _charset(v: Values) -> str | None:
    return (opt(v, "charsetName") or "UTF-8") if boolean(v, "printBody", True) else None


async def print_msg(s: AdminService, v: Values) -> str:
    found = await s.message_print(req(v, "topic"), _print_range(v, None, None))
    return render_message.print_messages(found, _charset(v))


async def print_msg_by_queue(s: AdminService, v: Values) -> str:
    from collections import Counter

    rng = _print_range(v, req(v, "brokerName"), integer(v, "queueId"))
    found = await s.message_print(req(v, "topic"), rng)
    out = render_message.print_messages(found, _charset(v)) if boolean(v, "print msg") else ""
    if boolean(v, "calculate"):
        counts = Counter(m.tags or "" for m in found.messages)
        out += "".join(f"Tag: {tag:<30} Count: {n}\n" for tag, n in counts.most_common())
    return out


async def send_message(s: AdminService, v: Values) -> str:
    from admin.models import OutgoingMessage

    key = opt(v, "key")
    msg = OutgoingMessage(
        req(v, "topic"),
        req(v, "body").encode(),
        opt(v, "tags"),
        [key] if key else [],
        broker_name=opt(v, "broker"),
        queue_id=integer(v, "qid"),
    )
    return render_message.send_result(await s.message_send(msg, trace=boolean(v, "msgTraceEnable")))


async def consume_message(s: AdminService, v: Values) -> str:
    topic = req(v, "topic")
    count = integer(v, "MessageNumber", 128) or 128
    broker, queue, offset = opt(v, "brokerName"), integer(v, "queueId"), integer(v, "offset")
    found: Messages
    if broker is None and queue is None and offset is None:
        found = await s.message_consume(topic, count, opt(v, "consumerGroup"))
    else:
        from dataclasses import replace

        rng = replace(_print_range(v, broker, queue, count), from_offset=offset)
        found = await s.message_print(topic, rng)
    return render_message.print_messages(found, "UTF-8")


async def dump_compaction_log(s: AdminService, v: Values) -> str:
    from admin.store_tools import compaction_log_messages

    name = opt(v, "file")
    if name is None:
        return "miss dump log file name"
    return "".join(render_message.message_ext(m) + "\n" for m in compaction_log_messages(Path(name)))


async def decode_message_id(s: AdminService, v: Values) -> str:
    from broker.protocol.msgid import decode_uniq_key

    info = decode_uniq_key(req(v, "messageId"))
    stamp = dt.datetime.fromtimestamp(info.timestamp_ms / 1000).strftime("%Y-%m-%d#%H:%M:%S:")
    return f"ip={info.ip}date={stamp}{info.timestamp_ms % 1000:03d}"


COMMANDS: tuple[Command, ...] = (
    Command("queryMsgById", "Query Message by Id.", (
        TOPIC,
        MSG_ID,
        _CONSUMER_GROUP,
        _CLIENT_ID,
        o("s", "sendMessage", "resend message"),
        o("u", "unitName", "unit name"),
        _BODY_FORMAT,
        CLUSTER_LMQ,
    ), query_msg_by_id),
    Command("queryMsgByKey", "Query Message by Key.", (
        _TOPIC_NAME,
        o("k", "msgKey", "Message Key", True),
        BEGIN_MS,
        END_MS,
        o("m", "maxNum", "The maximum number of messages returned by the query, default:64"),
        CLUSTER_LMQ,
    ), query_msg_by_key),
    Command("queryMsgByUniqueKey", "Query Message by Unique key.", (
        MSG_ID,
        _CONSUMER_GROUP,
        _CLIENT_ID,
        o("t", "topic", "The topic of msg", True),
        flag_opt("a", "showAll", "Print all message, the limit is 32"),
        CLUSTER_LMQ,
    ), query_msg_by_unique_key),
    Command("queryMsgByOffset", "Query Message by offset.", (
        TOPIC,
        o("b", "brokerName", "Broker Name", True),
        o("i", "queueId", "Queue Id", True),
        o("o", "offset", "Queue Offset", True),
        _BODY_FORMAT,
    ), query_msg_by_offset),
    Command("printMsg", "Print Message Detail.", (
        TOPIC, CHARSET, SUBEXPR, BEGIN, END,
        o("d", "printBody", "print body"),
        o("l", "lmqParentTopic", "Lmq parent topic, lmq is used to find the route."),
    ), print_msg),
    Command("printMsgByQueue", "Print Message Detail by queueId.", (
        TOPIC,
        o("a", "brokerName", "broker name", True),
        o("i", "queueId", "queue id", True),
        CHARSET, SUBEXPR, BEGIN, END,
        o("p", "print msg", "print msg. eg: true | false(default)"),
        o("d", "printBody", "print body. eg: true | false(default)"),
        o("f", "calculate", "calculate by tag. eg: true | false(default)"),
    ), print_msg_by_queue),
    Command("sendMessage", "Send a message.", (
        _TOPIC_NAME,
        o("p", "body", "UTF-8 string format of the message body", True),
        o("k", "key", "Message keys"),
        o("c", "tags", "Message tags"),
        o("b", "broker", "Send message to target broker"),
        o("i", "qid", "Send message to target queue"),
        o("m", "msgTraceEnable", "Message Trace Enable, Default: false"),
    ), send_message),
    Command("consumeMessage", "Consume message.", (
        _TOPIC_NAME,
        o("b", "brokerName", "Broker name"),
        o("i", "queueId", "Queue Id"),
        o("o", "offset", "Queue offset"),
        o("g", "consumerGroup", "Consumer group name"),
        o("s", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"),
        END,
        o("c", "MessageNumber", "Number of message to be consumed"),
    ), consume_message),
    Command("decodeMessageId", "decode unique message ID", (
        o("i", "messageId", "unique message ID"),
    ), decode_message_id),
    Command("dumpCompactionLog", "Parse compaction log to message.", (
        o("f", "file", "to dump file name"),
    ), dump_compaction_log),
)  # fmt: skip
