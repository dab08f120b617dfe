"""``rmq namesrv``, ``rmq broker`` and ``rmq up``: run servers in the foreground until Ctrl-C.

Help texts escape ``[`` as ``\\[``: typer renders them as Rich markup, where ``[default: …]`` would be
taken for a tag and vanish.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from admin.errors import BadInput, OperationFailed

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.namesrv.config import NamesrvConfig
    from broker.node import Node, NodePlan
    from broker.server.config import BrokerConfig

ConfigOpt = Annotated[
    Path | None, typer.Option("-c", "--config", help="TOML file or RocketMQ broker.conf properties file.")
]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="Override one setting: KEY=VALUE (repeatable).")
]
HttpPortOpt = Annotated[
    int | None, typer.Option("--http-port", help="HTTP /metrics, /healthz, /readyz port (0 = any free port).")
]
NoHttpOpt = Annotated[bool, typer.Option("--no-http", help="Do not serve the HTTP endpoint.")]
GrpcPortOpt = Annotated[
    int | None,
    typer.Option(
        "--grpc-port",
        help=r"RocketMQ 5 gRPC port \[default: 8081; any free port when the broker port is 0] "
        "(0 = any free port, -1 = off).",
    ),
]
StoreOpt = Annotated[Path | None, typer.Option("--store", help=r"Store folder \[default: ~/.rmqkit/store].")]
LogOpt = Annotated[str, typer.Option("--log-level", help="DEBUG, INFO, WARNING or ERROR.")]


def _logging(level: str) -> None:
    name = level.upper()
    if name not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise BadInput(f"--log-level must be DEBUG, INFO, WARNING or ERROR, not {level!r}")
    logging.basicConfig(level=name, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _namesrv_config(
    config: Path | None, overrides: list[str], port: int | None, folder: Path | None = None
) -> NamesrvConfig:
    from broker.namesrv.config import NamesrvConfig
    from broker.settings import SettingsError, SettingsTarget, parse_overrides, read_settings_file

    # kvConfigPath / configStorePath in the file or --set still win over the folder
    cfg = NamesrvConfig() if folder is None else NamesrvConfig.in_folder(folder.expanduser())
    target = SettingsTarget(
        cfg.controller, cfg
    )  # the embedded controller's keys too; shared ones: the NameServer's
    try:
        if config is not None:
            target.apply(read_settings_file(config), str(config))
        target.apply(parse_overrides(overrides), "--set")
        if port is not None:
            cfg.listen_port = port
        cfg.validate()
    except (SettingsError, ValueError) as exc:
        raise BadInput(str(exc)) from None
    return cfg


def _run(plan: NodePlan, banner: list[str], after_start: Callable[[Node], None] | None = None) -> None:
    from broker.node import Node, NodeStartError, run_until_signal
    from broker.remoting.server import install_uvloop
    from broker.store.errors import StoreError

    install_uvloop()
    try:
        asyncio.run(run_until_signal(Node(plan), banner, after_start))
    except (NodeStartError, StoreError) as exc:
        raise OperationFailed(str(exc)) from None


def _http(http_port: int | None, no_http: bool, default: int | None) -> int | None:
    """The HTTP port to serve: the flag (0 = any free port), else ``default``; None = off."""
    if no_http:
        return None
    return default if http_port is None else http_port


def namesrv(
    port: Annotated[int | None, typer.Option("--port", help=r"Listen port \[default: 9876].")] = None,
    config: ConfigOpt = None,
    set_: SetOpt = None,
    http_port: HttpPortOpt = None,
    no_http: NoHttpOpt = False,
    log_level: LogOpt = "INFO",
    folder: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            metavar="DIR",
            help=r"Folder of kvConfig.json and namesrv.properties \[default: ~/.rmqkit/namesrv].",
        ),
    ] = None,
) -> None:
    """Run a NameServer."""
    from broker.node import NodePlan

    _logging(log_level)
    cfg = _namesrv_config(config, set_ or [], port, folder)
    plan = NodePlan(namesrv=cfg, http_host=cfg.listen_host, http_port=_http(http_port, no_http, 9877))
    _run(plan, ["rmqkit NameServer is up"])


def _broker_plan(
    config: Path | None,
    overrides: list[str],
    store: Path | None,
    port: int | None,
    namesrv_addr: str | None,
    env: dict[str, str],
) -> NodePlan:
    from broker.node import NodePlan
    from broker.server.config import load_broker_settings
    from broker.settings import SettingsError

    try:
        broker_cfg, store_cfg = load_broker_settings(
            config, overrides, env, store_path=store, listen_port=port
        )
    except SettingsError as exc:
        raise BadInput(str(exc)) from None
    if namesrv_addr:
        broker_cfg.namesrv_addr = namesrv_addr
    # in a configuration file httpPort=0 turns the endpoint off
    return NodePlan(
        broker=broker_cfg,
        store=store_cfg,
        http_host=broker_cfg.listen_host,
        http_port=broker_cfg.http_port or None,
    )


def broker(
    config: ConfigOpt = None,
    namesrv_addr: Annotated[
        str | None, typer.Option("-n", "--namesrv", help="NameServer address(es), ';'-separated.")
    ] = None,
    port: Annotated[int | None, typer.Option("--port", help=r"Listen port \[default: 10911].")] = None,
    store: StoreOpt = None,
    set_: SetOpt = None,
    http_port: HttpPortOpt = None,
    no_http: NoHttpOpt = False,
    grpc_port: GrpcPortOpt = None,
    log_level: LogOpt = "INFO",
) -> None:
    """Run a broker."""
    _logging(log_level)
    plan = _broker_plan(config, set_ or [], store, port, namesrv_addr, dict(os.environ))
    if grpc_port is not None and plan.broker is not None:
        plan.broker.grpc_port = grpc_port
    plan.http_port = _http(http_port, no_http, plan.http_port)
    _run(plan, ["rmqkit broker is up"])


def up(
    store: StoreOpt = None,
    namesrv_port: Annotated[
        int, typer.Option("--namesrv-port", help="NameServer port (0 = any free port).")
    ] = 9876,
    broker_port: Annotated[
        int | None,
        typer.Option("--broker-port", help=r"Broker port (0 = any free port) \[listenPort, default 10911]."),
    ] = None,
    http_port: HttpPortOpt = None,
    no_http: NoHttpOpt = False,
    grpc_port: GrpcPortOpt = None,
    config: ConfigOpt = None,
    set_: SetOpt = None,
    log_level: LogOpt = "WARNING",
    dashboard: Annotated[
        bool,
        typer.Option(
            "--dashboard", help="Run the live dashboard against the node; quitting it stops the node."
        ),
    ] = False,
    refresh: Annotated[
        float,
        typer.Option("--refresh", metavar="SECONDS", help="Dashboard refresh (at least 1; 0 = only on r)."),
    ] = 3.0,
) -> None:
    """Run a NameServer and a broker in one process: a real RocketMQ on this machine.

    The HA port follows the broker port (+1), and --broker-port 0 puts HA and gRPC on free ports too.
    With a store other than ~/.rmqkit/store, the NameServer keeps its files in the store's namesrv/.
    """
    _logging(log_level)
    # the broker registers with the embedded NameServer, whatever NAMESRV_ADDR says
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    plan = up_plan(config, set_ or [], store, broker_port, namesrv_port, env)
    if grpc_port is not None and plan.broker is not None:
        plan.broker.grpc_port = grpc_port
    plan.http_port = _http(http_port, no_http, plan.http_port)
    if dashboard:
        from cli.dashboard import run_with_node

        run_with_node(plan, refresh, read_only=False, after_start=_save_local_profile)
        return
    _run(plan, ["rmqkit is up (NameServer + broker in one process); Ctrl-C stops it"], _save_local_profile)


def up_plan(
    config: Path | None,
    overrides: list[str],
    store: Path | None,
    broker_port: int | None,
    namesrv_port: int,
    env: dict[str, str],
) -> NodePlan:
    """What ``rmq up`` runs: the broker of the settings and a NameServer beside it."""
    from broker.namesrv.config import NamesrvConfig

    plan = _broker_plan(config, overrides, store, broker_port, None, env)
    assert plan.store is not None and plan.broker is not None
    plan.namesrv = NamesrvConfig.in_folder(namesrv_folder(plan.store.store_path))
    plan.namesrv.listen_port = namesrv_port
    embed_namesrv(plan.broker, plan.namesrv)
    return plan


def embed_namesrv(broker: BrokerConfig, namesrv: NamesrvConfig) -> None:
    """The NameServer of ``rmq up`` takes its broker's access control, TLS and listen address. With
    access control on, the broker signs its registrations with innerClientAuthenticationCredentials;
    unset, they are the ACL file's first admin account or the initAuthenticationUser."""
    from broker.settings import SettingsError

    if broker.access_control and not broker.inner_client_authentication_credentials.strip():
        try:
            own = broker.own_credentials()
        except SettingsError as exc:
            raise BadInput(str(exc)) from None
        if own is None:
            raise BadInput(
                "rmq up with access control: its broker must sign its registrations with its NameServer; "
                "set innerClientAuthenticationCredentials (an admin account of aclFile, or a Super user)"
            )
        broker.inner_client_authentication_credentials = json.dumps(
            {"accessKey": own.access_key, "secretKey": own.secret_key}
        )
    broker.copy_security_to(namesrv)
    namesrv.listen_host = broker.listen_host


def namesrv_folder(store_path: Path) -> Path:
    """Where ``rmq up`` keeps its NameServer's kvConfig.json and namesrv.properties: beside the default
    store (~/.rmqkit/namesrv), else inside the node's own store folder, so nodes never share them."""
    from broker.namesrv.config import DEFAULT_HOME
    from broker.server.config import DEFAULT_STORE

    if store_path.expanduser().resolve() == DEFAULT_STORE.resolve():
        return DEFAULT_HOME
    return store_path.expanduser() / "namesrv"


def _save_local_profile(node: Node) -> None:
    """``rmq up`` leaves a ``local`` profile behind, so ``rmq topic list`` needs no ``-n``."""
    from admin.profiles import save_local_profile

    if node.namesrv is not None:
        try:
            save_local_profile(f"{node.plan.advertise_host}:{node.namesrv.port}")
        except OSError as exc:  # a read-only home must not stop the servers
            logging.getLogger(__name__).warning("could not write the local profile: %s", exc)
