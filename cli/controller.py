"""``rmq controller``: run a controller (no subcommand), or ask one: ``status``, ``elect``, ``clean``.

Controllers decide the master of each broker group of brokers in controller mode; see the README's
failover section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from admin.errors import BadInput
from cli import run
from cli.server_group import server_group


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
    from broker.server.node import NodePlan
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
