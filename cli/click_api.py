"""click's API as typer ships it: the one module that names where.

typer (>= 0.26) vendors click under a private package name instead of depending on it. The classes and
exceptions named here are click's documented API (``Command``, ``Context``, ``UsageError`` …), not
typer's own internals; the CLI imports them from this module only, so a typer that moves its copy
changes one line, and tests/cli/test_typer_pin.py fails first, naming what moved.
"""

from __future__ import annotations

from typer._click.core import Command, Context
from typer._click.exceptions import BadParameter, MissingParameter, NoArgsIsHelpError, UsageError
from typer._click.formatting import HelpFormatter

__all__ = [
    "BadParameter",
    "Command",
    "Context",
    "HelpFormatter",
    "MissingParameter",
    "NoArgsIsHelpError",
    "UsageError",
]
