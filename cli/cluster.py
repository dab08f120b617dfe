"""``rmq cluster``: the brokers of each cluster, a health summary, and the load figures of
``mqadmin exportMetrics``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from admin.units import size
from cli import cluster_local
from cli.connect import (
    ClusterOpt,
    Conn,
    WatchOpt,
    connected,
)
from cli.output import Section, Table

if TYPE_CHECKING:
    from admin.models import BrokerInfo, ClusterStatus, HAStatus
    from admin.models.broker_ops import BrokerMetrics, ClusterMetrics, MetricsTotals

app = typer.Typer(help="Clusters: brokers, their load and health; a local one to run.", no_args_is_help=True)
app.command("up")(cluster_local.up)
app.command("down")(cluster_local.down)
app.command("ps")(cluster_local.ps)


@app.command("list")
@connected
def list_(
    conn: Conn,
    cluster: ClusterOpt = None,
    watch: WatchOpt = None,
) -> None:
    """Every broker with its role, version, TPS, disk use and CommitLog range."""
    conn.show(lambda s: s.cluster_list(cluster), lambda r: [brokers_table(r.brokers)], watch)


@app.command("status")
@connected
def status(
    conn: Conn,
    cluster: ClusterOpt = None,
    watch: WatchOpt = None,
) -> None:
    """NameServers, a summary per cluster, and the brokers that do not answer."""
    conn.show(lambda s: s.cluster_status(cluster), _status_sections, watch)


@app.command("metrics")
@connected
def metrics(
    conn: Conn,
    cluster: ClusterOpt = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "-f", "--file", metavar="FILE", help="Also write them as mqadmin exportMetrics' metrics.json."
        ),
    ] = None,
) -> None:
    """Load of each master (rates, yesterday's and the last 24 hours' messages, half and delayed
    messages, disk, topics, groups, client versions) and the cluster's sums."""
    result = conn.run(lambda s: s.cluster_metrics(cluster))
    if file is not None:
        from admin.errors import BadInput
        from cli.mqadmin.render_broker import metrics_json

        try:
            file.write_text(metrics_json(result), encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"{file}: cannot be written: {exc.strerror or exc}") from None
        sys.stderr.write(f"wrote {file}\n")
    conn.emit(result, _metrics_sections)


LOAD_COLUMNS = ["broker", "address", "in TPS", "out TPS", "half TPS", "delay TPS",
                "in yesterday", "out yesterday", "half 24h", "delay 24h"]  # fmt: skip
BROKER_COLUMNS = ["broker", "CPUs", "memory KB", "commitlog disk", "queue disk", "avg msg bytes",
                  "topics", "groups", "clients"]  # fmt: skip


def _load_row(name: str, address: str, f: BrokerMetrics | MetricsTotals) -> tuple[object, ...]:
    return (name, address, f.normal_in_tps, f.normal_out_tps, f.trans_in_tps, f.schedule_in_tps,
            f.normal_one_day_in, f.normal_one_day_out, f.trans_one_day_in, f.schedule_one_day_in)  # fmt: skip


def _broker_row(b: BrokerMetrics) -> tuple[object, ...]:
    from cli.mqadmin.render import version_desc

    size = None if b.message_average_size is None else round(b.message_average_size, 1)
    clients = ", ".join(f"{c.language} {version_desc(c.version)}" for c in b.clients)
    return (b.broker_name, b.cpu_num, b.total_mem_kbytes, _ratio_text(b.commitlog_disk_ratio),
            _ratio_text(b.consume_queue_disk_ratio), size, b.topics, b.groups, clients)  # fmt: skip


def _ratio_text(text: str | None) -> str | None:
    """A ratio the broker reports as text, as a percentage like ``cluster list`` shows disk use."""
    try:
        return _ratio(float(text)) if text is not None else None
    except ValueError:
        return text


def _metrics_sections(m: ClusterMetrics) -> list[Section]:
    load = [_load_row(b.broker_name, b.address, b) for b in m.brokers] + [_load_row("total", "", m.totals)]
    return [
        Table(LOAD_COLUMNS, load, title=f"Cluster {m.cluster}: load (TPS over the last minute)"),
        Table(BROKER_COLUMNS, [_broker_row(b) for b in m.brokers], title="Brokers"),
    ]


def _ratio(value: float | None) -> str | None:
    return None if value is None else f"{value:.1%}"


def brokers_table(brokers: list[BrokerInfo], title: str = "") -> Table:
    return Table(
        [
            "cluster",
            "broker",
            "id",
            "role",
            "address",
            "version",
            "put TPS",
            "get TPS",
            "disk",
            "commitlog",
            "replication",
            "state",
        ],
        [
            (
                b.cluster,
                b.broker_name,
                b.broker_id,
                b.role,
                b.address,
                b.version,
                b.put_tps,
                b.get_tps,
                _ratio(b.disk_ratio),
                None
                if b.commitlog_max_offset is None
                else f"{size(b.commitlog_min_offset or 0)} - {size(b.commitlog_max_offset)}",
                replication_text(b.ha),
                "ok" if b.reachable else f"DOWN: {b.error}",
            )
            for b in brokers
        ],
        title=title,
    )


def replication_text(ha: HAStatus | None) -> str | None:
    """Master: slaves in sync and the largest lag; slave: lag behind the master, or that it is away."""
    if ha is None:
        return None
    if ha.master:
        if not ha.slaves:
            return "no slave"
        return f"{ha.in_sync_slaves}/{ha.slaves} in sync, lag {size(ha.lag_bytes or 0)}"
    state = f"lag {size(ha.lag_bytes)}" if ha.lag_bytes is not None else "replicating"
    if not ha.master_alive:
        state = "master away"
    return state + (f", cut {size(ha.truncated_bytes)}" if ha.truncated_bytes else "")


def _status_sections(s: ClusterStatus) -> list[Section]:
    sections: list[Section] = [
        Table(
            ["NameServer", "state"],
            [(n.address, "ok" if n.reachable else f"DOWN: {n.error}") for n in s.namesrvs],
        ),
        Table(
            ["cluster", "brokers", "masters", "down", "put TPS", "get TPS", "max disk"],
            [
                (c.name, c.brokers, c.masters, c.unreachable, c.put_tps, c.get_tps, _ratio(c.max_disk_ratio))
                for c in s.clusters
            ],
        ),
    ]
    down = [b for b in s.brokers if not b.reachable]
    if down:
        sections.append(brokers_table(down, title="Brokers not answering"))
    return sections
