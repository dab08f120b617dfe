"""A command group that runs a server when no subcommand is given: ``rmq broker`` and ``rmq namesrv``.

``rmq broker -c FILE`` keeps running a broker exactly as before, while ``rmq broker status`` reaches
the admin verbs. The group's options are the run command's own (taken from its signature, so they
are declared once, in cli/run.py); combining them with a subcommand is a usage error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer


def server_group(runner: Callable[..., None], help: str) -> typer.Typer:
    """A group whose callback is ``runner`` when invoked without a subcommand."""
    signature = inspect.signature(runner, eval_str=True)
    defaults = {p.name: p.default for p in signature.parameters.values()}

    def callback(ctx: typer.Context, **options: Any) -> None:
        if ctx.invoked_subcommand is None:
            runner(**options)
            return
        given = [
            p.opts[-1]
            for p in ctx.command.params
            if p.name in defaults and options[p.name] != defaults[p.name]
        ]
        if given:
            flags = ", ".join(given)
            ctx.fail(f"{flags} only apply when running the server, not with '{ctx.invoked_subcommand}'")

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    params = [ctx_param, *signature.parameters.values()]
    callback.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    callback.__annotations__ = {p.name: p.annotation for p in params}
    callback.__doc__ = runner.__doc__
    app = typer.Typer(help=help, invoke_without_command=True, no_args_is_help=False)
    app.callback(invoke_without_command=True)(callback)
    return app
