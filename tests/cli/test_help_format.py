"""Every ``--help`` page names values without type labels or braces, fits the terminal (60, 80 and
120 columns), and wraps its descriptions at the terminal's width, never where a docstring's lines end."""

from __future__ import annotations

import itertools
import re

import pytest
import typer
from typer.testing import CliRunner

from cli.click_api import Command, Context
from cli.help_format import reflow
from cli.main import HIDDEN, app

TYPE_LABEL = re.compile(r"<(bool|str|int|float|list\[[^]]*\]|path|[a-z]+\|[a-z|]+)>|\{[A-Z_]+\}")
WIDE = 1000  # columns: no description needs wrapping, so any line it spans more than one is baked in
BOX = ("│", "╭", "╰")
CELL_GAP = re.compile(r"\s{2,}")


def _pages() -> list[list[str]]:
    """The argument lists that print every help page of the command tree, at every depth."""
    pages: list[list[str]] = []

    def walk(command: Command, path: list[str]) -> None:
        pages.append(path)
        ctx = Context(command)
        names = command.list_commands(ctx) if hasattr(command, "list_commands") else []
        for name in names:
            sub = command.get_command(ctx, name)  # type: ignore[attr-defined]
            if sub is not None and not sub.hidden and not (not path and name in HIDDEN):
                walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return pages


def _help(page: list[str], columns: int) -> list[str]:
    result = CliRunner().invoke(app, [*page, "--help"], env={"COLUMNS": str(columns), "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def _baked_breaks(lines: list[str]) -> list[str]:
    """Lines that continue the one before them although the terminal had room for them."""
    found = []
    for before, line in itertools.pairwise(lines):
        if line.startswith("│"):  # a row of a table: a cell's second line is a row of one cell
            cells = CELL_GAP.split(line.strip(" │"))
            if len(cells) == 1 and cells[0] and line.startswith("│  "):
                found.append(cells[0])
        elif line.strip() and before.strip() and not before.startswith(BOX):
            found.append(line.strip())
    return found


PAGES = _pages()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: " ".join(p) or "rmq")
def test_help_has_no_type_labels_and_wraps_at_the_terminal_width(page: list[str]) -> None:
    assert not _baked_breaks(_help(page, WIDE))
    for columns in (60, 80, 120):
        lines = _help(page, columns)
        assert not TYPE_LABEL.search("\n".join(lines))
        assert max(map(len, lines), default=0) <= columns


def test_the_page_walk_reaches_nested_commands() -> None:
    assert ["auth", "user", "copy"] in PAGES and len(PAGES) > 100


def test_reflow_joins_lines_and_keeps_paragraphs_and_laid_out_blocks() -> None:
    text = """First line
        goes on.

        Second paragraph
        too.

        \b
        rmq up
        rmq topic list

        - one
        - two"""
    assert reflow(text) == (
        "First line goes on.\n\nSecond paragraph too.\n\n\b\nrmq up\nrmq topic list\n\n- one\n- two"
    )
