"""The ``rmq`` command tree: global options, the command groups, and the console entry point.

Each command group lives in its own module (``cli/store.py`` ...) and is mounted here by name in
:data:`COMMANDS`; a module is imported only when its noun runs or help lists them all (click's lazy
group, cli/lazy.py), and heavy imports (admin services, textual, grpc, pyspark) stay inside the command
functions, so ``rmq topic list`` starts fast. mqadmin's commands are hidden camelCase aliases
(``rmq updateTopic …``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from cli.click_api import Command, Context, get_command
from cli.errors import run
from cli.lazy import LazyGroup, builders, single

PROG = "rmq"


@dataclass(slots=True)
class CliState:
    """Global options, shared with every command as ``ctx.obj``."""

    debug: bool = False


# name -> "module:attr" (a Typer app or a command function), in the order help lists them
COMMANDS = {
    "store": "cli.store:app",
    "bench": "cli.bench:app",
    "up": "cli.run:up",
    # `rmq namesrv` and `rmq broker` still run a server when no subcommand follows (cli/server_group.py)
    "namesrv": "cli.namesrv_kv:app",
    "broker": "cli.broker_cmd:app",
    "cluster": "cli.cluster:app",
    "controller": "cli.controller:app",
    "topic": "cli.topic:app",
    "group": "cli.group:app",
    "metadata": "cli.metadata:app",
    "message": "cli.message:app",
    "dlq": "cli.dlq:app",
    "retry": "cli.retry:app",
    "transaction": "cli.transaction:app",
    "timer": "cli.timer:app",
    "spark": "cli.spark:app",
    "acl": "cli.acl:app",
    "auth": "cli.auth:app",
    "profile": "cli.profile:app",
    "wait": "cli.wait:app",
    "completion": "cli.completion:app",
    "dashboard": "cli.dashboard:dashboard",
    "__complete-names": "cli.completion:complete_names",
}
HIDDEN = frozenset({"__complete-names"})


class RootGroup(LazyGroup):
    """Routes every invocation, the console script's and the test runner's, through ``errors.run``;
    its nouns load lazily, and a name it does not hold is tried as a hidden mqadmin alias."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.builders = builders(COMMANDS, HIDDEN)

    def list_commands(self, ctx: Context) -> list[str]:
        nouns = super().list_commands(ctx)
        return nouns + [name for name in _mqadmin_names() if name not in nouns]  # hidden: help skips them

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and (command := _mqadmin_alias(cmd_name)) is not None:
            self.commands[cmd_name] = command
        return command

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


def _mqadmin_names() -> list[str]:
    from cli.mqadmin.commands import COMMANDS as MQADMIN_COMMANDS

    return [c.name for c in MQADMIN_COMMANDS]


def _mqadmin_alias(name: str) -> Command | None:
    """A hidden command that hands its arguments, untouched, to mqadmin's ``name``."""
    if name not in _mqadmin_names():
        return None

    def alias(ctx: typer.Context) -> int:
        from cli.mqadmin import run as run_mqadmin

        return run_mqadmin(name, ctx.args, prog=PROG)

    return single(
        alias,
        name,
        hidden=True,
        add_help_option=False,
        help=f"mqadmin {name} (same options and output).",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


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


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from broker import compiled

        build = "hot modules compiled with mypyc" if compiled.running() else "plain Python sources"
        typer.echo(f"{PROG} {version('rmqkit')} ({build})")
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
    code: int = get_command(app).main(argv, PROG, standalone_mode=False)
    return code
