"""How ``--help`` names values: no type labels (``<bool>``, ``<str>``, ``<list[str]>``), no braces around
arguments (``{GROUP}``), as git and kubectl write their usage.

typer (>= 0.29) labels every option with its Python type and braces required arguments in the usage
line. Here a flag shows no value, a choice its choices (``table|json|text``), a number ``N``, any
other option its metavar or its name in capitals (``--group GROUP``); arguments are ``GROUP`` when
required and ``[GROUP]`` when not. Applied once to typer's parameter classes, when the command tree
is imported.

Descriptions wrap at the terminal's width, not where a docstring's lines happen to end: typer (in its
rich mode) keeps the single line breaks of a command's first paragraph where a group lists its
commands, and of every later paragraph on the command's own page. :func:`reflow` joins them before a
page is drawn; blank lines still separate paragraphs, and a ``\\b`` paragraph, or one whose lines are
indented or start with ``- ``, keeps its lines.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TypeVar

from typer._click.core import Command, Context
from typer._click.formatting import HelpFormatter
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

C = TypeVar("C", bound=Command)


def _option_value(self: TyperOption, ctx: Context) -> str | None:
    if self.metavar is not None:
        return self.metavar
    if self.is_flag or self.count:
        return None
    desc = self.type_descriptor
    if desc.is_choice and desc.choices is not None:
        return "|".join(str(getattr(c, "value", c)) for c in desc.choices)
    if desc.annotation in (int, float):
        return "N"
    return (self.name or "value").upper()


def _argument_value(self: TyperArgument, ctx: Context) -> str | None:
    return None  # the argument's name column already says it


def _argument_usage(self: TyperArgument) -> str:
    name = self.display_name_raw
    shown = name if self.required or name.startswith("[") else f"[{name}]"
    return shown + ("..." if self.nargs != 1 else "")


def _keeps_lines(paragraph: str) -> bool:
    """A paragraph laid out line by line: a ``\\b`` block, a list, or indented examples."""
    lines = paragraph.splitlines()
    return paragraph.startswith("\b") or any(line.startswith(("- ", " ")) for line in lines)


def reflow(text: str) -> str:
    """``text`` with the line breaks inside each paragraph turned into spaces."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if _keeps_lines(p) else " ".join(p.split()) for p in paragraphs)


def _reflowing(
    format_help: Callable[[C, Context, HelpFormatter], None],
) -> Callable[[C, Context, HelpFormatter], None]:
    def format_reflowed(self: C, ctx: Context, formatter: HelpFormatter) -> None:
        listed = getattr(self, "list_commands", None)  # a group: the descriptions it lists, too
        names = listed(ctx) if listed is not None else []
        for command in [self, *(self.get_command(ctx, n) for n in names)]:  # type: ignore[attr-defined]
            if command is not None and command.help:
                command.help = reflow(command.help)
        format_help(self, ctx, formatter)

    return format_reflowed


def install() -> None:
    """Use these names in every help page (a typer without the hooks keeps its own), and wrap every
    description at the terminal's width."""
    if hasattr(TyperOption, "display_type_rich"):
        TyperOption.display_type_rich = _option_value  # type: ignore[method-assign]
        TyperArgument.display_type_rich = _argument_value  # type: ignore[method-assign,assignment]
    if hasattr(TyperArgument, "_usage_display_name"):
        TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign]
    TyperCommand.format_help = _reflowing(TyperCommand.format_help)  # type: ignore[method-assign,assignment]
    TyperGroup.format_help = _reflowing(TyperGroup.format_help)  # type: ignore[method-assign,assignment]
