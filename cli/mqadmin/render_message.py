"""mqadmin's text layouts for messages (the Java spellings they share are in render.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.models import (
        ClientRunningInfo,
        GroupClients,
        GroupLag,
        Messages,
        SendReceipt,
        TrackInfo,
    )
    from broker.protocol.message import MessageRecord

from cli.mqadmin.render import (
    _PROPERTIES_CAPACITY,
    human_time,
    java_map,
    jstr,
    message_queue,
    plain_time,
    version_desc,
)


def message_detail(
    msg: MessageRecord,
    body_path: str,
    tracks: Sequence[TrackInfo] | None,
    body_charset: str | None = None,
    with_offset_id: bool = True,
) -> str:
    """``queryMsgById`` (and ``queryMsgByUniqueKey`` without the OffsetID line): the message, where its
    body was written, and the tracks of the groups consuming its topic."""
    fields: list[tuple[str, object]] = [("OffsetID:", msg.offset_msg_id)] if with_offset_id else []
    fields += [
        ("Topic:", msg.topic),
        ("Tags:", f"[{jstr(msg.tags)}]"),
        ("Keys:", f"[{jstr(msg.properties.get('KEYS'))}]"),
        ("Queue ID:", msg.queue_id),
        ("Queue Offset:", msg.queue_offset),
        ("CommitLog Offset:", msg.physical_offset),
        ("Reconsume Times:", msg.reconsume_times),
        ("Born Timestamp:", human_time(msg.born_timestamp)),
        ("Store Timestamp:", human_time(msg.store_timestamp)),
        ("Born Host:", msg.born_host),
        ("Store Host:", msg.store_host),
        ("System Flag:", msg.sys_flag),
        ("Properties:", java_map(msg.properties, _PROPERTIES_CAPACITY)),
        ("Message Body Path:", body_path),
    ]
    if body_charset is not None:
        fields.append(("Message Body:", msg.body.decode(body_charset, "replace")))
    text = "".join(f"{name:<20} {value}\n" for name, value in fields)
    if tracks is None:
        return text
    if not tracks:
        return text + "\n\nWARN: No Consumer"
    return text + "\n\n" + "".join(track_line(t) + "\n" for t in tracks)


def track_line(track: TrackInfo) -> str:
    """Java's ``MessageTrack.toString``."""
    return (
        f"MessageTrack [consumerGroup={track.group}, trackType={track.track_type}, "
        f"exceptionDesc={jstr(track.detail)}]"
    )


def message_not_found() -> str:
    return "\nMessage not found!"


def query_by_key(messages: Messages) -> str:
    """``queryMsgByKey``: client id (UNIQ_KEY), queue and queue offset of each message."""
    out = [f"{'#Message ID':<50} {'#QID':>4} {'#Offset':>40}\n"]
    out += [f"{m.msg_id:<50} {m.queue_id:>4} {m.queue_offset:>40}\n" for m in messages.messages]
    return "".join(out)


def message_ext(msg: MessageRecord) -> str:
    """A short ``MessageExt.toString`` for ``printMsg`` lines."""
    return (
        f"MessageExt [brokerName=null, queueId={msg.queue_id}, storeSize={msg.total_size}, "
        f"queueOffset={msg.queue_offset}, sysFlag={msg.sys_flag}, bornTimestamp={msg.born_timestamp}, "
        f"bornHost=/{msg.born_host}, storeTimestamp={msg.store_timestamp}, storeHost=/{msg.store_host}, "
        f"msgId={msg.offset_msg_id}, commitLogOffset={msg.physical_offset}, bodyCRC={msg.body_crc}, "
        f"reconsumeTimes={msg.reconsume_times}, preparedTransactionOffset={msg.prepared_transaction_offset}, "
        f"toString()=Message{{topic='{msg.topic}', flag={msg.flag}, "
        f"properties={java_map(msg.properties, _PROPERTIES_CAPACITY)}, body=[{len(msg.body)} bytes]}}]"
    )


