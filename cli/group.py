"""``rmq group``: create, update, list, describe, lag, connections, clients, delete, reset-offset,
offsets (show or undo the last reset), rebalances, clone-offsets, consume-mode."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from admin.timeparse import parse_time
from admin.units import duration
from cli.click_api import OptionInfo
from cli.connect import (
    ClusterOpt,
    Conn,
    GroupArg,
    TargetBrokerOpt,
    TopicOpt,
    WatchOpt,
    YesOpt,
    confirm,
    connected,
)
from cli.output import Fields, ProgressBar, Section, Table, ms_time

if TYPE_CHECKING:
    from admin.models import (
        ClientRunningInfo,
        GroupChange,
        GroupClients,
        GroupConfig,
        GroupConnections,
        GroupDeletion,
        GroupDescription,
        GroupLag,
        GroupList,
        GroupRebalances,
        GroupSpec,
        OffsetClone,
        OffsetReset,
        OffsetSnapshot,
        ResetTarget,
    )
    from admin.models.broker_ops import ConsumeModes

app = typer.Typer(
    help="Create, inspect and delete consumer groups; move their offsets.", no_args_is_help=True
)

RetryMaxOpt = Annotated[int | None, typer.Option("--retry-max", help="Max redeliveries before the DLQ [16].")]
RetryQueuesOpt = Annotated[int | None, typer.Option("--retry-queues", help="Retry queues [1].")]
_PROGRESS_MIN = 4  # brokers or topic/broker pairs


def _bool_opt(name: str, help_: str) -> OptionInfo:
    info: OptionInfo = typer.Option(f"--{name}/--no-{name}", help=help_, show_default=False)
    return info


@app.command("create")
@connected
def create(
    conn: Conn,
    group: GroupArg,
    cluster: ClusterOpt = None,
    broker: TargetBrokerOpt = None,
    retry_max: RetryMaxOpt = None,
    retry_queues: RetryQueuesOpt = None,
    orderly: Annotated[bool, typer.Option("--orderly", help="Consume in order.")] = False,
    no_broadcast: Annotated[
        bool, typer.Option("--no-broadcast", help="Forbid broadcasting consumption.")
    ] = False,
    disabled: Annotated[bool, typer.Option("--disabled", help="Create with consumption disabled.")] = False,
) -> None:
    """Create a subscription group on a cluster's masters (-c) or on one broker (-b)."""
    from admin.models import GroupSpec

    spec = GroupSpec(
        group,
        consume_enable=False if disabled else None,
        consume_broadcast_enable=False if no_broadcast else None,
        orderly=orderly or None,
        retry_queue_nums=retry_queues,
        retry_max_times=retry_max,
    )
    conn.emit(conn.run(lambda s: s.group_create(spec, cluster, broker)), _change_sections)


@app.command("update")
@connected
def update(
    conn: Conn,
    group: GroupArg,
    cluster: ClusterOpt = None,
    broker: TargetBrokerOpt = None,
    retry_max: RetryMaxOpt = None,
    retry_queues: RetryQueuesOpt = None,
    orderly: Annotated[bool | None, _bool_opt("orderly", "Consume in order.")] = None,
    broadcast: Annotated[bool | None, _bool_opt("broadcast", "Allow broadcasting consumption.")] = None,
    consume: Annotated[bool | None, _bool_opt("consume", "Enable consumption.")] = None,
    from_min: Annotated[bool | None, _bool_opt("from-min", "Allow consuming from the min offset.")] = None,
) -> None:
    """Change a group's settings on the brokers holding it."""
    from admin.models import GroupSpec

    spec: GroupSpec = GroupSpec(group, consume, from_min, broadcast, orderly, retry_queues, retry_max)
    conn.emit(conn.run(lambda s: s.group_update(spec, cluster, broker)), _change_sections)


