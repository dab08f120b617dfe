"""Help descriptions wrap at the terminal's width, not where a docstring's lines happen to end.

typer (in its rich mode) keeps the single line breaks of a command's first paragraph where a group
lists its commands, and of every later paragraph on the command's own page. :func:`reflow` joins
them; the CLI's group and command classes (cli/lazy.py, cli/parameters.py) apply it to a page's
descriptions before drawing it (:func:`reflow_page`). Blank lines still separate paragraphs, and a
``\\b`` paragraph, or one whose lines are indented or start with ``- ``, keeps its lines.
"""

from __future__ import annotations

import inspect

from cli.click_api import Command, Context


def _keeps_lines(paragraph: str) -> bool:
    """A paragraph laid out line by line: a ``\\b`` block, a list, or indented examples."""
    lines = paragraph.splitlines()
    return paragraph.startswith("\b") or any(line.startswith(("- ", " ")) for line in lines)


def reflow(text: str) -> str:
    """``text`` with the line breaks inside each paragraph turned into spaces."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if _keeps_lines(p) else " ".join(p.split()) for p in paragraphs)


def reflow_page(command: Command, ctx: Context) -> None:
    """Reflow the descriptions ``command``'s help page shows: its own, and those of the commands it
    lists when it is a group."""
    listed = getattr(command, "list_commands", None)
    names = listed(ctx) if listed is not None else []
    for shown in [command, *(command.get_command(ctx, n) for n in names)]:  # type: ignore[attr-defined]
        if shown is not None and shown.help:
            shown.help = reflow(shown.help)
