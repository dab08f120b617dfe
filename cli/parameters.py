"""The CLI's option and argument classes: values converted without pydantic, and help that names
values as git and kubectl do.

**Conversion.** typer (>= 0.28) converts every given value with a pydantic TypeAdapter built on first
use: pydantic's imports and its schema building cost more than the rest of ``rmq topic list``
(docs/benchmarks.md). For the types the CLI declares (str, bool, int and float with optional bounds,
enums, and lists of them) the conversion is a line each, so :class:`Option` and :class:`Argument` override
``process_value`` (click's documented step: convert, check required, run the callback) to do it
directly. Parameters of other types (paths, files, custom parsers) keep typer's conversion.

**Help.** typer labels every option with its Python type (``<bool>``, ``<list[str]>``) and braces
required arguments in the usage line (``{GROUP}``). Here a flag shows no value, a choice its choices
(``table|json|text``), a number ``N``, any other option its metavar or its name in capitals
(``--group GROUP``); arguments are ``GROUP`` when required and ``[GROUP]`` when not. A description
wraps at the terminal's width (cli/help_format.py).

The CLI's commands and groups (:class:`Command`, cli/lazy.py's ``LazyGroup``) are typer's documented
``cls=`` subclasses built on :class:`OwnParameters`: each of their parameters, as typer built it from
the signature, becomes one of these subclasses of typer's ``TyperOption``/``TyperArgument`` (they add
methods only; cli/click_api.py's ``adopt``). A test runs commands and asserts pydantic stayed unimported.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from typer import BadParameter

from cli.click_api import Command as ClickCommand
from cli.click_api import (
    Context,
    MissingParameter,
    TyperArgument,
    TyperCommand,
    TyperOption,
    adopt,
    declared,
)
from cli.help_format import reflow

Convert = Callable[[Any, Any, Context], Any]  # (value, parameter, context) -> converted value

_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
_FALSE = frozenset({"0", "false", "f", "no", "n", "off", ""})


def _text(value: Any, param: Any, ctx: Context) -> Any:
    return value.decode() if isinstance(value, bytes) else str(value)


def _flag(value: Any, param: Any, ctx: Context) -> Any:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise BadParameter(f"{value!r} is not a valid boolean.", ctx=ctx, param=param)


def _number(kind: type[int] | type[float], low: float | None, high: float | None) -> Convert:
    name = "integer" if kind is int else "number"

    def convert(value: Any, param: Any, ctx: Context) -> Any:
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise BadParameter(f"{value!r} is not a valid {name}.", ctx=ctx, param=param) from None
        if (low is not None and number < low) or (high is not None and number > high):
            bounds = f"{low if low is not None else '-inf'} to {high if high is not None else 'inf'}"
            raise BadParameter(f"{number} is not in the range {bounds}.", ctx=ctx, param=param)
        return number

    return convert


def _choice(enum: type[Enum], case_sensitive: bool) -> Convert:
    def fold(text: str, ctx: Context) -> str:
        if ctx.token_normalize_func is not None:
            text = ctx.token_normalize_func(text)
        return text if case_sensitive else text.casefold()

    def convert(value: Any, param: Any, ctx: Context) -> Any:
        if isinstance(value, enum):
            return value
        wanted = fold(str(value), ctx)
        for member in enum:
            if fold(str(member.value), ctx) == wanted:
                return member
        names = ", ".join(repr(fold(str(m.value), ctx)) for m in enum)
        raise BadParameter(f"{value!r} is not one of {names}.", ctx=ctx, param=param)

    return convert


def _converter(param: TyperOption | TyperArgument) -> Convert | None:
    """The plain converter for ``param``'s type, or None when typer's own conversion is needed."""
    kind = declared(param)
    if kind.typer_converts:
        return None
    if kind.item is str:
        return _text
    if kind.item is bool:
        return _flag
    if kind.item in (int, float) and not kind.clamp:
        return _number(kind.item, kind.low, kind.high)
    if isinstance(kind.item, type) and issubclass(kind.item, Enum):
        return _choice(kind.item, kind.case_sensitive)
    return None


def _process(param: Option | Argument, convert: Convert, ctx: Context, value: Any) -> Any:
    """click's ``process_value`` steps with ``convert``: convert, check required, run the callback."""
    many = param.multiple or param.nargs == -1
    if value is None:
        value = () if many else None
    elif many and isinstance(value, str):
        raise BadParameter("Value must be an iterable.", ctx=ctx, param=param)
    elif isinstance(value, list | tuple):
        value = [convert(v, param, ctx) for v in value]
    else:
        value = convert(value, param, ctx)
    if param.required and param.value_is_missing(value):
        raise MissingParameter(ctx=ctx, param=param)
    if param.callback is not None:
        value = param.callback(ctx, param, value)
    return value


class Option(TyperOption):
    """An option: plain conversion; its value named by metavar, choices, ``N`` or its name."""

    def process_value(self, ctx: Context, value: Any) -> Any:
        convert = _converter(self)
        return super().process_value(ctx, value) if convert is None else _process(self, convert, ctx, value)

    def display_type_rich(self, ctx: Context) -> str | None:
        if self.metavar is not None:
            return self.metavar
        if self.is_flag or self.count:
            return None
        kind = declared(self)
        if kind.choices is not None:
            return "|".join(str(getattr(c, "value", c)) for c in kind.choices)
        if kind.annotation in (int, float):
            return "N"
        return (self.name or "value").upper()


class Argument(TyperArgument):
    """An argument: plain conversion; ``NAME`` in usage when required, ``[NAME]`` when not."""

    def process_value(self, ctx: Context, value: Any) -> Any:
        convert = _converter(self)
        return super().process_value(ctx, value) if convert is None else _process(self, convert, ctx, value)

    def display_type_rich(self, ctx: Context) -> str | None:
        return None  # the argument's name column already says it

    def get_usage_pieces(self, ctx: Context) -> list[str]:
        name = self.display_name_raw
        shown = name if self.required or name.startswith("[") else f"[{name}]"
        return [shown + ("..." if self.nargs != 1 else "")]


class OwnParameters(ClickCommand):
    """A command or group whose parameters, its help option (made on first use) too, are this module's
    :class:`Option` and :class:`Argument`, and whose description wraps at the terminal's width."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            adopt(param, Option, Argument)
        if self.help:
            self.help = reflow(self.help)

    def get_help_option(self, ctx: Context) -> Any:
        option = super().get_help_option(ctx)
        adopt(option, Option, Argument)
        return option


class Command(OwnParameters, TyperCommand):
    """A typer command with the CLI's parameters and help."""