@app.command("list")
@connected
def list_(
    conn: Conn,
    all_: Annotated[
        bool, typer.Option("--all", "-a", help="Also the brokers' own and tools' groups.")
    ] = False,
) -> None:
    """Subscription groups of every broker, whether they are online and how far behind they are
    (messages, and how long the oldest unconsumed one has waited)."""
    conn.show(lambda s: s.group_list(all_), _list_sections)


@app.command("describe")
@connected
def describe(
    conn: Conn,
    group: GroupArg,
) -> None:
    """A group's settings, clients, subscriptions and lag."""
    conn.show(lambda s: s.group_describe(group), _describe_sections)


@app.command("lag")
@connected
def lag(
    conn: Conn,
    group: Annotated[
        str | None,
        typer.Argument(metavar="[GROUP]", help="Consumer group name (or --all).", show_default=False),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", "-a", help="Every group, one line each.")] = False,
    topic: TopicOpt = None,
    max_lag: Annotated[
        int | None,
        typer.Option(
            "--max-lag", metavar="N", min=0, help="Exit 1 when a group is more than N messages behind."
        ),
    ] = None,
    max_lag_time: Annotated[
        str | None,
        typer.Option(
            "--max-lag-time",
            metavar="DURATION",
            help="Exit 1 when a group's oldest unconsumed message has waited longer (e.g. 90s, 5m, 2h).",
        ),
    ] = None,
    watch: WatchOpt = None,
) -> None:
    """How far behind a group is, per queue (diff, inflight, last consumed, lag time), or every group
    with --all. With --max-lag / --max-lag-time it is a check for CI and cron: exit 1 past a limit."""
    from admin.errors import BadInput
    from admin.timeparse import parse_duration

    if (group is None) != all_:
        raise BadInput("name a GROUP or give --all")
    if all_ and topic is not None:
        raise BadInput("--topic applies to one group, not to --all")
    limit_ms = None if max_lag_time is None else parse_duration(max_lag_time)
    if group is not None:
        name = group
        if watch is not None:
            conn.show(lambda s: s.group_lag(name, topic), _lag_sections, watch)
            return
        one = conn.run(lambda s: s.group_lag(name, topic))
        conn.emit(one, _lag_sections)
        _check_limits([(one.group, one.diff_total, one.lag_ms)], max_lag, limit_ms)
        return
    if watch is not None:
        conn.show(lambda s: s.group_list(False), _lag_all_sections, watch)
        return
    every = conn.run(lambda s: s.group_list(False))
    conn.emit(every, _lag_all_sections)
    _check_limits([(g.name, g.lag, g.lag_ms) for g in every.groups], max_lag, limit_ms)


def _check_limits(lags: list[tuple[str, int, int]], max_lag: int | None, max_ms: int | None) -> None:
    """Fail (exit 1, one line naming them) when groups are past ``--max-lag`` or ``--max-lag-time``."""
    from admin.errors import OperationFailed

    over = [
        f"{name} ({count:,} messages, {duration(ms)})"
        for name, count, ms in lags
        if (max_lag is not None and count > max_lag) or (max_ms is not None and ms > max_ms)
    ]
    if over:
        raise OperationFailed(f"{len(over)} group(s) over the lag limit: {', '.join(over)}")


@app.command("connections")
@connected
def connections(
    conn: Conn,
    group: GroupArg,
    watch: WatchOpt = None,
) -> None:
    """The group's online clients and their subscriptions."""
    conn.show(lambda s: s.group_connections(group), _connections_sections, watch)


@app.command("clients")
@connected
def clients(
    conn: Conn,
    group: GroupArg,
    client: Annotated[
        str | None, typer.Option("--client", metavar="ID", help=r"Only this client \[default: every one].")
    ] = None,
) -> None:
    """What the group's online clients report: version, subscriptions, owned queues and rates."""
    conn.show(lambda s: s.group_clients(group, client), _clients_sections)


@app.command("delete")
@connected
def delete(
    conn: Conn,
    group: GroupArg,
    cluster: ClusterOpt = None,
    broker: TargetBrokerOpt = None,
    keep_offsets: Annotated[bool, typer.Option("--keep-offsets", help="Keep the group's offsets.")] = False,
    yes: YesOpt = False,
) -> None:
    """Delete a subscription group (and its offsets) from the brokers holding it."""
    confirm(f"delete consumer group {group}", yes)
    with ProgressBar(_PROGRESS_MIN) as bar:
        result = conn.run(lambda s: s.group_delete(group, cluster, broker, not keep_offsets, bar))
    conn.emit(result, _deleted_sections)


def _target(to_time: str | None, to_offset: int | None, to_earliest: bool, to_latest: bool) -> ResetTarget:
    from admin.errors import BadInput
    from admin.models import ResetKind, ResetTarget

    chosen = [
        (kind, value)
        for kind, value, given in (
            (ResetKind.TIME, to_time, to_time is not None),
            (ResetKind.OFFSET, to_offset, to_offset is not None),
            (ResetKind.EARLIEST, None, to_earliest),
            (ResetKind.LATEST, None, to_latest),
        )
        if given
    ]
    if len(chosen) != 1:
        raise BadInput("give exactly one of --to-time, --to-offset, --to-earliest, --to-latest")
    kind, value = chosen[0]
    if kind is ResetKind.TIME:
        return ResetTarget(kind, parse_time(str(value)))
    return ResetTarget(kind, value if isinstance(value, int) else 0)


@app.command("reset-offset")
@connected
def reset_offset(
    conn: Conn,
    group: GroupArg,
    topic: Annotated[
        str | None,
        typer.Option("-t", "--topic", metavar="TOPIC", help=r"Topic \[default: every topic consumed]."),
    ] = None,
    to_time: Annotated[
        str | None, typer.Option("--to-time", metavar="TIME", help="Epoch ms, ISO 8601 or e.g. -1h.")
    ] = None,
    to_offset: Annotated[
        int | None, typer.Option("--to-offset", metavar="N", help="This queue offset.")
    ] = None,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="The first message kept.")] = False,
    to_latest: Annotated[
        bool, typer.Option("--to-latest", help="After the last message (skip all).")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the targets, change nothing.")] = False,
    yes: YesOpt = False,
) -> None:
    """Move a group's offsets (works while its consumers run: the broker pushes the new offsets)."""
    target = _target(to_time, to_offset, to_earliest, to_latest)
    if not dry_run:
        confirm(f"reset the offsets of consumer group {group}", yes)
    with ProgressBar(_PROGRESS_MIN) as bar:
        result = conn.run(lambda s: s.group_reset_offset(group, target, topic, dry_run, bar))
    conn.emit(result, _reset_sections)


