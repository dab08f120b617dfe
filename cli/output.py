"""``-o/--output table|json|text``, shared by every command, and the progress bar for long work.

A command gets a result from admin/ and calls :func:`emit` with it and with a function that lays the
result out for people as :class:`Table` and :class:`Fields` sections. Renderers only format:

* json: the result itself, one document, sorted keys, 2-space indent. Dataclass fields are written
  in camelCase; a value with a ``to_dict()`` method is written as what that returns (shapes fixed by
  RocketMQ, e.g. messages). This is the script interface; docs/cli-json.md lists the keys.
* table: rich tables (no colour when stdout is not a terminal or NO_COLOR is set).
* text: plain aligned columns without borders, one row per line, for grep and awk.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from enum import Enum, StrEnum
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

# Width used when stdout is not a terminal: wide enough that piped tables keep one row per line.
_PIPE_WIDTH = 200


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    TEXT = "text"


OutputOption = Annotated[
    OutputFormat,
    typer.Option("--output", "-o", case_sensitive=False, help="Output format: table, json or text."),
]
"""Declare as ``output: OutputOption = OutputFormat.TABLE`` in a command's signature."""


@dataclass(frozen=True, slots=True)
class Table:
    """Rows under column headings."""

    columns: Sequence[str]
    rows: Sequence[Sequence[object]]
    title: str = ""


@dataclass(frozen=True, slots=True)
class Fields:
    """Name/value pairs shown one per line (a single record, a summary)."""

    items: Sequence[tuple[str, object]]
    title: str = ""


Section = Table | Fields


def emit(fmt: OutputFormat, data: object, sections: Callable[[], Sequence[Section]]) -> None:
    """Write ``data`` to stdout in ``fmt``; ``sections`` is only called for the human formats."""
    if fmt is OutputFormat.JSON:
        sys.stdout.write(to_json(data) + "\n")
    elif fmt is OutputFormat.TABLE:
        _print_rich(sections())
    else:
        sys.stdout.write(_text(sections()))


# -- json -----------------------------------------------------------------------------------------
def to_json(data: object) -> str:
    return json.dumps(to_jsonable(data), sort_keys=True, indent=2, ensure_ascii=False)


def to_jsonable(value: object) -> Any:
    """Plain JSON values for ``value`` (see the module docstring for the rules)."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_jsonable(to_dict())
    if is_dataclass(value) and not isinstance(value, type):
        return {camel_case(f.name): to_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# -- cells ----------------------------------------------------------------------------------------
def cell(value: object) -> str:
    """One value as table or text shows it: ``-`` for none, yes/no, control characters escaped."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value)
    if text.isprintable():
        return text
    # one value stays on one line, and data can never drive the terminal (escape sequences)
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def ms_time(epoch_ms: int) -> str:
    """A millisecond timestamp as local time; ``-`` for 0 or negative (RocketMQ's "never")."""
    if epoch_ms <= 0:
        return "-"
    try:
        t = dt.datetime.fromtimestamp(epoch_ms / 1000)
    except (OverflowError, ValueError, OSError):
        return str(epoch_ms)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{epoch_ms % 1000:03d}"


# -- table ----------------------------------------------------------------------------------------
def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    tty = stream.isatty()
    return Console(
        file=stream,
        no_color=not tty or bool(os.environ.get("NO_COLOR")),
        highlight=False,
        width=None if tty else _PIPE_WIDTH,
    )


def _print_rich(sections: Sequence[Section]) -> None:
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    console = _console()
    for i, section in enumerate(sections):
        if i:
            console.print()
        if isinstance(section, Table):
            table = RichTable(title=section.title or None, title_justify="left", box=box.SIMPLE_HEAD)
            for name in section.columns:
                table.add_column(name, overflow="fold")
            for row in section.rows:
                table.add_row(*(Text(cell(v)) for v in row))  # Text: data is never markup
        else:
            table = RichTable(title=section.title or None, title_justify="left", box=None, show_header=False)
            table.add_column(style="bold")
            table.add_column(overflow="fold")
            for name, value in section.items:
                table.add_row(Text(name), Text(cell(value)))
        console.print(table)


# -- text -----------------------------------------------------------------------------------------
def _text(sections: Sequence[Section]) -> str:
    blocks: list[str] = []
    for section in sections:
        lines = [section.title] if section.title else []
        if isinstance(section, Table):
            rows = [[c.upper() for c in section.columns], *([cell(v) for v in row] for row in section.rows)]
            widths = [max(len(r[i]) for r in rows) for i in range(len(section.columns))]
            lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        else:
            width = max((len(name) for name, _ in section.items), default=0)
            lines += [f"{name.ljust(width)}  {cell(value)}".rstrip() for name, value in section.items]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


# -- progress -------------------------------------------------------------------------------------
class ProgressBar:
    """A progress callback ``(label, done, total)`` that draws on stderr.

    Silent unless stderr is a terminal and the work is at least ``min_total`` units, so short runs,
    pipes and CI logs stay clean. Use as a context manager so the bar is removed when done.
    """

    def __init__(self, min_total: int = 0) -> None:
        self._min_total = min_total
        self._enabled = sys.stderr.isatty()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, label: str, done: int, total: int) -> None:
        if not self._enabled or (self._progress is None and total < self._min_total):
            return
        if self._progress is None or self._task is None:
            from rich.progress import Progress

            self._progress = Progress(console=_console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task(label, total=total)
        self._progress.update(self._task, description=label, completed=done, total=total)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
