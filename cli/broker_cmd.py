"""``rmq broker``: run a broker (no subcommand, as before) or administer one.

``rmq broker [-c FILE] [--port N] ...`` still runs a broker in the foreground: the group's callback
is :func:`cli.run.broker` itself, invoked only when no subcommand follows. The admin verbs are
subcommands: ``rmq broker status|runtime|producers|clean|read-ahead|config get|config set``. Giving
run options together with a subcommand is a usage error rather than being silently ignored.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from admin.units import runtime_value, size
from cli import run
from cli.connect import (
    BrokerOpt,
    ClusterOpt,
    Conn,
    TargetBrokerOpt,
    WatchOpt,
    YesOpt,
    confirm,
    connected,
    key_values,
)
from cli.output import Fields, Section, Table, ms_time
from cli.server_group import server_group

if TYPE_CHECKING:
    from admin.models import (
        BrokerInfo,
        BrokerProducers,
        BrokerRuntime,
        CleanupReport,
        ConfigChange,
        ConfigValues,
    )
    from admin.models.broker_ops import ReadAheadChanges

app = server_group(run.broker, help="Run a broker (no subcommand), or inspect and configure one.")
config_app = typer.Typer(help="Read or change a broker's configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@app.command("status")
@connected
def status(
    conn: Conn,
    broker: BrokerOpt = None,
    watch: WatchOpt = None,
) -> None:
    """A broker's role, version, TPS, disk use and CommitLog range."""
    conn.show(lambda s: s.broker_status(broker), _status_sections, watch)


@app.command("runtime")
@connected
def runtime(
    conn: Conn,
    broker: BrokerOpt = None,
    watch: WatchOpt = None,
) -> None:
    """Every runtime key the broker reports (mqadmin brokerStatus)."""
    conn.show(lambda s: s.broker_runtime(broker), _runtime_sections, watch)


@app.command("producers")
@connected
def producers(
    conn: Conn,
    broker: BrokerOpt = None,
    watch: WatchOpt = None,
) -> None:
    """Producers connected to a broker, by producer group: client, address, version, last heartbeat."""
    conn.show(lambda s: s.producer_table(broker), _producers_sections, watch)


@app.command("clean")
@connected
def clean(
    conn: Conn,
    cluster: ClusterOpt = None,
    broker: Annotated[
        str | None, typer.Option("-b", "--broker", metavar="ADDR", help="Only this broker.")
    ] = None,
    commitlog: Annotated[
        bool, typer.Option("--commitlog/--no-commitlog", help="Delete expired CommitLog files.")
    ] = True,
    consume_queues: Annotated[
        bool,
        typer.Option(
            "--consume-queues/--no-consume-queues", help="Remove queues whose messages are all gone."
        ),
    ] = True,
    unused_topics: Annotated[
        bool,
        typer.Option("--unused-topics/--no-unused-topics", help="Remove queues of topics without a config."),
    ] = True,
    yes: YesOpt = False,
) -> None:
    """Free disk now: the retention rules at once (files older than fileReservedTime; never the one
    being written), then the ConsumeQueues left without messages or without a topic. On one broker
    (-b), every broker of a cluster (-c), or every broker."""
    from admin.errors import BadInput

    if not (commitlog or consume_queues or unused_topics):
        raise BadInput("nothing to clean: every step is turned off")
    where = broker or (f"cluster {cluster}" if cluster else "every broker")
    confirm(f"delete expired files and unused queues on {where}", yes)
    done = conn.run(lambda s: s.broker_clean(cluster, broker, commitlog, consume_queues, unused_topics))
    conn.emit(done, _clean_sections)


class ReadAhead(StrEnum):
    NORMAL = "normal"
    RANDOM = "random"


