"""``rmq completion show|install``, and the hidden ``rmq __complete-names`` the scripts call.

The scripts are generated from the command tree by :mod:`cli.completion_gen` (``make completions``
refreshes the copies in completions/). Topic and group names complete from the active profile's
cluster with a short timeout; any failure just completes nothing.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Shell completion for bash, zsh and fish.", no_args_is_help=True)
NAMES_COMMAND = "__complete-names"
NAMES_TIMEOUT = 1.0  # seconds: a shell waiting on a completion must not hang


class Shell(StrEnum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def install_path(shell: Shell, home: Path) -> Path:
    """Where each shell loads completions from without further setup (zsh: add the folder to fpath)."""
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return {
        Shell.BASH: data / "bash-completion" / "completions" / "rmq",
        Shell.ZSH: home / ".zfunc" / "_rmq",
        Shell.FISH: config / "fish" / "completions" / "rmq.fish",
    }[shell]


def _detect() -> Shell:
    from admin.errors import BadInput

    name = Path(os.environ.get("SHELL", "")).name
    if name not in Shell.__members__.values():
        raise BadInput(f"cannot tell the shell from SHELL={name or '(unset)'}: name it (bash, zsh or fish)")
    return Shell(name)


ShellArg = Annotated[Shell | None, typer.Argument(help=r"bash, zsh or fish \[default: from $SHELL].")]


@app.command("show")
def show(shell: ShellArg = None) -> None:
    """Print the completion script."""
    from cli.completion_gen import render

    typer.echo(render(shell or _detect()), nl=False)


@app.command("install")
def install(shell: ShellArg = None) -> None:
    """Write the completion script where the shell finds it."""
    from cli.completion_gen import render

    chosen = shell or _detect()
    path = install_path(chosen, Path.home())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(chosen), encoding="utf-8")
    typer.echo(f"wrote {path}")
    if chosen is Shell.ZSH:
        typer.echo("add to ~/.zshrc, before compinit:  fpath=(~/.zfunc $fpath)")
    typer.echo("open a new shell to use it")


def complete_names(kind: Annotated[str, typer.Argument(help="topics or groups")]) -> None:
    """Topic or group names, one per line, for the completion scripts (silent on any failure)."""
    import asyncio

    from admin.errors import AdminError
    from admin.profiles import resolve

    async def names() -> list[str]:
        from admin.service import AdminService

        settings = resolve(timeout=NAMES_TIMEOUT)
        async with AdminService(settings.namesrv, NAMES_TIMEOUT, settings.security) as service:
            return await (service.topic_names() if kind == "topics" else service.group_names())

    try:
        found = asyncio.run(asyncio.wait_for(names(), NAMES_TIMEOUT * 2))
    except (AdminError, TimeoutError, OSError):
        return
    typer.echo("\n".join(found))
