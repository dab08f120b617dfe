"""``rmq controller``: run a controller (no subcommand), or ask one: ``status``, ``elect``, ``clean``.

Controllers decide the master of each broker group of brokers in controller mode; see the README's
failover section.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from admin.errors import BadInput
from cli import run
from cli.connect import (
    ClusterOpt,
    Conn,
    WatchOpt,
    YesOpt,
    confirm,
    connected,
)
from cli.output import Fields, Section, Table
from cli.server_group import server_group

if TYPE_CHECKING:
    from admin.models.controller import ControllerStatus, Election


def serve(
    port: Annotated[int | None, typer.Option("--port", help=r"Listen port \[default: 9878].")] = None,
    config: run.ConfigOpt = None,
    set_: run.SetOpt = None,
    folder: Annotated[
        Path | None,
        typer.Option(
            "--dir", metavar="DIR", help=r"Folder of the controller's state \[default: ~/.rmqkit/controller]."
        ),
    ] = None,
    log_level: run.LogOpt = "INFO",
) -> None:
    """Run a controller (one alone, or one of three with controllerPeers)."""
    from broker.controller.config import ControllerConfig
    from broker.node import NodePlan
    from broker.settings import SettingsError, SettingsTarget, parse_overrides, read_settings_file

    run._logging(log_level)
    cfg = ControllerConfig()
    target = SettingsTarget(cfg)
    try:
        if config is not None:
            target.apply(read_settings_file(config), str(config))
        target.apply(parse_overrides(set_ or []), "--set")
        if port is not None:
            cfg.listen_port = port
        if folder is not None:
            cfg.controller_store_path = folder.expanduser()
        cfg.validate()
    except (SettingsError, ValueError) as exc:
        raise BadInput(str(exc)) from None
    run._run(NodePlan(controller=cfg), ["rmqkit controller is up"])


app = server_group(serve, help="Run a controller (automatic failover), or ask one about broker groups.")


ControllerAddrOpt = Annotated[
    str,
    typer.Option(
        "-a", "--controller", metavar="ADDR[;ADDR]", envvar="RMQ_CONTROLLER", help="Controller address(es)."
    ),
]
BrokerNameOpt = Annotated[str | None, typer.Option("-b", "--broker-name", help="Only this broker group.")]


@app.command("status")
@connected
def status(
    conn: Conn,
    controller: ControllerAddrOpt = "127.0.0.1:9878",
    broker_name: BrokerNameOpt = None,
    cluster: ClusterOpt = None,
    watch: WatchOpt = None,
) -> None:
    """The controller leader and each broker group's master, epochs and SyncStateSet."""
    names = [broker_name] if broker_name else []
    conn.show(lambda s: s.controller_status(controller.split(";"), names, cluster), _status_sections, watch)


@app.command("elect")
@connected
def elect(
    conn: Conn,
    broker_name: Annotated[str, typer.Option("-b", "--broker-name", help="The broker group.")],
    cluster: Annotated[str, typer.Option("-c", "--cluster", help="Its cluster.")],
    broker_id: Annotated[
        int | None,
        typer.Option("--broker-id", help="Make this broker master (default: the controller picks)."),
    ] = None,
    controller: ControllerAddrOpt = "127.0.0.1:9878",
) -> None:
    """Elect a master for a broker group now (mqadmin electMaster)."""
    election = conn.run(lambda s: s.elect_master(controller.split(";"), cluster, broker_name, broker_id))
    conn.emit(election, _election_sections)


@app.command("clean")
@connected
def clean(
    conn: Conn,
    broker_name: Annotated[str, typer.Option("-b", "--broker-name", help="The broker group.")],
    cluster: ClusterOpt = None,
    ids: Annotated[
        str | None,
        typer.Option("--ids", metavar="ID[;ID]", help="Only these broker ids (default: every one)."),
    ] = None,
    living: Annotated[bool, typer.Option("--living", help="Also brokers that are alive.")] = False,
    controller: ControllerAddrOpt = "127.0.0.1:9878",
    yes: YesOpt = False,
) -> None:
    """Make the controllers forget brokers of a group (mqadmin cleanBrokerMetadata)."""
    try:
        broker_ids = [int(i) for i in (ids or "").replace(",", ";").split(";") if i.strip()]
    except ValueError:
        raise BadInput(f"--ids {ids!r}: broker ids are numbers separated by ';'") from None
    confirm(f"forget {'brokers ' + ids if ids else 'every broker'} of {broker_name} on the controllers", yes)
    conn.run(
        lambda s: s.clean_broker_metadata(controller.split(";"), broker_name, cluster, broker_ids, living)
    )
    done: dict[str, object] = {"broker_name": broker_name, "cleaned": broker_ids or "all"}
    conn.emit(done, lambda d: [Fields([("broker", d["broker_name"]), ("cleaned", d["cleaned"])])])


def _status_sections(status: ControllerStatus) -> list[Section]:
    meta = status.controller
    return [
        Fields(
            [
                ("group", meta.group),
                (
                    "leader",
                    f"{meta.leader_id} at {meta.leader_address}" if meta.leader_id else "none (no majority)",
                ),
                ("peers", ", ".join(meta.peers)),
            ],
            title="Controllers",
        ),
        Table(
            ["broker", "id", "address", "role", "in sync", "alive", "master epoch", "SyncStateSet epoch"],
            [
                (
                    g.broker_name,
                    r.broker_id,
                    r.address,
                    "master" if r.broker_id == g.master_id else "replica",
                    "yes" if r.in_sync else "no",
                    "yes" if r.alive else "no",
                    g.master_epoch,
                    g.sync_state_set_epoch,
                )
                for g in status.groups
                for r in g.replicas
            ],
            title="Broker groups",
        ),
    ]


def _election_sections(e: Election) -> list[Section]:
    return [
        Fields(
            [
                ("broker", e.broker_name),
                ("master", f"{e.master_id} at {e.master_address}"),
                ("master epoch", e.master_epoch),
                ("SyncStateSet", ", ".join(map(str, e.sync_state_set))),
                ("SyncStateSet epoch", e.sync_state_set_epoch),
            ],
            title="Election",
        )
    ]
