"""A fast start for ``rmq``: command groups imported when used, options converted without pydantic.

* :class:`LazyCommands` is a group's command table whose commands are built on first access. The root's
  (:func:`noun_builders`) imports a noun's module (``cli.topic`` …) and builds its click group only when
  that noun is invoked, or when help or completion lists them all; names it does not hold are tried as
  hidden mqadmin aliases (``rmq updateTopic -t T -c C``). A noun's group (:func:`lazy_group`) builds only
  the command that runs: typer reads the signature of every command function of a group to build it.
* :func:`fast_coercion` gives typer's parameters of plain types (str, bool, int, float, enums, and lists of
  them) a converter of their own. typer >= 0.28 converts every given option with a pydantic
  TypeAdapter built on first use, which costs ~100 ms of imports plus ~70 ms of schema building per
  run; the converters here behave the same for these types. Other types keep typer's conversion.

Both lean on typer internals (its vendored click, ``typer._coercion``, ``typer.core._TyperParameter``), so
pyproject.toml pins typer to the range ``tests/cli/test_typer_pin.py`` checks; that test names what moved.
"""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer
from typer._click.core import Command, Context
from typer._click.exceptions import BadParameter
from typer.core import TyperCommand

if TYPE_CHECKING:
    from typer.core import _TyperParameter
    from typer.models import CommandInfo

try:  # typer >= 0.28: runtime coercion through pydantic; older typers convert without it
    from typer._coercion import RuntimeParam
except ImportError:  # pragma: no cover - depends on the installed typer
    RuntimeParam = None  # type: ignore[assignment,misc]

Builder = Callable[[], Command]


