"""``cli/lazy.py`` keeps ``rmq`` starting fast by reaching into typer: its vendored click, the
pydantic-based coercion it replaces for plain types, and the parameter class. pyproject.toml pins typer
to the range tested here; this fails, naming what moved, when an upgrade changes any of it."""

from __future__ import annotations

import importlib
import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

# (module, attribute) that cli/lazy.py (and cli/errors.py, cli/server_group.py, cli/help_format.py) import
# from typer
INTERNALS = [
    ("typer._click.core", "Command"),
    ("typer._click.core", "Context"),
    ("typer._click.exceptions", "BadParameter"),
    ("typer._click.exceptions", "UsageError"),
    ("typer._click.exceptions", "NoArgsIsHelpError"),
    ("typer._click.globals", "get_current_context"),
    ("typer._coercion", "RuntimeParam"),
    ("typer._param_types", "coerce_cli_choice"),
    ("typer.core", "_TyperParameter"),
    ("typer.core", "TyperCommand"),
    ("typer.core", "TyperGroup"),
    ("typer._click.formatting", "HelpFormatter"),
]


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


@pytest.mark.parametrize(("module", "name"), INTERNALS, ids=[f"{m}.{n}" for m, n in INTERNALS])
def test_the_typer_internals_the_cli_uses_are_there(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"typer moved {module}.{name}: revisit cli/lazy.py"


def test_runtime_params_still_coerce_through_the_method_lazy_overrides() -> None:
    from typer._coercion import RuntimeParam

    assert "_coerce_value" in vars(RuntimeParam), (
        "typer's RuntimeParam lost _coerce_value: revisit cli/lazy.py"
    )
    fields = list(inspect.signature(RuntimeParam).parameters)
    assert fields[:2] == ["parameter_info", "annotation"], f"RuntimeParam's fields changed: {fields}"