class OffsetsAction(StrEnum):
    SHOW = "show"
    UNDO = "undo"


@app.command("offsets")
@connected
def offsets(
    conn: Conn,
    action: Annotated[
        OffsetsAction,
        typer.Argument(
            metavar="show|undo", case_sensitive=False, help="Show the saved offsets, or go back to them."
        ),
    ],
    group: GroupArg,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="undo: show the moves, change nothing.")] = False,
    yes: YesOpt = False,
) -> None:
    """Every reset and skip first saves the offsets it moves; show them, or undo the last reset
    (undo saves the offsets it leaves, so it can be undone too)."""
    if action is OffsetsAction.SHOW:
        conn.emit(conn.run(lambda s: s.group_offsets_snapshot(group)), _snapshot_sections)
        return
    if not dry_run:
        confirm(f"move the offsets of consumer group {group} back to before its last reset", yes)
    conn.emit(conn.run(lambda s: s.group_offsets_undo(group, dry_run)), _reset_sections)


@app.command("rebalances")
@connected
def rebalances(
    conn: Conn,
    group: GroupArg,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="TIME", help="Moves at or after TIME (epoch ms, ISO 8601, -1h)."),
    ] = None,
    watch: WatchOpt = None,
) -> None:
    """Which client holds each queue of GROUP, and when queues moved from one client to another, as
    the brokers saw the pulls; a queue that keeps moving is flagged as flapping."""
    since_ms = parse_time(since) if since else 0
    conn.show(lambda s: s.group_rebalances(group, since_ms), _rebalance_sections, watch)


