"""Every ``--help`` page names values without type labels or braces and fits an 80-column terminal."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from cli.click_api import Context
from cli.main import COMMANDS, HIDDEN, app

TYPE_LABEL = re.compile(r"<(bool|str|int|float|list\[[^]]*\]|path|[a-z]+\|[a-z|]+)>|\{[A-Z_]+\}")


def _pages() -> list[list[str]]:
    """The argument lists that print every help page of the command tree."""
    root = typer.main.get_command(app)
    ctx = Context(root)
    pages: list[list[str]] = [[]]
    for noun in COMMANDS:
        if noun in HIDDEN:
            continue
        command = root.get_command(ctx, noun)  # type: ignore[attr-defined]
        pages.append([noun])
        if hasattr(command, "list_commands"):
            pages += [[noun, verb] for verb in command.list_commands(ctx)]
    return pages


@pytest.mark.parametrize("page", _pages(), ids=" ".join)
def test_help_has_no_type_labels_and_fits_80_columns(page: list[str]) -> None:
    result = CliRunner().invoke(app, [*page, "--help"], env={"COLUMNS": "80", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    assert not TYPE_LABEL.search(result.stdout), result.stdout
    assert max(map(len, result.stdout.splitlines()), default=0) <= 80
