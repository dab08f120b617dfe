"""Everything the CLI uses of typer that typer calls private, in this one module.

typer documents ``typer.Typer`` with ``cls=`` (subclasses of ``typer.core.TyperGroup`` and
``TyperCommand``), ``typer.Context``, ``typer.BadParameter``, ``typer.Exit`` and the settings of
``typer.Option``/``typer.Argument``; cli/lazy.py also reads what a ``Typer`` registered
(``registered_commands``, ``registered_groups``) and builds click commands with ``typer.main``. Since
0.26 typer vendors click in a private package (``typer._click``), and it has no way to choose the class
of an option or argument: click's ``cls=`` and typer's ``click_type=`` are gone, and ``parser=``
converts through pydantic like every other value (pydantic's import and schema building would add as
much again as the rest of ``rmq topic list``'s start). What the CLI needs beyond that is named here,
and tests/cli/test_typer_pin.py exercises each name, so a typer outside the pinned range fails there
first, saying which:

- click's classes as typer keeps them: ``Command`` and ``Context`` (the types declared by the typer
  methods the CLI's classes override) and the exceptions typer raises without exporting them:
  ``UsageError`` (bad usage: exit code 2), ``NoArgsIsHelpError`` (a group run bare) and
  ``MissingParameter``;
- :func:`declared`: what a parameter was declared as (typer keeps it as ``type_descriptor``);
- :func:`adopt`: an option or argument as typer built it made an instance of a subclass that only adds
  methods (cli/parameters.py), by taking that class.

The rest of the CLI takes typer's own modules from here too (``typer.core``'s classes, ``typer.models``'
``CommandInfo``/``OptionInfo`` and ``typer.main``'s builders), so this module is the one place that
names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.main import get_command, get_command_name, get_group
from typer.models import CommandInfo, OptionInfo

try:
    from typer._click.core import Command, Context
    from typer._click.exceptions import MissingParameter, NoArgsIsHelpError, UsageError
except ImportError as exc:  # a typer outside the range pyproject.toml pins
    raise ImportError(f"this typer keeps click elsewhere than cli/click_api.py expects: {exc}") from exc

__all__ = [
    "Command",
    "CommandInfo",
    "Context",
    "Declared",
    "MissingParameter",
    "NoArgsIsHelpError",
    "OptionInfo",
    "TyperArgument",
    "TyperCommand",
    "TyperGroup",
    "TyperOption",
    "UsageError",
    "adopt",
    "declared",
    "get_command",
    "get_command_name",
    "get_group",
]


@dataclass(frozen=True, slots=True)
class Declared:
    """A parameter's declared type and the ``typer.Option``/``typer.Argument`` settings about it."""

    annotation: Any
    item: Any  # the annotation, or a list's item type (None when that is not one type)
    choices: tuple[Any, ...] | None  # an enum's members
    is_path: bool
    typer_converts: bool  # a path, a file or a ``parser=``: only typer's own conversion knows how
    low: float | None
    high: float | None
    clamp: bool
    case_sensitive: bool


def declared(param: TyperOption | TyperArgument) -> Declared:
    """What ``param`` was declared as."""
    descriptor = param.type_descriptor
    info = descriptor.parameter_info
    item: Any = descriptor.annotation
    if descriptor.is_list:
        args: tuple[Any, ...] = getattr(item, "__args__", ())
        item = args[0] if len(args) == 1 else None
    return Declared(
        annotation=descriptor.annotation,
        item=item,
        choices=descriptor.choices,
        is_path=descriptor.is_path,
        typer_converts=info.parser is not None or descriptor.is_file or descriptor.is_path,
        low=info.min,
        high=info.max,
        clamp=info.clamp,
        case_sensitive=info.case_sensitive,
    )


def adopt(param: object, option: type[TyperOption], argument: type[TyperArgument]) -> None:
    """Make ``param``, an option or argument as typer built it, an ``option`` or ``argument`` (subclasses
    that add methods only, so typer's state stays as it is); any other parameter stays as it is."""
    if type(param) is TyperOption:
        param.__class__ = option
    elif type(param) is TyperArgument:
        param.__class__ = argument