def print_messages(messages: Messages, charset: str | None) -> str:
    """``printMsg`` / ``printMsgByQueue`` lines: ``MSGID: <id> <MessageExt> BODY: <body>``."""
    out = []
    for m in messages.messages:
        body = m.body.decode(charset, "replace") if charset else "NOT PRINT BODY"
        out.append(f"MSGID: {m.offset_msg_id} {message_ext(m)} BODY: {body}\n")
    return "".join(out)


def send_result(receipt: SendReceipt | None) -> str:
    """``sendMessage``: one row with the broker, queue, status and client message id."""
    row = "{:<32}  {:<4}  {:<20}    {}\n"
    head = row.format("#Broker Name", "#QID", "#Send Result", "#MsgId")
    if receipt is None:
        return head + row.format("Unknown", "Unknown", "Failed", "None")
    return head + row.format(receipt.broker_name, receipt.queue_id, receipt.status, receipt.uniq_key)


def stats_all(rows: Iterable[tuple[str, str | None, int, float, float]]) -> str:
    """``statsAll``: (topic, group or None, accumulation, in TPS, out TPS) rows; the 24-hour counts
    are not kept by these brokers and print as 0."""
    out = ["{:<64}  {:<64} {:>12} {:>11} {:>11} {:>14} {:>14}\n".format(
        "#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"
    )]  # fmt: skip
    for topic, group, accumulation, in_tps, out_tps in rows:
        if group is None:
            out.append(f"{topic[:64]:<64}  {'':<64} {0:>12} {in_tps:>11.2f} {'':>11} {0:>14} {'':>14}\n")
        else:
            out.append(
                f"{topic[:64]:<64}  {group[:64]:<64} {accumulation:>12} {in_tps:>11.2f} {out_tps:>11.2f} "
                f"{0:>14} {0:>14}\n"
            )
    return "".join(out)


def broker_consume_stats(lags: Sequence[GroupLag], level: int) -> str:
    """``brokerConsumeStats``: queues of every group whose diff reaches ``level``, then the total."""
    out = ["{:<64}  {:<64}  {:<32}  {:<4}  {:<20}  {:<20}  {:<20}  {}\n".format(
        "#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime"
    )]  # fmt: skip
    total = 0
    for lag in lags:
        for q in lag.queues:
            total += q.diff
            if q.diff < level or q.last_timestamp <= 0:
                continue
            out.append(
                f"{q.topic[:64]:<64}  {lag.group:<64}  {q.broker_name[:32]:<32}  {q.queue_id:<4}  "
                f"{q.broker_offset:<20}  {q.consumer_offset:<20}  {q.diff:<20}  "
                f"{plain_time(q.last_timestamp)}\n"
            )
    out.append(f"\nDiff Total: {total}\n")
    return "".join(out)