@app.command("clone-offsets")
@connected
def clone_offsets(
    conn: Conn,
    source: Annotated[str, typer.Argument(metavar="SOURCE", help="Group to copy from.", show_default=False)],
    destination: Annotated[str, typer.Argument(metavar="DEST", help="Group to copy to.", show_default=False)],
    topic: TopicOpt = None,
) -> None:
    """Copy one group's offsets to another."""
    conn.emit(conn.run(lambda s: s.group_clone_offsets(source, destination, topic)), _clone_sections)


class ConsumeMode(StrEnum):
    PULL = "pull"
    POP = "pop"


@app.command("consume-mode")
@connected
def consume_mode(
    conn: Conn,
    group: GroupArg,
    topic: Annotated[str, typer.Option("-t", "--topic", metavar="TOPIC", help="The topic the group reads.")],
    set_: Annotated[
        ConsumeMode | None,
        typer.Option(
            "--set", case_sensitive=False, help="Make the group read the topic this way (pull|pop)."
        ),
    ] = None,
    pop_share_queues: Annotated[
        int,
        typer.Option(
            "--pop-share-queues",
            metavar="N",
            help="pop: each consumer also reads the queues of the N consumers after it (0: every queue).",
        ),
    ] = 0,
    cluster: ClusterOpt = None,
    broker: TargetBrokerOpt = None,
) -> None:
    """Show (or --set) how a group reads a topic when its consumers let the brokers balance:
    pull (a queue per consumer) or pop (consumers share queues)."""
    if set_ is None:
        modes = conn.run(lambda s: s.group_consume_mode(topic, group, cluster, broker))
    else:
        pop = set_ is ConsumeMode.POP
        modes = conn.run(
            lambda s: s.group_consume_mode_set(topic, group, pop, pop_share_queues, cluster, broker)
        )
    conn.emit(modes, _consume_mode_sections)


# -- layouts for people ---------------------------------------------------------------------------
def _config_fields(c: GroupConfig, title: str = "Settings") -> Fields:
    return Fields(
        [
            ("consume enable", c.consume_enable),
            ("consume from min", c.consume_from_min_enable),
            ("broadcast enable", c.consume_broadcast_enable),
            ("orderly", c.consume_message_orderly),
            ("retry queues", c.retry_queue_nums),
            ("retry max times", c.retry_max_times),
            ("broker id", c.broker_id),
            ("slow consumer broker", c.which_broker_when_consume_slowly),
            ("notify ids changed", c.notify_consumer_ids_changed_enable),
            ("consume timeout (min)", c.consume_timeout_minute),
        ],
        title=title,
    )


def _change_sections(c: GroupChange) -> list[Section]:
    return [Fields([("group", c.group), ("brokers", ", ".join(c.addresses))]), _config_fields(c.config)]


def _deleted_sections(d: GroupDeletion) -> list[Section]:
    return [Fields([("group", d.group), ("brokers", ", ".join(d.addresses))], title="Deleted")]


def _list_sections(result: GroupList) -> list[Section]:
    return [
        Table(
            [
                "group",
                "brokers",
                "online",
                "clients",
                "lag",
                "lag time",
                "type",
                "model",
                "consume",
                "orderly",
                "retry max",
            ],
            [
                (
                    g.name,
                    len(g.brokers),
                    g.online,
                    g.clients,
                    f"{g.lag:,}",
                    duration(g.lag_ms),
                    g.consume_type,
                    g.message_model,
                    g.consume_enable,
                    g.orderly,
                    g.retry_max_times,
                )
                for g in result.groups
            ],
        )
    ]


