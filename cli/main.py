"""The ``rmq`` command tree: global options, the command groups, and the console entry point.

Each command group lives in its own module (``cli/store.py`` ...) and is mounted here. Modules are
imported at start, so they must stay light: heavy imports (admin services, textual, grpc, pyspark)
go inside the command functions, which keeps ``rmq --help`` fast.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from cli import (
    bench,
    broker_cmd,
    cluster,
    completion,
    dlq,
    group,
    message,
    namesrv_kv,
    profile,
    retry,
    store,
    topic,
    wait,
)
from cli import run as run_commands
from cli.errors import run

PROG = "rmq"


@dataclass(slots=True)
class CliState:
    """Global options, shared with every command as ``ctx.obj``."""

    debug: bool = False


class RootGroup(TyperGroup):
    """Routes every invocation, the console script's and the test runner's, through ``errors.run``."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        state = CliState()
        invoke = functools.partial(
            super().main,
            args,
            prog_name or PROG,
            complete_var,
            standalone_mode=False,
            windows_expand_args=windows_expand_args,
            obj=state,
            **extra,
        )
        code = run(invoke, prog=PROG, debug=lambda: state.debug)
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    cls=RootGroup,
    name=PROG,
    help="Run and operate Apache RocketMQ: NameServer, broker and the operator's tools in one command.",
    epilog="Exit codes: 0 ok, 1 operation failed, 2 usage error, 3 cannot connect, 4 timeout.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(store.app, name="store")
app.add_typer(bench.app, name="bench")
app.command("up")(run_commands.up)
# `rmq namesrv` and `rmq broker` still run a server when no subcommand follows (cli/server_group.py)
app.add_typer(namesrv_kv.app, name="namesrv")
app.add_typer(broker_cmd.app, name="broker")
app.add_typer(cluster.app, name="cluster")
app.add_typer(topic.app, name="topic")
app.add_typer(group.app, name="group")
app.add_typer(message.app, name="message")
app.add_typer(dlq.app, name="dlq")
app.add_typer(retry.app, name="retry")
app.add_typer(profile.app, name="profile")
app.add_typer(wait.app, name="wait")
app.add_typer(completion.app, name="completion")
app.command(completion.NAMES_COMMAND, hidden=True)(completion.complete_names)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"{PROG} {version('rmqkit')}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of errors.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Show the version and exit."),
    ] = False,
) -> None:
    """Global options; they reach commands and the error handler through ``ctx.obj``."""
    ctx.ensure_object(CliState).debug = debug


def main(argv: Sequence[str] | None = None) -> int:
    """Console script ``rmq``: run the command line, return its exit code."""
    code: int = typer.main.get_command(app).main(argv, PROG, standalone_mode=False)
    return code