class LazyCommands(MutableMapping[str, Command]):
    """Commands by name: ``eager`` ones as given, the others built by their ``builders`` on first access;
    with ``aliases``, any other name is looked up as an mqadmin alias."""

    def __init__(
        self, eager: Mapping[str, Command], builders: Mapping[str, Builder], *, aliases: bool = False
    ) -> None:
        self._loaded = dict(eager)
        self._builders = dict(builders)
        self._aliases = aliases
        for command in self._loaded.values():
            fast_coercion(command)

    def __getitem__(self, name: str) -> Command:
        command = self._loaded.get(name)
        if command is None:
            if name in self._builders:
                command = self._builders[name]()
            else:
                command = mqadmin_alias(name) if self._aliases else None
                if command is None:
                    raise KeyError(name)
            self._loaded[name] = command
        return command

    def __setitem__(self, name: str, command: Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._loaded.pop(name, None)
        self._builders.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self._loaded
        yield from (n for n in self._builders if n not in self._loaded)
        if self._aliases:
            yield from (n for n in alias_names() if n not in self._loaded and n not in self._builders)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def noun_builders(specs: Mapping[str, str], hidden: frozenset[str]) -> dict[str, Builder]:
    """Builders for ``name -> "module:attr"`` (a Typer app or a command function)."""
    return {name: functools.partial(_load, name, spec, name in hidden) for name, spec in specs.items()}


def _load(name: str, spec: str, hidden: bool) -> Command:
    module, _, attr = spec.partition(":")
    target = getattr(importlib.import_module(module), attr)
    if isinstance(target, typer.Typer):
        command: Command = lazy_group(target)
    else:
        holder = typer.Typer(add_completion=False)  # `rmq completion` is the way, not per-command flags
        holder.command(name, hidden=hidden)(target)
        command = typer.main.get_command(holder)
    command.name = name
    fast_coercion(command)
    return command


def lazy_group(app: typer.Typer) -> Command:
    """``app``'s click group with its commands built on first access (its subgroups, if it has any, as
    typer builds them)."""
    if app.registered_groups:
        return typer.main.get_group(app)
    bare = copy.copy(app)
    bare.registered_commands = []
    group = typer.main.get_group(bare)
    group.commands = LazyCommands(
        {},
        {
            info.name or typer.main.get_command_name(info.callback.__name__): functools.partial(
                _command, app, info
            )
            for info in app.registered_commands
            if info.callback is not None
        },
    )
    return group


def _command(app: typer.Typer, info: CommandInfo) -> Command:
    command = typer.main.get_command_from_info(
        info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
    )
    fast_coercion(command)
    return command


# -- mqadmin aliases --------------------------------------------------------------------------------
def alias_names() -> list[str]:
    from cli.mqadmin_commands import COMMANDS

    return [c.name for c in COMMANDS]


def mqadmin_alias(name: str) -> Command | None:
    """A hidden command that hands its arguments, untouched, to mqadmin's ``name``."""
    if name not in alias_names():
        return None

    def callback() -> int:
        from typer._click.globals import get_current_context

        from cli.mqadmin import run

        return run(name, get_current_context().args, prog="rmq")

    return TyperCommand(
        name,
        callback=callback,
        hidden=True,
        add_help_option=False,
        help=f"mqadmin {name} (same options and output).",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


# -- conversion without pydantic --------------------------------------------------------------------
if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _Plain(RuntimeParam):
        """Converts one value (or each of a list's) with ``convert``; failures are BadParameter."""

        convert: Callable[[Any, _TyperParameter, Context], Any]

        def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
            if isinstance(value, list | tuple):
                return [self.convert(v, param, ctx) for v in value]
            return self.convert(value, param, ctx)


def _number(kind: type[int] | type[float], low: float | None, high: float | None) -> Callable[..., Any]:
    name = "integer" if kind is int else "number"

    def convert(value: Any, param: _TyperParameter, ctx: Context) -> Any:
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise BadParameter(f"{value!r} is not a valid {name}.", ctx=ctx, param=param) from None
        if (low is not None and number < low) or (high is not None and number > high):
            bounds = f"{low if low is not None else '-inf'} to {high if high is not None else 'inf'}"
            raise BadParameter(f"{number} is not in the range {bounds}.", ctx=ctx, param=param)
        return number

    return convert


def _text(value: Any, param: _TyperParameter, ctx: Context) -> Any:
    return value.decode() if isinstance(value, bytes) else str(value)


_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
_FALSE = frozenset({"0", "false", "f", "no", "n", "off", ""})


def _flag(value: Any, param: _TyperParameter, ctx: Context) -> Any:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise BadParameter(f"{value!r} is not a valid boolean.", ctx=ctx, param=param)


def _choice(enum: type[Enum], case_sensitive: bool) -> Callable[..., Any]:
    def convert(value: Any, param: _TyperParameter, ctx: Context) -> Any:
        from typer._param_types import coerce_cli_choice

        try:
            return coerce_cli_choice(value, choices=list(enum), case_sensitive=case_sensitive, ctx=ctx)
        except ValueError as exc:
            raise BadParameter(str(exc), ctx=ctx, param=param) from None

    return convert


def _converter(param: _TyperParameter) -> Callable[..., Any] | None:
    descriptor = param.type_descriptor
    info = descriptor.parameter_info
    if info.parser is not None or descriptor.is_file or descriptor.is_path:
        return None
    annotation: Any = descriptor.annotation
    if descriptor.is_list:
        args: tuple[Any, ...] = getattr(annotation, "__args__", ())
        annotation = args[0] if len(args) == 1 else None
    if annotation is str:
        return _text
    if annotation is bool:
        return _flag
    if annotation in (int, float) and not info.clamp:
        return _number(annotation, info.min, info.max)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _choice(annotation, info.case_sensitive)
    return None


def _convert(param: Any) -> None:
    if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
        convert = _converter(param)
        if convert is not None:
            descriptor = param.type_descriptor
            param._runtime_param = _Plain(descriptor.parameter_info, descriptor.annotation, convert)


def fast_coercion(command: Command) -> None:
    """Give the plain-typed parameters of ``command`` and its subcommands pydantic-free converters
    (the help option too: click creates it on first use, so its factory is wrapped)."""
    if RuntimeParam is None:
        return
    for param in command.params:
        _convert(param)
    make_help = command.get_help_option

    def get_help_option(ctx: Context) -> Any:
        option = make_help(ctx)
        if option is not None:
            _convert(option)
        return option

    command.get_help_option = get_help_option  # type: ignore[method-assign]
    subcommands = getattr(command, "commands", None)
    if isinstance(subcommands, dict):  # LazyCommands converts what it builds itself
        for sub in subcommands.values():
            fast_coercion(sub)