def _lag_all_sections(result: GroupList) -> list[Section]:
    worst_first = sorted(result.groups, key=lambda g: (-g.lag_ms, -g.lag, g.name))
    return [
        Table(
            ["group", "online", "clients", "lag", "lag time"],
            [(g.name, g.online, g.clients, f"{g.lag:,}", duration(g.lag_ms)) for g in worst_first],
        )
    ]


def _lag_sections(lag: GroupLag) -> list[Section]:
    return [
        Table(
            [
                "topic",
                "broker",
                "queue",
                "broker offset",
                "consumer offset",
                "diff",
                "inflight",
                "last time",
                "lag time",
            ],
            [
                (
                    q.topic,
                    q.broker_name,
                    q.queue_id,
                    q.broker_offset,
                    q.consumer_offset,
                    q.diff,
                    q.inflight,
                    ms_time(q.last_timestamp),
                    duration(q.lag_ms),
                )
                for q in lag.queues
            ],
            title=f"Group {lag.group}",
        ),
        Fields(
            [
                ("consume TPS", lag.consume_tps),
                ("diff total", lag.diff_total),
                ("inflight total", lag.inflight_total),
                ("lag time", duration(lag.lag_ms)),
            ]
        ),
    ]


def _connections_sections(c: GroupConnections) -> list[Section]:
    return [
        Fields(
            [
                ("group", c.group),
                ("online", c.online),
                ("consume type", c.consume_type),
                ("message model", c.message_model),
                ("consume from", c.consume_from_where),
            ]
        ),
        Table(
            ["client id", "address", "language", "version", "broker"],
            [(x.client_id, x.address, x.language, x.version, x.broker) for x in c.clients],
            title="Clients",
        ),
        Table(
            ["topic", "expression", "type"],
            [(s.topic, s.expression, s.expression_type) for s in c.subscriptions],
            title="Subscriptions",
        ),
    ]


def _client_sections(c: ClientRunningInfo) -> list[Section]:
    head: list[tuple[str, object]] = [("address", c.address), ("broker", c.broker)]
    if c.error is not None:
        return [Fields([*head, ("error", c.error)], title=f"Client {c.client_id}")]
    subs = ", ".join(f"{s.topic} ({s.expression})" for s in c.subscriptions)
    return [
        Fields(
            [
                *head,
                ("version", c.client_version or c.version),
                ("language", c.language),
                ("consume type", c.consume_type),
                ("orderly", c.orderly),
                ("started", ms_time(c.start_timestamp)),
                ("subscriptions", subs),
            ],
            title=f"Client {c.client_id}",
        ),
        Table(
            [
                "topic",
                "broker",
                "queue",
                "commit offset",
                "cached",
                "cached MiB",
                "locked",
                "last pull",
                "last consume",
            ],
            [
                (
                    q.topic,
                    q.broker_name,
                    q.queue_id,
                    q.commit_offset,
                    q.cached_count,
                    q.cached_size_mib,
                    q.locked,
                    ms_time(q.last_pull_timestamp),
                    ms_time(q.last_consume_timestamp),
                )
                for q in c.queues
            ],
            title="Queues",
        ),
        Table(
            [
                "topic",
                "pull RT ms",
                "pull TPS",
                "consume RT ms",
                "consume OK TPS",
                "failed TPS",
                "failed (1 h)",
            ],
            [
                (
                    r.topic,
                    f"{r.pull_rt:.2f}",
                    f"{r.pull_tps:.2f}",
                    f"{r.consume_rt:.2f}",
                    f"{r.consume_ok_tps:.2f}",
                    f"{r.consume_failed_tps:.2f}",
                    r.consume_failed_msgs,
                )
                for r in c.rates
            ],
            title="Rates (last minute)",
        ),
        *(
            [
                Table(
                    ["topic", "broker", "queue", "problem", "for ms", "unlock tries"],
                    [
                        (p.topic, p.broker_name, p.queue_id, p.kind, p.for_ms, p.unlock_tries)
                        for p in c.problems
                    ],
                    title="Problems",
                )
            ]
            if c.problems
            else []
        ),
    ]


