"""A fast start for ``rmq``: click's lazy-group pattern over typer apps.

:class:`LazyGroup` is a click group whose ``list_commands`` names its commands and whose
``get_command`` builds one on first use (click's documented way to load subcommands lazily). The root
(cli/main.py) builds a noun (``topic`` …) by importing its module only when that noun runs, or when
help or completion lists them all; a noun's group (:func:`verbs`) builds only the verb (or subgroup)
that runs, because typer reads the signature of every command function of a group to build it. Every
command and group built is one of the CLI's ``cls=`` subclasses of typer's ``TyperCommand`` and
``TyperGroup`` (cli/parameters.py). Besides those, what is used of typer is ``Typer`` and what it
registered, and typer's ``get_command``/``get_group`` (through cli/click_api.py).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Mapping
from typing import Any

import typer

from cli.click_api import (
    Command,
    CommandInfo,
    Context,
    TyperCommand,
    TyperGroup,
    UsageError,
    get_command,
    get_command_name,
    get_group,
)
from cli.parameters import Command as LeafCommand
from cli.parameters import OwnParameters

Builder = Callable[[], Command]


class LazyGroup(OwnParameters, TyperGroup):
    """A group whose commands in :attr:`builders` are built when first asked for."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.builders: dict[str, Builder] = {}

    def list_commands(self, ctx: Context) -> list[str]:
        return [*self.commands, *(name for name in self.builders if name not in self.commands)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in self.builders:
            command = self.commands[cmd_name] = self.builders[cmd_name]()
        return command

    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except UsageError:
            # a name it does not hold: build them all, so typer's "Did you mean …?" knows every name
            if any(name not in self.commands for name in self.builders):
                for name in self.list_commands(ctx):
                    self.get_command(ctx, name)
                return super().resolve_command(ctx, args)
            raise


def load(spec: str, name: str, *, hidden: bool = False) -> Command:
    """The click command for ``"module:attr"``: a Typer app (as :func:`verbs`) or a command function."""
    module, _, attr = spec.partition(":")
    target = getattr(importlib.import_module(module), attr)
    command = verbs(target) if isinstance(target, typer.Typer) else single(target, name, hidden=hidden)
    command.name = name
    return command


def single(function: Callable[..., Any], name: str, *, hidden: bool = False, **settings: Any) -> Command:
    """A typer command function as a click command."""
    holder = typer.Typer(add_completion=False)  # `rmq completion` is the way, not per-command flags
    holder.command(name, cls=LeafCommand, hidden=hidden, **settings)(function)
    return get_command(holder)


def verbs(app: typer.Typer) -> Command:
    """``app``'s click group with each command and subgroup built on first use."""
    bare = copy.copy(app)
    bare.registered_commands = []
    bare.registered_groups = []
    bare.info = copy.copy(app.info)
    bare.info.cls = LazyGroup
    group = get_group(bare)
    assert isinstance(group, LazyGroup)
    for info in app.registered_commands:
        group.builders[_name(info)] = _command_builder(app, info)
    for sub in app.registered_groups:
        assert sub.typer_instance is not None and isinstance(sub.name, str)
        group.builders[sub.name] = _group_builder(sub.typer_instance, sub.name)
    return group


def _name(info: CommandInfo) -> str:
    assert info.callback is not None
    return info.name or get_command_name(info.callback.__name__)


def _command_builder(app: typer.Typer, info: CommandInfo) -> Builder:
    def build() -> Command:
        holder = typer.Typer(add_completion=False, rich_markup_mode=app.rich_markup_mode)
        own = copy.copy(info)
        if info.cls in (None, TyperCommand):  # typer's default: the same with the CLI's parameters
            own.cls = LeafCommand
        holder.registered_commands = [own]
        return get_command(holder)

    return build


def _group_builder(app: typer.Typer, name: str) -> Builder:
    def build() -> Command:
        group = verbs(app)
        group.name = name
        return group

    return build


def builders(specs: Mapping[str, str], hidden: frozenset[str]) -> dict[str, Builder]:
    """Builders for ``name -> "module:attr"``."""
    return {name: _loader(spec, name, name in hidden) for name, spec in specs.items()}


def _loader(spec: str, name: str, hidden: bool) -> Builder:
    return lambda: load(spec, name, hidden=hidden)
