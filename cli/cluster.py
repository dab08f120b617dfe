"""``rmq cluster``: the brokers of each cluster, and a health summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from cli import cluster_local
from cli.connect import ClusterOpt, NamesrvOpt, OutOpt, ProfileOpt, TimeoutOpt, WatchOpt, connect
from cli.output import Section, Table

if TYPE_CHECKING:
    from admin.models import BrokerInfo, ClusterStatus, HAStatus

app = typer.Typer(help="Clusters: brokers, their load and health; a local one to run.", no_args_is_help=True)
app.command("up")(cluster_local.up)
app.command("down")(cluster_local.down)
app.command("ps")(cluster_local.ps)


@app.command("list")
def list_(
    cluster: ClusterOpt = None,
    watch: WatchOpt = None,
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: OutOpt = None,
) -> None:
    """Every broker with its role, version, TPS, disk use and CommitLog range."""
    conn = connect(namesrv, profile, timeout, output)
    conn.show(lambda s: s.cluster_list(cluster), lambda r: [brokers_table(r.brokers)], watch)


@app.command("status")
def status(
    cluster: ClusterOpt = None,
    watch: WatchOpt = None,
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: OutOpt = None,
) -> None:
    """NameServers, a summary per cluster, and the brokers that do not answer."""
    conn = connect(namesrv, profile, timeout, output)
    conn.show(lambda s: s.cluster_status(cluster), _status_sections, watch)


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
                else f"{b.commitlog_min_offset}-{b.commitlog_max_offset}",
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
        return f"{ha.in_sync_slaves}/{ha.slaves} in sync, lag {ha.lag_bytes or 0} B"
    state = f"lag {ha.lag_bytes} B" if ha.lag_bytes is not None else "replicating"
    if not ha.master_alive:
        state = "master away"
    return state + (f", cut {ha.truncated_bytes} B" if ha.truncated_bytes else "")


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
