"""``rmq dashboard``: the live Textual dashboard (admin/tui); ``rmq up --dashboard`` runs it against
the node it starts. textual is imported only when the dashboard runs, so ``rmq --help`` stays light."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.connect import NamesrvOpt, ProfileOpt, TimeoutOpt

if TYPE_CHECKING:
    from broker.acl.client import ClientSecurity
    from broker.node import Node, NodePlan

RefreshOpt = Annotated[
    float,
    typer.Option(
        "--refresh", metavar="SECONDS", help="Seconds between refreshes (at least 1; 0 = only on r)."
    ),
]
ReadOnlyOpt = Annotated[bool, typer.Option("--read-only", help="Hide every action that changes the cluster.")]
ControllerOpt = Annotated[
    str | None,
    typer.Option(
        "-a",
        "--controller",
        metavar="ADDR[;ADDR]",
        envvar="RMQ_CONTROLLER",
        help="Controllers the controller screen asks (default: the ones brokers in controller mode name).",
    ),
]


def check_refresh(refresh: float) -> float:
    from admin.errors import BadInput

    if refresh != 0 and refresh < 1:
        raise BadInput(f"--refresh must be 0 (manual) or at least 1 second, not {refresh:g}")
    return refresh


def require_terminal() -> None:
    """Refuse to start without a terminal on both ends: the dashboard would redraw for nobody, at full
    speed, forever."""
    import sys

    from admin.errors import BadInput

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInput("the dashboard needs a terminal (stdin and stdout); for scripts use the rmq commands")


def launch(
    namesrv: list[str],
    timeout: float,
    refresh: float,
    read_only: bool,
    profile: str | None,
    security: ClientSecurity | None = None,
    controllers: list[str] | None = None,
) -> None:
    """Import textual and run the dashboard in this terminal (with the profile's credentials and TLS)."""
    from admin.errors import BadInput

    try:
        from admin.tui import run_dashboard
    except ImportError as exc:
        raise BadInput(f"the dashboard needs textual: pip install 'rmqkit[tui]' ({exc})") from None
    run_dashboard(namesrv, timeout, refresh, read_only, profile, security, controllers or ())


def dashboard(
    refresh: RefreshOpt = 3.0,
    read_only: ReadOnlyOpt = False,
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    controller: ControllerOpt = None,
) -> None:
    """Live dashboard: cluster, topics, consumer groups, retry & DLQ, message lookup, controller mode."""
    from admin.profiles import resolve

    check_refresh(refresh)
    require_terminal()
    settings = resolve(namesrv=namesrv, timeout=timeout, profile=profile)
    controllers = [a for a in (controller or "").split(";") if a.strip()]
    launch(
        settings.namesrv,
        settings.timeout,
        refresh,
        read_only,
        settings.profile,
        settings.security,
        controllers,
    )


def _log_to_file(path: Path) -> None:
    """Send the servers' log lines to a file: on the terminal they would tear the dashboard."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)


def run_with_node(
    plan: NodePlan, refresh: float, read_only: bool, after_start: Callable[[Node], None] | None = None
) -> None:
    """Start ``plan`` in a background thread, run the dashboard against its NameServer, and stop the
    node when the dashboard quits (``rmq up --dashboard``). Logs go to ``rmq-up.log`` in the store."""
    from admin.errors import OperationFailed
    from broker.node import Node, NodeStartError

    check_refresh(refresh)
    require_terminal()
    if plan.store is not None:
        _log_to_file(Path(plan.store.store_path) / "rmq-up.log")
    node = Node(plan)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="rmq-up", daemon=True)
    thread.start()
    try:
        try:
            asyncio.run_coroutine_threadsafe(node.start(), loop).result()
        except NodeStartError as exc:
            raise OperationFailed(str(exc)) from None
        if after_start is not None:
            after_start(node)
        assert node.namesrv is not None
        launch([f"{plan.advertise_host}:{node.namesrv.port}"], 5.0, refresh, read_only, None)
    finally:
        asyncio.run_coroutine_threadsafe(node.stop(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
