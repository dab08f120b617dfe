"""``rmq topic``: create, update, list, describe, route, status, queue, delete."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.connect import (
    ClusterOpt,
    Conn,
    TargetBrokerOpt,
    TopicArg,
    WatchOpt,
    YesOpt,
    confirm,
    connected,
    key_values,
)
from cli.output import Fields, ProgressBar, Section, Table, ms_time

if TYPE_CHECKING:
    from admin.models import (
        ConsumeQueuePage,
        TopicChange,
        TopicDeletion,
        TopicDescription,
        TopicList,
        TopicRoute,
        TopicSpec,
        TopicStatus,
    )

app = typer.Typer(help="Create, inspect and delete topics.", no_args_is_help=True)

ReadOpt = Annotated[int | None, typer.Option("-r", "--read-queues", help="Read queues per broker [8].")]
WriteOpt = Annotated[int | None, typer.Option("-w", "--write-queues", help="Write queues per broker [8].")]
PermOpt = Annotated[
    int | None, typer.Option("-p", "--perm", help="Permission: 6 read+write, 4 read, 2 write [6].")
]
AttrOpt = Annotated[
    list[str] | None, typer.Option("-a", "--attr", metavar="KEY=VALUE", help="Topic attribute (repeatable).")
]
_PROGRESS_MIN = 4  # brokers: fewer finish before a bar helps


def _spec(
    topic: str,
    read: int | None,
    write: int | None,
    perm: int | None,
    order: bool | None,
    attrs: list[str] | None,
) -> TopicSpec:
    from admin.models import TopicSpec

    return TopicSpec(topic, read, write, perm, order, key_values(attrs or [], "attribute"))


@app.command("create")
@connected
def create(
    conn: Conn,
    topic: TopicArg,
    cluster: ClusterOpt = None,
    broker: TargetBrokerOpt = None,
    read_queues: ReadOpt = None,
    write_queues: WriteOpt = None,
    perm: PermOpt = None,
    order: Annotated[
        bool, typer.Option("--order", help="Ordered topic (writes ORDER_TOPIC_CONFIG).")
    ] = False,
    attr: AttrOpt = None,
) -> None:
    """Create a topic on a cluster's masters (-c) or on one broker (-b)."""
    spec = _spec(topic, read_queues, write_queues, perm, order or None, attr)
    with ProgressBar(_PROGRESS_MIN) as bar:
        result = conn.run(lambda s: s.topic_create(spec, cluster, broker, bar))
    conn.emit(result, _change_sections)


@app.command("update")
@connected
def update(
    conn: Conn,
    topic: TopicArg,
    cluster: ClusterOpt = None,
    broker: TargetBrokerOpt = None,
    read_queues: ReadOpt = None,
    write_queues: WriteOpt = None,
    perm: PermOpt = None,
    order: Annotated[
        bool | None,
        typer.Option("--order/--no-order", help="Make the topic ordered or not.", show_default=False),
    ] = None,
    attr: AttrOpt = None,
) -> None:
    """Change a topic's queues, permission, order or attributes (on the brokers of its route)."""
    spec = _spec(topic, read_queues, write_queues, perm, order, attr)
    with ProgressBar(_PROGRESS_MIN) as bar:
        result = conn.run(lambda s: s.topic_update(spec, cluster, broker, bar))
    conn.emit(result, _change_sections)


@app.command("list")
@connected
def list_(
    conn: Conn,
    cluster: ClusterOpt = None,
    all_: Annotated[
        bool, typer.Option("--all", "-a", help="Also retry, dead-letter and system topics.")
    ] = False,
) -> None:
    """Topics with their cluster, kind, queues and permission (normal topics unless --all)."""
    from admin.models import TopicKind

    kinds = None if all_ else frozenset({TopicKind.NORMAL})
    conn.show(lambda s: s.topic_list(cluster, kinds), _list_sections)


@app.command("describe")
@connected
def describe(
    conn: Conn,
    topic: TopicArg,
) -> None:
    """Route, queue offsets and consuming groups of a topic."""
    conn.show(lambda s: s.topic_describe(topic), _describe_sections)


@app.command("route")
@connected
def route(
    conn: Conn,
    topic: TopicArg,
) -> None:
    """The topic's route: brokers, addresses and queues."""
    conn.show(lambda s: s.topic_route(topic), _route_sections)


@app.command("status")
@connected
def status(
    conn: Conn,
    topic: TopicArg,
    watch: WatchOpt = None,
) -> None:
    """Min and max offset and last store time of every queue."""
    conn.show(lambda s: s.topic_status(topic), _status_sections, watch)


@app.command("queue")
@connected
def queue(
    conn: Conn,
    topic: TopicArg,
    queue_id: Annotated[int, typer.Argument(metavar="QUEUE", help="Queue id.")],
    broker_name: Annotated[
        str | None, typer.Option("--broker-name", help="The broker holding the queue (when several do).")
    ] = None,
    start: Annotated[
        int | None, typer.Option("--from", metavar="INDEX", help="First queue offset [the newest --limit].")
    ] = None,
    limit: Annotated[int, typer.Option("-l", "--limit", min=0, max=10_000, help="Units to show.")] = 20,
    watch: WatchOpt = None,
) -> None:
    """ConsumeQueue units of one queue: CommitLog offset, size and tag hash of each message."""
    conn.show(lambda s: s.topic_queue(topic, queue_id, broker_name, start, limit), _queue_sections, watch)