def java_stamp(epoch_ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: ``yyyyMMddHHmmssSSS`` in local time (0 too: the epoch)."""
    t = dt.datetime.fromtimestamp(epoch_ms / 1000)
    return t.strftime("%Y%m%d%H%M%S") + f"{epoch_ms % 1000:03d}"


def consumer_running_info(c: ClientRunningInfo) -> str:
    """``ConsumerRunningInfo.formatString``: what ``consumerStatus -i`` prints (and writes per client)."""
    out = ["#Consumer Properties#\n"]
    out += [f"{key:<40}: {value}\n" for key, value in sorted(c.properties.items())]
    out.append("\n\n#Consumer Subscription#\n")
    out += [
        f"{i:03d} Topic: {s.topic:<40} ClassFilter: {'false':<8} SubExpression: {s.expression}\n"
        for i, s in enumerate(c.subscriptions, 1)
    ]
    out.append("\n\n#Consumer Offset#\n")
    out.append(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Consumer Offset':<20}\n")
    out += [f"{q.topic:<32}  {q.broker_name:<32}  {q.queue_id:<4}  {q.commit_offset:<20}\n" for q in c.queues]
    out.append("\n\n#Consumer MQ Detail#\n")
    out.append(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#ProcessQueueInfo':<20}\n")
    for q in c.queues:
        info = (
            f"ProcessQueueInfo [commitOffset={q.commit_offset}, cachedMsgMinOffset={q.cached_min_offset}, "
            f"cachedMsgMaxOffset={q.cached_max_offset}, cachedMsgCount={q.cached_count}, "
            f"cachedMsgSizeInMiB={q.cached_size_mib}, transactionMsgMinOffset={q.consuming_min_offset}, "
            f"transactionMsgMaxOffset={q.consuming_max_offset}, transactionMsgCount={q.consuming_count}, "
            f"locked={jstr(q.locked)}, tryUnlockTimes={q.try_unlock_times}, "
            f"lastLockTimestamp={java_stamp(q.last_lock_timestamp)}, droped={jstr(q.dropped)}, "
            f"lastPullTimestamp={java_stamp(q.last_pull_timestamp)}, "
            f"lastConsumeTimestamp={java_stamp(q.last_consume_timestamp)}]"
        )
        out.append(f"{q.topic:<64}  {q.broker_name:<32}  {q.queue_id:<4}  {info}\n")
    out.append("\n\n#Consumer Pop Detail#\n")
    out.append(f"{'#Topic':<32}  {'#Broker Name':<32}  {'#QID':<4}  {'#ProcessQueueInfo':<20}\n")
    out.append("\n\n#Consumer RT&TPS#\n")
    out.append(
        f"{'#Topic':<64}  {'#Pull RT':>14} {'#Pull TPS':>14} {'#Consume RT':>14} {'#ConsumeOK TPS':>14} "
        f"{'#ConsumeFailed TPS':>18} {'#ConsumeFailedMsgsInHour':>25}\n"
    )
    out += [
        f"{r.topic:<32}  {r.pull_rt:14.2f} {r.pull_tps:14.2f} {r.consume_rt:14.2f} {r.consume_ok_tps:14.2f} "
        f"{r.consume_failed_tps:18.2f} {r.consume_failed_msgs:25d}\n"
        for r in c.rates
    ]
    out.append("\n\n#User Consume Info#\n")
    if c.jstack is not None:
        out.append(f"\n\n#Consumer jstack#\n{c.jstack}")
    return "".join(out)


def consumer_status_header() -> str:
    return f"{'#Index':<10} {'#ClientId':<40} {'#Version':<20} #ConsumerRunningInfoFile\n"


def consumer_status_row(index: int, c: ClientRunningInfo, path: str) -> str:
    return f"{index:<10} {c.client_id:<40} {version_desc(c.version):<20} {path}\n"


def consumer_status_analysis(result: GroupClients) -> str:
    """The verdict after the listing: subscriptions alike, rebalance, queues in trouble."""
    from admin.models import ProblemKind

    answered = [c for c in result.clients if c.error is None]
    if not answered:
        return ""
    if not result.same_subscriptions:
        return "\n\nWARN: Different subscription in the same group of consumer!!!"
    out = ["\n\nSame subscription in the same group of consumer", "\n\nRebalance OK\n"]
    for c in answered:
        for p in c.problems:
            mq = message_queue(p.topic, p.broker_name, p.queue_id)
            if p.kind is ProblemKind.NOT_LOCKED:
                out.append(f"{c.client_id} {mq} can't lock for a while, {p.for_ms}ms\n")
            elif p.kind is ProblemKind.UNLOCK_FAILED:
                out.append(f"{c.client_id} {mq} unlock {p.unlock_tries} times, still failed\n")
            else:
                out.append(f"{c.client_id} {mq} can't consume for a while, maybe blocked, {p.for_ms}ms\n")
    return "".join(out)