def _clients_sections(g: GroupClients) -> list[Section]:
    head = Fields(
        [("group", g.group), ("clients", len(g.clients)), ("same subscriptions", g.same_subscriptions)]
    )
    return [head, *(section for c in g.clients for section in _client_sections(c))]


def _describe_sections(d: GroupDescription) -> list[Section]:
    sections: list[Section] = [Fields([("group", d.group), ("brokers", ", ".join(d.brokers))], title="Group")]
    if d.config is not None:
        sections.append(_config_fields(d.config))
    return [*sections, *_connections_sections(d.connections), *_lag_sections(d.lag)]


def _reset_sections(r: OffsetReset) -> list[Section]:
    target = {
        "time": f"time {ms_time(r.target.value)}",
        "offset": f"offset {r.target.value}",
        "snapshot": f"the offsets saved at {ms_time(r.target.value)}",
    }.get(r.target.kind, str(r.target.kind))
    title = f"Offsets of {r.group} {'would move (dry run)' if r.dry_run else 'moved'} to {target}"
    return [
        Table(
            ["topic", "broker", "queue", "current", "target"],
            [(q.topic, q.broker_name, q.queue_id, q.current, q.target) for q in r.queues],
            title=title,
        )
    ]


def _snapshot_sections(snap: OffsetSnapshot) -> list[Section]:
    return [
        Table(
            ["topic", "broker", "queue", "offset"],
            [(q.topic, q.broker_name, q.queue_id, q.current) for q in snap.queues],
            title=f"Offsets of {snap.group} before the {snap.reason} at {ms_time(snap.taken_ms)}",
        )
    ]


def _rebalance_sections(r: GroupRebalances) -> list[Section]:
    flapping = {(f.topic, f.broker_name, f.queue_id) for f in r.flapping}
    title = f"{len(r.moves)} queue move(s) of {r.group}"
    if r.flapping:
        title += (
            f"; {len(r.flapping)} queue(s) FLAPPING (more than {r.flap_moves} moves within "
            f"{duration(r.flap_window_ms)})"
        )
    if r.brokers_without_history:
        title += f"; no history on {', '.join(r.brokers_without_history)}"
    moves = Table(
        ["time", "topic", "broker", "queue", "from", "to", "flapping"],
        [
            (ms_time(m.timestamp), m.topic, m.broker_name, m.queue_id, m.from_client, m.to_client,
             "FLAPPING" if (m.topic, m.broker_name, m.queue_id) in flapping else "")
            for m in r.moves
        ],
        title=title,
    )  # fmt: skip
    holders = Table(
        ["topic", "broker", "queue", "client", "since", "online"],
        [
            (h.topic, h.broker_name, h.queue_id, h.client_id, ms_time(h.since_timestamp), h.online)
            for h in r.holders
        ],
        title="Holders",
    )
    return [moves, holders]


def _clone_sections(c: OffsetClone) -> list[Section]:
    return [
        Fields(
            [
                ("from", c.source),
                ("to", c.destination),
                ("topic", c.topic or "all"),
                ("brokers", ", ".join(c.addresses)),
            ],
            title="Offsets cloned",
        )
    ]


def _consume_mode_sections(m: ConsumeModes) -> list[Section]:
    rows = [
        (
            b.broker_name,
            b.address,
            b.mode.lower(),
            b.pop_share_queue_num if b.mode == "POP" else "",
            "set" if b.stored else "default",
        )
        for b in m.brokers
    ]
    title = f"Consume mode of {m.group} on {m.topic}"
    return [Table(["broker", "address", "mode", "pop share queues", "source"], rows, title=title)]