@app.command("delete")
@connected
def delete(
    conn: Conn,
    topic: TopicArg,
    cluster: Annotated[str | None, typer.Option("-c", "--cluster", help="Only from this cluster.")] = None,
    yes: YesOpt = False,
) -> None:
    """Delete a topic from its brokers, then from the NameServers."""
    confirm(f"delete topic {topic}", yes)
    with ProgressBar(_PROGRESS_MIN) as bar:
        result = conn.run(lambda s: s.topic_delete(topic, cluster, bar))
    conn.emit(result, _deletion_sections)


# -- layouts for people ---------------------------------------------------------------------------
def _attributes_text(attributes: dict[str, str]) -> str | None:
    """``k=v, k2=v2`` sorted by key; None (shown ``-``) when there are none."""
    return ", ".join(f"{k}={v}" for k, v in sorted(attributes.items())) or None


def _change_sections(c: TopicChange) -> list[Section]:
    from admin.models import perm_text

    return [
        Fields(
            [
                ("topic", c.topic),
                ("brokers", ", ".join(c.addresses)),
                ("read queues", c.read_queues),
                ("write queues", c.write_queues),
                ("perm", perm_text(c.perm)),
                ("order", c.order),
                ("order conf", c.order_conf),
                ("attributes", _attributes_text(c.attributes)),
            ],
            title="Topic written",
        )
    ]


def _deletion_sections(d: TopicDeletion) -> list[Section]:
    items: list[tuple[str, object]] = [("topic", d.topic), ("brokers", ", ".join(d.addresses))]
    if d.namesrvs:
        items.append(("NameServers", ", ".join(d.namesrvs)))
    return [Fields(items, title="Deleted")]


def _list_sections(result: TopicList) -> list[Section]:
    from admin.models import perm_text

    return [
        Table(
            ["topic", "kind", "cluster", "brokers", "read", "write", "perm", "order"],
            [
                (
                    t.name,
                    t.kind,
                    ", ".join(t.clusters),
                    len(t.brokers),
                    t.read_queues,
                    t.write_queues,
                    None if t.perm is None else perm_text(t.perm),
                    t.order,
                )
                for t in result.topics
            ],
        )
    ]


def _route_sections(r: TopicRoute) -> list[Section]:
    from admin.models import perm_text

    return [
        Table(
            ["cluster", "broker", "id", "address"],
            [(b.cluster, b.broker_name, i, a) for b in r.brokers for i, a in b.addresses.items()],
            title=f"Route of {r.topic}",
        ),
        Table(
            ["broker", "read queues", "write queues", "perm", "sys flag"],
            [
                (q.broker_name, q.read_queues, q.write_queues, perm_text(q.perm), q.topic_sys_flag)
                for q in r.queues
            ],
            title="Queues",
        ),
    ]


def _status_sections(s: TopicStatus) -> list[Section]:
    return [
        Table(
            ["broker", "queue", "min offset", "max offset", "messages", "last updated"],
            [
                (q.broker_name, q.queue_id, q.min_offset, q.max_offset, q.messages, ms_time(q.last_updated))
                for q in s.queues
            ],
            title=f"Topic {s.topic}",
        ),
        Fields([("messages", s.total_messages), ("put TPS", s.put_tps)]),
    ]


def _queue_sections(p: ConsumeQueuePage) -> list[Section]:
    return [
        Fields(
            [
                ("topic", p.topic),
                ("broker", f"{p.broker_name} ({p.address})"),
                ("queue", p.queue_id),
                ("min offset", p.min_offset),
                ("max offset", p.max_offset),
            ],
            title="ConsumeQueue",
        ),
        Table(
            ["index", "commitlog offset", "size", "tags code"],
            [(u.index, u.commitlog_offset, u.size, u.tags_code) for u in p.units],
            title="Units",
        ),
    ]


def _compaction_sections(d: TopicDescription) -> list[Section]:
    """How far each queue of a COMPACTION topic is compacted."""
    if d.attributes.get("cleanup.policy") != "COMPACTION":
        return []
    rows = [
        (q.broker_name, q.queue_id, q.fed_offset, q.kept, q.disk_bytes, q.compacted_offset, q.runs)
        for q in d.compaction
    ]
    headers = ["broker", "queue", "fed offset", "kept", "disk bytes", "compacted to", "runs"]
    return [Table(headers, rows, title="Compaction")]


def _describe_sections(d: TopicDescription) -> list[Section]:
    return [
        Fields(
            [
                ("topic", d.topic),
                ("kind", d.kind),
                ("order conf", d.route.order_conf),
                ("attributes", _attributes_text(d.attributes)),
            ],
            title="Topic",
        ),
        *_route_sections(d.route),
        *_status_sections(d.status),
        *_compaction_sections(d),
        Table(["group"], [(g,) for g in d.groups], title="Consuming groups"),
    ]