@app.command("read-ahead")
@connected
def read_ahead(
    conn: Conn,
    mode: Annotated[
        ReadAhead,
        typer.Argument(
            case_sensitive=False,
            help="normal: the kernel reads CommitLog files ahead (default); random: it does not.",
            show_default=False,
        ),
    ],
    broker: TargetBrokerOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Turn the read-ahead of CommitLog files off (random: consumers mostly read old messages) or
    back on, on a broker or on every master and slave of a cluster, until the broker restarts."""
    random = mode is ReadAhead.RANDOM
    conn.emit(conn.run(lambda s: s.broker_set_read_ahead(random, cluster, broker)), _read_ahead_sections)


@config_app.command("get")
@connected
def config_get(
    conn: Conn,
    keys: Annotated[list[str] | None, typer.Argument(metavar="[KEY]...", help="Only these settings.")] = None,
    broker: BrokerOpt = None,
) -> None:
    """A broker's settings."""
    conn.show(lambda s: s.broker_config_get(broker, keys), config_sections)


@config_app.command("set")
@connected
def config_set(
    conn: Conn,
    values: Annotated[list[str], typer.Argument(metavar="KEY=VALUE...", help="Settings to change.")],
    broker: BrokerOpt = None,
    cluster: Annotated[
        str | None, typer.Option("-c", "--cluster", help="Every broker of this cluster.")
    ] = None,
) -> None:
    """Change settings at runtime (only those a broker accepts without a restart)."""
    settings = key_values(values, "setting")
    conn.emit(conn.run(lambda s: s.broker_config_set(settings, broker, cluster)), change_sections)


# -- layouts for people ---------------------------------------------------------------------------
def _status_sections(b: BrokerInfo) -> list[Section]:
    from cli.cluster import replication_text

    return [
        Fields(
            [
                ("cluster", b.cluster),
                ("broker", b.broker_name),
                ("id", b.broker_id),
                ("role", b.role),
                ("address", b.address),
                ("version", b.version),
                ("put TPS", b.put_tps),
                ("get TPS", b.get_tps),
                ("disk", None if b.disk_ratio is None else f"{b.disk_ratio:.1%}"),
                ("commitlog min", None if b.commitlog_min_offset is None else size(b.commitlog_min_offset)),
                ("commitlog max", None if b.commitlog_max_offset is None else size(b.commitlog_max_offset)),
                ("replication", replication_text(b.ha)),
                ("runtime", b.runtime.get("runtime")),
            ],
            title="Broker",
        )
    ]


def _producers_sections(p: BrokerProducers) -> list[Section]:
    from cli.mqadmin.render import version_desc

    rows = [
        (
            group,
            c.client_id,
            c.remote_address.lstrip("/"),
            c.language,
            version_desc(c.version),
            ms_time(c.last_update),
        )
        for group, clients in sorted(p.groups.items())
        for c in clients
    ]
    title = f"Producers of {p.address}"
    return [
        Table(["group", "client id", "address", "language", "version", "last heartbeat"], rows, title=title)
    ]


def _clean_sections(done: CleanupReport) -> list[Section]:
    rows = [
        (
            c.address,
            ", ".join(c.steps),
            f"{c.commitlog_min_offset_before} -> {c.commitlog_min_offset_after}",
            size(c.commitlog_min_offset_after - c.commitlog_min_offset_before),
            f"{c.disk_ratio_before:.1%} -> {c.disk_ratio_after:.1%}",
        )
        for c in done.brokers
    ]
    return [Table(["broker", "steps", "commitlog min", "bytes freed", "disk"], rows, title="Cleaned")]


def _runtime_sections(r: BrokerRuntime) -> list[Section]:
    return [Fields([(k, runtime_value(k, v)) for k, v in r.values.items()], title=f"Broker {r.address}")]


def config_sections(c: ConfigValues) -> list[Section]:
    return [Table(["key", "value"], list(c.values.items()), title=c.address)]


def change_sections(c: ConfigChange) -> list[Section]:
    return [
        Fields([("servers", ", ".join(c.addresses))], title="Changed"),
        Table(["key", "value"], list(c.values.items())),
    ]


def _read_ahead_sections(r: ReadAheadChanges) -> list[Section]:
    rows = [(c.address, c.master or "", c.remark) for c in r.brokers]
    title = f"CommitLog read-ahead {'off (random)' if r.random else 'on (normal)'}"
    return [Table(["broker", "master", "answer"], rows, title=title)]
