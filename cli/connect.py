"""What every cluster command shares: connection options (declared once: :func:`connected`), settings
resolution (admin.profiles), running the admin service, ``--watch``, confirmations for destructive
commands, secrets read without the command line, and time input.

Kept light (typer and cli.output only at import): the admin service is imported when a command runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from cli.output import OutputFormat, Section, emit

if TYPE_CHECKING:
    from admin.profiles import Settings
    from admin.service import AdminService

T = TypeVar("T")
V = TypeVar("V")

NamesrvOpt = Annotated[
    str | None,
    typer.Option(
        "-n", "--namesrv", metavar="ADDR[;ADDR]", help=r"NameServer address(es) \[env NAMESRV_ADDR, profile]."
    ),
]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile", metavar="NAME", help=r"Profile of ~/.config/rmq/config.toml \[env RMQ_PROFILE]."
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout", metavar="SECONDS", help=r"Seconds to wait for each answer \[profile, default 5]."
    ),
]
OutOpt = Annotated[
    OutputFormat | None,
    typer.Option(
        "--output", "-o", case_sensitive=False, help=r"table, json or text \[profile, default table]."
    ),
]
BrokerOpt = Annotated[
    str | None,
    typer.Option(
        "-b", "--broker", metavar="ADDR", help=r"Broker address \[default: the only broker registered]."
    ),
]
# for commands that write to a set of brokers (topic create, acl, metadata apply, ...)
TargetBrokerOpt = Annotated[
    str | None,
    typer.Option(
        "-b", "--broker", metavar="ADDR",
        help=r"Only this broker \[default: the brokers of -c, or of the only cluster].",
    ),
]  # fmt: skip
ClusterOpt = Annotated[str | None, typer.Option("-c", "--cluster", help="Cluster name.")]
WatchOpt = Annotated[
    float | None,
    typer.Option("--watch", metavar="SECONDS", min=0.1, help="Refresh every SECONDS until Ctrl-C."),
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
TopicArg = Annotated[str, typer.Argument(metavar="TOPIC", help="Topic name.", show_default=False)]
GroupArg = Annotated[str, typer.Argument(metavar="GROUP", help="Consumer group name.", show_default=False)]
TopicOpt = Annotated[str | None, typer.Option("-t", "--topic", metavar="TOPIC", help="Only this topic.")]


_CONNECTION_OPTIONS = {"namesrv": NamesrvOpt, "profile": ProfileOpt, "timeout": TimeoutOpt, "output": OutOpt}


@dataclass(frozen=True, slots=True)
class Conn:
    """Resolved settings of one command: where to connect and how to print."""

    settings: Settings
    fmt: OutputFormat

    def run(self, fn: Callable[[AdminService], Awaitable[T]]) -> T:
        """Open the admin service, call ``fn`` with it, close it."""

        # the result is handed out beside the task, not as its result: when asyncio.run puts back the
        # SIGINT handler, the signal module formats the old handler's repr, and with it the main
        # task's and its result's (a whole list of 10,000 topics)
        out: list[T] = []

        async def main() -> None:
            from admin.service import AdminService

            settings = self.settings
            async with AdminService(settings.namesrv, settings.timeout, settings.security) as service:
                out.append(await fn(service))

        asyncio.run(main())
        return out[0]

    def emit(self, result: T, sections: Callable[[T], Sequence[Section]]) -> None:
        emit(self.fmt, result, functools.partial(sections, result))

    def emit_found(
        self,
        views: list[V],
        holds: Callable[[V], object],
        missing: str,
        sections: Callable[[list[V]], Sequence[Section]],
    ) -> None:
        """Print each broker's view of one thing; exit 1 with ``missing`` when no view ``holds`` it."""
        from admin.errors import NotFound

        if not any(holds(v) for v in views):
            raise NotFound(missing)
        self.emit(views, sections)

    def show(
        self,
        fetch: Callable[[AdminService], Awaitable[T]],
        sections: Callable[[T], Sequence[Section]],
        watch: float | None = None,
    ) -> None:
        """Fetch and print once, or every ``watch`` seconds until Ctrl-C (one connection throughout)."""
        if watch is None:
            self.emit(self.run(fetch), sections)
            return

        async def loop(service: AdminService) -> None:
            clear = sys.stdout.isatty() and self.fmt is not OutputFormat.JSON
            while True:
                result = await fetch(service)
                if clear:
                    sys.stdout.write("\x1b[2J\x1b[H")
                emit(self.fmt, result, functools.partial(sections, result), lines=True)  # JSON Lines
                sys.stdout.flush()
                await asyncio.sleep(watch)

        with contextlib.suppress(KeyboardInterrupt):
            self.run(loop)


def connect(
    namesrv: str | None = None,
    profile: str | None = None,
    timeout: float | None = None,
    output: OutputFormat | None = None,
) -> Conn:
    """Settings by precedence: flags > environment > profile > defaults."""
    from admin.profiles import resolve

    settings = resolve(
        namesrv=namesrv, output=output.value if output else None, timeout=timeout, profile=profile
    )
    return Conn(settings, OutputFormat(settings.output))


def connected(command: Callable[..., T]) -> Callable[..., T]:
    """``command(conn, …)`` as a typer command whose options end with the connection options.

    The options every cluster command takes (``-n/--namesrv``, ``--profile``, ``--timeout``,
    ``-o/--output``) are declared here once; the command receives them resolved, as a :class:`Conn`,
    in its first parameter.
    """
    signature = inspect.signature(command, eval_str=True)
    own = list(signature.parameters.values())[1:]  # after `conn`
    options = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=None)
        for name, kind in _CONNECTION_OPTIONS.items()
    ]

    @functools.wraps(command)
    def with_conn(**values: Any) -> T:
        conn = connect(*(values.pop(name) for name in _CONNECTION_OPTIONS))
        return command(conn, **values)

    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + options
    with_conn.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    with_conn.__annotations__ = {p.name: p.annotation for p in params}
    return with_conn


def connected_as(function: Callable[..., T], first: object, doc: str) -> Callable[..., T]:
    """``function(first, conn, …)`` as a :func:`connected` command that ``doc`` describes: one function
    behind commands that differ only in ``first`` (create or update)."""
    command = functools.partial(function, first)
    command.__doc__ = doc
    return connected(command)


def confirm(action: str, yes: bool) -> None:
    """Ask before a destructive action on a terminal; elsewhere require ``--yes``."""
    from admin.errors import BadInput

    if yes:
        return
    if not sys.stdin.isatty():
        raise BadInput(f"refusing to {action} without confirmation: pass --yes")
    if not typer.confirm(f"Really {action}?", default=False):
        raise typer.Abort()


def secret_or_prompt(
    env: str | None, path: Path | None, required: bool, option: str, prompt: str
) -> str | None:
    """A secret from ``--OPTION-env VAR`` or ``--OPTION-file PATH``; when neither is given and it is
    ``required``, from a hidden prompt, typed twice (on a terminal only)."""
    from admin.errors import BadInput
    from admin.security import read_secret

    what = option.replace("-", " ")
    secret = read_secret(env, path, os.environ, what)
    if secret is not None or not required:
        return secret
    if not os.isatty(0):
        raise BadInput(f"give the {what} with --{option}-env or --{option}-file")
    prompted: str = typer.prompt(prompt, hide_input=True, confirmation_prompt=True)
    return prompted


def key_values(items: Sequence[str], what: str) -> dict[str, str]:
    """``KEY=VALUE`` arguments to a dict."""
    from admin.errors import BadInput

    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"{what} {item!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out
