"""What the CLI relies on in typer, checked so that an upgrade fails here, naming what moved.

cli/click_api.py names where typer keeps its vendored click; cli/parameters.py reads each parameter's
``type_descriptor`` and overrides click's documented ``process_value``, ``get_usage_pieces`` and typer's
``display_type_rich``; the plain conversion exists to keep pydantic out of a command's start."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.core import TyperArgument, TyperOption

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

CLICK_API = [
    ("typer._click.core", "Command"),
    ("typer._click.core", "Context"),
    ("typer._click.exceptions", "BadParameter"),
    ("typer._click.exceptions", "MissingParameter"),
    ("typer._click.exceptions", "NoArgsIsHelpError"),
    ("typer._click.exceptions", "UsageError"),
    ("typer._click.formatting", "HelpFormatter"),
]
DESCRIPTOR = ["annotation", "parameter_info", "is_list", "is_file", "is_path", "is_choice", "choices"]


def _pinned_range() -> tuple[tuple[int, ...], tuple[int, ...]]:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("typer"))
    found = re.fullmatch(r"typer>=([\d.]+),<([\d.]+)", spec.replace(" ", ""))
    assert found, f"typer must be pinned to a tested range (>=X,<Y), not {spec!r}"
    low, high = (tuple(int(p) for p in v.split(".")) for v in found.groups())
    return low, high


def test_the_installed_typer_is_in_the_tested_range() -> None:
    low, high = _pinned_range()
    installed = tuple(int(p) for p in re.findall(r"\d+", version("typer"))[:3])
    assert low <= installed < high, f"typer {version('typer')} is outside the tested range {low} to {high}"


@pytest.mark.parametrize(("module", "name"), CLICK_API, ids=[f"{m}.{n}" for m, n in CLICK_API])
def test_click_is_where_click_api_looks(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), (
        f"typer moved {module}.{name}: revisit cli/click_api.py"
    )


def test_parameters_describe_their_type_as_cli_parameters_reads_it() -> None:
    from cli.lazy import single

    def command(name: str, count: int = 1) -> None:
        """A command."""

    for param in single(command, "x").params:
        assert isinstance(param, TyperOption | TyperArgument)
        missing = [a for a in DESCRIPTOR if not hasattr(param.type_descriptor, a)]
        assert not missing, f"typer's type_descriptor lost {missing}: revisit cli/parameters.py"
    for cls in (TyperOption, TyperArgument):
        assert hasattr(cls, "display_type_rich"), f"{cls.__name__}.display_type_rich moved: help pages change"


@pytest.mark.parametrize("argv", [["topic", "list", "--help"], ["topic", "create", "T", "-r", "x"]])
def test_a_command_starts_without_pydantic(argv: list[str]) -> None:
    code = f"import sys, cli.main\ncli.main.main({argv!r})\nprint('pydantic' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "False", done.stdout + done.stderr
