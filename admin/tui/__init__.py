"""The live Textual dashboard (``rmq dashboard``): one screen per file in :mod:`admin.tui.screens`.

Screens talk only to the admin service, never to sockets. Importing this package imports textual, so
the CLI imports it inside the command.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from admin.tui.app import DashboardApp

if TYPE_CHECKING:
    from broker.acl.client import ClientSecurity


def run_dashboard(
    namesrv: Sequence[str],
    timeout: float,
    refresh: float = 3.0,
    read_only: bool = False,
    profile: str | None = None,
    security: ClientSecurity | None = None,
    controllers: Sequence[str] = (),
) -> None:
    """Run the dashboard in this terminal until the user quits."""
    from admin.service import AdminService

    addrs = list(namesrv)
    DashboardApp(
        lambda: AdminService(addrs, timeout, security),  # security: the profile's ACL credentials and TLS
        target=";".join(addrs) + (f" ({profile})" if profile else ""),
        refresh=refresh,
        read_only=read_only,
        deadline=timeout * 2 + 1,
        controllers=controllers,
    ).run()


__all__ = ["DashboardApp", "run_dashboard"]
