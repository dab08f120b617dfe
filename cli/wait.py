"""``rmq wait ready``: block until a cluster serves, for scripts and CI after ``rmq up &``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.connect import NamesrvOpt, OutOpt, ProfileOpt, connect
from cli.output import Fields, Section

if TYPE_CHECKING:
    from admin.models import Readiness

app = typer.Typer(help="Wait for a cluster to become ready.", no_args_is_help=True)


@app.command("ready")
def ready(
    timeout: Annotated[float, typer.Option("--timeout", help="Give up (exit 4) after SECONDS.")] = 30.0,
    http: Annotated[
        str | None,
        typer.Option("--http", metavar="ADDR", help="Poll http://ADDR/readyz only (host:port or a URL)."),
    ] = None,
    brokers: Annotated[
        int, typer.Option("--brokers", help="Wait for at least this many brokers, masters and slaves.")
    ] = 1,
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    output: OutOpt = None,
) -> None:
    """Poll until ready: the NameServer answers, the brokers are registered and answer, and their
    HTTP /readyz (port from the broker's httpPort) says ready where it is reachable."""
    conn = connect(namesrv, profile, None, output)
    conn.emit(conn.run(lambda s: s.wait_ready(timeout, http, brokers)), _sections)


def _sections(r: Readiness) -> list[Section]:
    return [
        Fields(
            [
                ("ready", r.ready),
                ("checked", f"{r.method} {r.target}"),
                ("detail", r.detail),
                ("waited", f"{r.waited_ms} ms"),
            ]
        )
    ]
