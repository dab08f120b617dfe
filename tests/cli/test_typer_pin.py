"""What the CLI uses of typer beyond its documented API (cli/click_api.py), each name exercised, so that
a typer upgrade fails here, naming what moved, before help pages, exit codes or the start-up change."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from enum import Enum
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from cli.click_api import (
    Command,
    Context,
    Declared,
    MissingParameter,
    NoArgsIsHelpError,
    UsageError,
    adopt,
    declared,
)
from cli.lazy import single
from cli.parameters import Argument, Option

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


class Color(Enum):
    RED = "red"
    BLUE = "blue"


def _pinned_range() -> tuple[tuple[int, ...], tuple[int, ...]]:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("typer"))
    found = re.fullmatch(r"typer>=([\d.]+),<([\d.]+)", spec.replace(" ", ""))
    assert found, f"typer must be pinned to a tested range (>=X,<Y), not {spec!r}"
    low, high = (tuple(int(p) for p in v.split(".")) for v in found.groups())
    return low, high


def _plain_app(**settings: Any) -> Command:
    """A command as typer alone builds it, none of the CLI's classes: a required ``--name``."""
    app = typer.Typer(add_completion=False)

    @app.command(**settings)
    def hello(name: Annotated[str, typer.Option()]) -> None:
        """Says hello."""

    return typer.main.get_command(app)


def _run(command: Command, args: list[str]) -> None:
    command.main(args, "prog", standalone_mode=False)


def test_the_installed_typer_is_in_the_tested_range() -> None:
    low, high = _pinned_range()
    installed = tuple(int(p) for p in re.findall(r"\d+", version("typer"))[:3])
    assert low <= installed < high, f"typer {version('typer')} is outside the tested range {low} to {high}"


def test_command_and_context_are_the_bases_of_typers_public_classes() -> None:
    for cls in (TyperCommand, TyperGroup):
        assert issubclass(cls, Command), f"{cls.__name__} no longer extends click_api.Command"
    assert issubclass(typer.Context, Context), "typer.Context no longer extends click_api.Context"
    made = _plain_app().make_context("prog", ["--name", "x"])
    assert isinstance(made, Context), f"typer makes {type(made)}, not click_api.Context"


def test_typer_raises_the_exceptions_click_api_names() -> None:
    with pytest.raises(MissingParameter):  # typer's own check of a required option
        _run(_plain_app(), [])
    with pytest.raises(UsageError) as bad:
        _run(_plain_app(), ["--nope"])
    assert bad.value.ctx is not None, "a usage error no longer names its command: cli/errors.py reads it"
    assert issubclass(typer.BadParameter, UsageError), "typer.BadParameter is no usage error: exit code 1"

    group = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None)
    group.command()(lambda: None)
    group.command("other")(lambda: None)
    with pytest.raises(NoArgsIsHelpError):
        _run(typer.main.get_command(group), [])


def test_declared_reads_what_each_parameter_was_declared_as() -> None:
    def command(
        name: str,
        color: Annotated[Color, typer.Option(case_sensitive=False)] = Color.RED,
        count: Annotated[int, typer.Option(min=1, max=9)] = 1,
        tags: Annotated[list[str] | None, typer.Option()] = None,
        path: Annotated[Path | None, typer.Option()] = None,
        parsed: Annotated[int, typer.Option(parser=int)] = 0,
    ) -> None:
        """A command."""

    params = {p.name: p for p in single(command, "x").params}
    assert all(isinstance(p, Option | Argument) for p in params.values())
    found = {name: declared(p) for name, p in params.items()}  # type: ignore[arg-type]

    def plain(annotation: Any, item: Any, **changes: Any) -> Declared:
        fields: dict[str, Any] = {"annotation": annotation, "item": item, "choices": None, "is_path": False}
        fields |= {"typer_converts": False, "low": None, "high": None, "clamp": False, "case_sensitive": True}
        return Declared(**(fields | changes))

    assert found["name"] == plain(str, str)
    assert found["color"] == plain(Color, Color, choices=(Color.RED, Color.BLUE), case_sensitive=False)
    assert found["count"] == plain(int, int, low=1, high=9)
    assert found["tags"].item is str and found["tags"].typer_converts is False
    assert found["path"].is_path and found["path"].typer_converts
    assert found["parsed"].typer_converts, "a parser= value must keep typer's own conversion"


def test_typer_builds_the_parameters_adopt_takes_over() -> None:
    command = _plain_app()
    help_option = command.get_help_option(Context(command))
    for param in [*command.params, help_option]:
        assert type(param) in (TyperOption, TyperArgument), f"typer builds {type(param)}: adopt() misses it"
    param = command.params[0]
    state = dict(vars(param))
    adopt(param, Option, Argument)
    assert type(param) is Option and vars(param) == state
    for cls, methods in [
        (TyperOption, ["process_value", "display_type_rich", "value_is_missing"]),
        (TyperArgument, ["process_value", "display_type_rich", "get_usage_pieces", "display_name_raw"]),
        (TyperCommand, ["get_help_option"]),
    ]:
        missing = [m for m in methods if not hasattr(cls, m)]
        assert not missing, f"typer's {cls.__name__} lost {missing}: cli/parameters.py overrides them"


def test_the_cli_commands_have_the_cli_parameters() -> None:
    def command(name: str, count: int = 1) -> None:
        """A command."""

    built = single(command, "x")
    kinds = [type(p) for p in [*built.params, built.get_help_option(Context(built))]]
    assert kinds == [Argument, Option, Option]


@pytest.mark.parametrize("argv", [["topic", "list", "--help"], ["topic", "create", "T", "-r", "x"]])
def test_a_command_starts_without_pydantic(argv: list[str]) -> None:
    code = f"import sys, cli.main\ncli.main.main({argv!r})\nprint('pydantic' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "False", done.stdout + done.stderr
