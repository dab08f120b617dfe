"""The shared renderers: JSON shape rules, text layout, escaping, colour."""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.output import (
    Fields,
    OutputFormat,
    ProgressBar,
    Table,
    _console,
    _plain_table,
    _print_rich,
    _print_table,
    _rich_console_settings,
    cell,
    emit,
    ms_time,
    to_json,
    to_jsonable,
)


class Colour(Enum):
    RED = "red"


@dataclass
class Inner:
    queue_id: int
    raw: bytes


@dataclass
class Outer:
    topic_name: str
    where: Path
    colour: Colour
    inner: list[Inner] = field(default_factory=list)
    props: dict[str, str] = field(default_factory=dict)


@dataclass
class Shaped:
    x: int

    def to_dict(self) -> dict[str, Any]:
        return {"fixedName": self.x, "nested": Inner(1, b"")}


def test_jsonable_rules() -> None:
    value = Outer("T", Path("/s"), Colour.RED, [Inner(3, b"\x00\xff")], {"UNIQ_KEY": "A"})
    assert to_jsonable(value) == {
        "topicName": "T",
        "where": "/s",
        "colour": "red",
        "inner": [{"queueId": 3, "raw": "AP8="}],
        "props": {"UNIQ_KEY": "A"},  # mapping keys are data: never renamed
    }
    assert to_jsonable(Shaped(5)) == {"fixedName": 5, "nested": {"queueId": 1, "raw": ""}}


def test_json_is_one_sorted_document() -> None:
    text = to_json({"b": 1, "a": {"d": 2, "c": "é"}})
    assert json.loads(text) == {"a": {"c": "é", "d": 2}, "b": 1}
    assert text.index('"a"') < text.index('"b"') and text.index('"c"') < text.index('"d"')
    assert "é" in text


def test_cells() -> None:
    assert cell(None) == "-"
    assert cell(True) == "yes" and cell(False) == "no"
    assert cell(12) == "12"
    assert cell("a\nb\x1b[31m\té") == "a\\nb\\x1b[31m\\té"
    assert ms_time(0) == "-"
    assert len(ms_time(1_700_000_000_123)) == len("2023-11-14 22:13:20.123")
    assert ms_time(1_700_000_000_123).endswith(".123")


def _sections() -> list[Table | Fields]:
    return [
        Fields([("name", "value"), ("longer name", None)], title="Summary"),
        Table(["topic", "queue"], [("T", 0), ("Longer", 12)], title="Queues"),
    ]


def test_text_layout(capsys: pytest.CaptureFixture[str]) -> None:
    emit(OutputFormat.TEXT, {"unused": True}, _sections)
    assert capsys.readouterr().out.splitlines() == [
        "Summary",
        "name         value",
        "longer name  -",
        "",
        "Queues",
        "TOPIC   QUEUE",
        "T       0",
        "Longer  12",
    ]


def test_json_ignores_sections(capsys: pytest.CaptureFixture[str]) -> None:
    def boom() -> list[Table | Fields]:
        raise AssertionError("sections are for people only")

    emit(OutputFormat.JSON, {"k": 1}, boom)
    assert json.loads(capsys.readouterr().out) == {"k": 1}


def test_table_without_colour_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    emit(OutputFormat.TABLE, None, lambda: [Table(["name"], [("[bold]not markup[/bold]",)])])
    out = capsys.readouterr().out
    assert "\x1b[" not in out
    assert "[bold]not markup[/bold]" in out  # data is never interpreted as rich markup


def _random_sections(rng: random.Random) -> list[Table | Fields]:
    def text(longest: int) -> str:
        return "".join(
            rng.choice("abcXYZ019 -_,.%|/=()'#!?*+&~^`{}<>;@$") for _ in range(rng.randint(1, longest))
        )

    def value() -> object:
        return rng.choice([None, True, rng.randint(-5, 10**6), rng.random() * 100, text(8), text(60)])

    def section() -> Table | Fields:
        title = rng.choice(["", text(10), text(40)])
        if rng.random() < 0.6:
            columns = [text(8) for _ in range(rng.randint(1, 8))]
            return Table(columns, [[value() for _ in columns] for _ in range(rng.randint(0, 6))], title)
        return Fields([(text(12), value()) for _ in range(rng.randint(1, 6))], title)

    return [section() for _ in range(rng.randint(1, 3))]


@pytest.mark.parametrize(
    ("tty", "env"),
    [
        (False, {}),
        (True, {"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}),
        (True, {"TERM": "xterm", "COLUMNS": "90", "LINES": "40", "NO_COLOR": "1"}),
        (True, {"TERM": "dumb"}),
        (False, {"FORCE_COLOR": "1"}),
        (True, {"TTY_COMPATIBLE": "0", "COLUMNS": "100", "LINES": "30"}),
    ],
)
def test_tables_are_laid_out_as_rich_does(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tty: bool, env: dict[str, str]
) -> None:
    for name in ("TERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty, raising=False)
    width, styled = _rich_console_settings(sys.stdout)
    rng = random.Random(7)
    laid_out = 0
    for _ in range(400):
        sections = _random_sections(rng)
        _print_rich(sections)
        by_rich = capsys.readouterr().out
        _print_table(sections)
        assert capsys.readouterr().out == by_rich, sections
        laid_out += _plain_table(sections, width, styled) is not None
    assert laid_out > 100


@pytest.mark.parametrize(
    "section",
    [
        Table(["name"], [("ünïcode",)]),  # character widths are rich's to measure
        Table(["name"], [("x" * 250,)]),  # wider than the width: rich folds it
        Table(["n"], [("x",)], title="a title wider than its table"),
        Table(["n"], [("  padded",)]),
        Fields([("name", "[bold]x")], title="[red]markup"),
    ],
)
def test_tables_rich_lays_out_differently_are_left_to_rich(section: Table | Fields) -> None:
    assert _plain_table([section], 200, styled=False) is None


def test_piped_table_layout(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    emit(OutputFormat.TABLE, None, lambda: [Table(["topic", "perm"], [("T", "RW-")], title="Topics")])
    assert capsys.readouterr().out.splitlines() == [
        "Topics          ",
        "                ",
        "  topic   perm  ",
        " ────────────── ",
        "  T       RW-   ",
        "                ",
    ]


@pytest.mark.parametrize(
    ("tty", "no_color_env", "coloured"), [(True, "", True), (True, "1", False), (False, "", False)]
)
def test_colour_only_on_a_terminal_without_no_color(
    monkeypatch: pytest.MonkeyPatch, tty: bool, no_color_env: str, coloured: bool
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty, raising=False)
    monkeypatch.setenv("NO_COLOR", no_color_env)
    assert _console().no_color is not coloured


def test_progress_bar_only_on_a_terminal_for_long_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with ProgressBar() as piped:
        piped("CommitLog", 1, 10)
        assert piped._progress is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with ProgressBar(min_total=100) as bar:
        bar("CommitLog", 1, 10)
        assert bar._progress is None  # too short to be worth a bar
        bar("CommitLog", 50, 1000)
        assert bar._progress is not None
        bar("ConsumeQueue", 1, 3)  # once shown, it follows every phase
        assert bar._progress.tasks[0].description == "ConsumeQueue"
    assert not bar._progress.live.is_started


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON_VALUES)
@settings(max_examples=200, deadline=None)
def test_json_output_is_the_standard_librarys_text(value: Any) -> None:
    """-o json is written by orjson, falling back to the standard library for what orjson refuses
    (integers beyond 64 bits, lone surrogates): the text is the same either way."""
    assert to_json(value) == json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
