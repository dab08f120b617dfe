"""``rmq store``: offline, read-only tools for a store folder (info, verify, lookup, dump).

They read the files directly, so they work on a stopped broker, a copied folder, a store written by
Apache RocketMQ, or next to a running broker.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.message_view import message_fields, preview
from cli.output import Fields, OutputFormat, OutputOption, ProgressBar, Section, Table, emit, ms_time

if TYPE_CHECKING:
    from admin.store_tools import DumpResult, StoreInfo, VerifyResult
    from broker.protocol.message import MessageRecord

app = typer.Typer(
    help="Inspect a store folder offline: files, offsets, integrity, messages.",
    no_args_is_help=True,
)

StoreDir = Annotated[
    Path,
    typer.Argument(
        metavar="DIR", help="The store folder (storePathRootDir, e.g. ~/store).", show_default=False
    ),
]
_PROGRESS_MIN_BYTES = 64 << 20  # a verify walk shorter than this finishes before a bar helps


@app.command("info")
def info(directory: StoreDir, output: OutputOption = OutputFormat.TABLE) -> None:
    """CommitLog files, offsets, queues, index files, checkpoint, and what recovery would do."""
    from admin.store_tools import store_info

    result = store_info(directory)
    emit(output, result, lambda: _info_sections(result))


@app.command("verify")
def verify(directory: StoreDir, output: OutputOption = OutputFormat.TABLE) -> None:
    """Check every record and queue unit; exit 1 when problems are found."""
    from admin.errors import OperationFailed
    from admin.store_tools import store_verify

    with ProgressBar(min_total=_PROGRESS_MIN_BYTES) as bar:
        result = store_verify(directory, progress=bar)
    emit(output, result, lambda: _verify_sections(result))
    if not result.ok:
        count = len(result.problems) + result.more_problems
        raise OperationFailed(f"{count} problem(s) found in store {directory}")


@app.command("lookup")
def lookup(
    directory: StoreDir,
    msg_id: Annotated[
        str | None, typer.Option("--msg-id", "-i", help="Offset MessageId (a UNIQ_KEY too, with --topic).")
    ] = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Topic (needed for keys).")] = None,
    key: Annotated[str | None, typer.Option("--key", "-k", help="A KEYS entry.")] = None,
    unique_key: Annotated[
        str | None,
        typer.Option("--unique-key", "-u", help="A UNIQ_KEY (the id clients show)."),
    ] = None,
    begin: Annotated[int, typer.Option("--begin", help="Stored at or after (epoch ms).")] = 0,
    end: Annotated[int | None, typer.Option("--end", help="Stored at or before (epoch ms).")] = None,
    max_num: Annotated[int, typer.Option("--max", help="At most this many messages.")] = 64,
    output: OutputOption = OutputFormat.TABLE,
) -> None:
    """Find messages by MessageId, or in a topic by key or unique key (through the IndexFile)."""
    from admin.store_tools import MAX_TIMESTAMP, store_lookup

    result = store_lookup(
        directory,
        msg_id=msg_id,
        topic=topic,
        key=key,
        unique_key=unique_key,
        begin_ms=begin,
        end_ms=MAX_TIMESTAMP if end is None else end,
        max_num=max_num,
    )
    messages = result.messages
    emit(
        output,
        result,
        lambda: (
            [message_fields(messages[0], record=True)] if len(messages) == 1 else [_messages_table(messages)]
        ),
    )


@app.command("dump")
def dump(
    directory: StoreDir,
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic to dump.", show_default=False)],
    queue: Annotated[int | None, typer.Option("--queue", "-q", help="Only this queue id.")] = None,
    from_offset: Annotated[int, typer.Option("--from", help="First queue offset.")] = 0,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many messages.")] = 100,
    compacted: Annotated[
        bool,
        typer.Option("--compacted", help="From the compaction log: each key's newest message."),
    ] = False,
    output: OutputOption = OutputFormat.TABLE,
) -> None:
    """Messages of a topic in queue order, from a queue offset."""
    from admin.store_tools import store_dump

    result = store_dump(
        directory, topic, queue=queue, from_offset=from_offset, limit=limit, compacted=compacted
    )
    emit(output, result, lambda: _dump_sections(result))


# -- layouts for people ---------------------------------------------------------------------------
def _info_sections(info: StoreInfo) -> list[Section]:
    cp = info.checkpoint
    rec = info.recovery
    return [
        Fields(
            [
                ("path", info.path),
                ("clean shutdown", info.clean_shutdown),
                ("min offset", info.min_offset),
                ("max offset", info.max_offset),
                ("checkpoint physic", ms_time(cp.physic_msg_timestamp)),
                ("checkpoint logics", ms_time(cp.logics_msg_timestamp)),
                ("checkpoint index", ms_time(cp.index_msg_timestamp)),
                ("recovery scans from", rec.scanned_from),
                ("recovery ends at", rec.commitlog_end),
                ("recovery truncates", f"{rec.truncated_bytes} bytes"),
                ("recovery problem", rec.problem),
            ],
            title="Store",
        ),
        Table(
            ["file", "start offset", "size", "used"],
            [(f.name, f.start_offset, f.size, f.used) for f in info.commitlog_files],
            title="CommitLog",
        ),
        Table(
            ["topic", "queue", "min offset", "max offset"],
            [(q.topic, q.queue_id, q.min_offset, q.max_offset) for q in info.queues],
            title="ConsumeQueues",
        ),
        Table(
            ["file", "begin", "end", "entries"],
            [
                (f.name, ms_time(f.begin_timestamp), ms_time(f.end_timestamp), f.entries)
                for f in info.index_files
            ],
            title="IndexFiles",
        ),
        *_compaction_sections(info),
    ]


def _compaction_sections(info: StoreInfo) -> list[Section]:
    if not info.compaction:
        return []
    headers = ["topic", "queue", "files", "messages", "min offset", "fed offset", "compacted to", "bytes"]
    rows = [
        (
            c.topic,
            c.queue_id,
            c.files,
            c.messages,
            c.min_offset,
            c.fed_offset,
            c.compacted_offset,
            c.disk_bytes,
        )
        for c in info.compaction
    ]
    return [Table(headers, rows, title="Compaction logs")]


def _verify_sections(result: VerifyResult) -> list[Section]:
    rec = result.recovery
    summary = Fields(
        [
            ("path", result.path),
            ("ok", result.ok),
            ("records", result.records),
            ("bytes", result.bytes),
            ("queues", result.queues),
            ("units", result.units),
            ("problems", len(result.problems) + result.more_problems),
            ("recovery ends at", rec.commitlog_end),
            ("recovery truncates", f"{rec.truncated_bytes} bytes"),
        ],
        title="Verify",
    )
    if not result.problems:
        return [summary]
    problems = Table(
        ["area", "file", "offset", "reason"],
        [(p.area, p.file, p.offset, p.reason) for p in result.problems],
        title="Problems",
    )
    return [summary, problems]


def _dump_sections(result: DumpResult) -> list[Section]:
    sections: list[Section] = [_messages_table(result.messages, title=f"Topic {result.topic}")]
    if result.unreadable:
        sections.append(
            Table(
                ["queue", "offset", "commitlog offset", "reason"],
                [(u.queue_id, u.queue_offset, u.commit_log_offset, u.reason) for u in result.unreadable],
                title="Unreadable units",
            )
        )
    return sections


def _messages_table(messages: list[MessageRecord], title: str = "") -> Table:
    return Table(
        ["queue", "offset", "msg id", "tags", "keys", "stored", "size", "body"],
        [
            (
                m.queue_id,
                m.queue_offset,
                m.offset_msg_id,
                m.tags,
                " ".join(m.keys) or None,
                ms_time(m.store_timestamp),
                m.total_size,
                preview(m.body),
            )
            for m in messages
        ],
        title=title,
    )
