"""How ``--help`` names values: no type labels (``<bool>``, ``<str>``, ``<list[str]>``), no braces around
arguments (``{GROUP}``), as git and kubectl write their usage.

typer (>= 0.29) labels every option with its Python type and braces required arguments in the usage
line. Here a flag shows no value, a choice its choices (``table|json|text``), a number ``N``, any
other option its metavar or its name in capitals (``--group GROUP``); arguments are ``GROUP`` when
required and ``[GROUP]`` when not. Applied once to typer's parameter classes, when the command tree
is imported.
"""

from __future__ import annotations

from typer._click.core import Context
from typer.core import TyperArgument, TyperOption


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


def install() -> None:
    """Use these names in every help page (a typer without the hooks keeps its own)."""
    if hasattr(TyperOption, "display_type_rich"):
        TyperOption.display_type_rich = _option_value  # type: ignore[method-assign]
        TyperArgument.display_type_rich = _argument_value  # type: ignore[method-assign,assignment]
    if hasattr(TyperArgument, "_usage_display_name"):
        TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign]
