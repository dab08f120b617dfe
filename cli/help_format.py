"""Help descriptions wrap at the terminal's width, not where a docstring's lines happen to end.

typer (in its rich mode) keeps the single line breaks of a command's first paragraph where a group
lists its commands, and of every later paragraph on the command's own page. :func:`reflow` joins
them; the CLI's command and group classes (cli/parameters.py's ``OwnParameters``) apply it to their
description when they are built. Blank lines still separate paragraphs, and a ``\\b`` paragraph, or
one whose lines are indented or start with ``- ``, keeps its lines.
"""

from __future__ import annotations

import inspect


def _keeps_lines(paragraph: str) -> bool:
    """A paragraph laid out line by line: a ``\\b`` block, a list, or indented examples."""
    lines = paragraph.splitlines()
    return paragraph.startswith("\b") or any(line.startswith(("- ", " ")) for line in lines)


def reflow(text: str) -> str:
    """``text`` with the line breaks inside each paragraph turned into spaces."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if _keeps_lines(p) else " ".join(p.split()) for p in paragraphs)
