"""``-o/--output table|json|text``, shared by every command, and the progress bar for long work.

A command gets a result from admin/ and calls :func:`emit` with it and with a function that lays the
result out for people as :class:`Table` and :class:`Fields` sections. Renderers only format:

* json: the result itself, one document, sorted keys, 2-space indent. Dataclass fields are written
  in camelCase; a value with a ``to_dict()`` method is written as what that returns (shapes fixed by
  RocketMQ, e.g. messages). This is the script interface; docs/cli-json.md lists the keys. A command
  that writes a result again and again (``--watch``) writes JSON Lines instead: each result as one
  compact document on one line (``lines=True``).
* table: rich tables (no colour when stdout is not a terminal or NO_COLOR is set); tables whose text is
  plain ASCII and that fit the width are laid out here, character for character as rich lays them
  out, without importing rich.
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

import orjson
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


def emit(
    fmt: OutputFormat, data: object, sections: Callable[[], Sequence[Section]], *, lines: bool = False
) -> None:
    """Write ``data`` to stdout in ``fmt``; ``sections`` is only called for the human formats.

    ``lines``: one of a series of results (``--watch``); json then writes it as one line (JSON Lines)."""
    if fmt is OutputFormat.JSON:
        sys.stdout.write((to_json_line(data) if lines else to_json(data)) + "\n")
    elif fmt is OutputFormat.TABLE:
        _print_table(sections())
    else:
        sys.stdout.write(_text(sections()))


# -- json -----------------------------------------------------------------------------------------
def to_json(data: object) -> str:
    plain = to_jsonable(data)
    try:  # the standard library indents in pure Python: ~10x slower on a list of 10,000 topics
        return orjson.dumps(plain, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, a lone surrogate
        return json.dumps(plain, sort_keys=True, indent=2, ensure_ascii=False)


def to_json_line(data: object) -> str:
    """``data`` as one compact JSON document without a newline (a line of JSON Lines)."""
    return json.dumps(to_jsonable(data), sort_keys=True, ensure_ascii=False)


# exact types written as they are (subclasses such as StrEnum members still go through the rules)
_SCALARS = frozenset({str, int, float, bool, type(None)})
# per dataclass type without ``to_dict``: (attribute, JSON key) pairs, worked out once per type
_DATACLASS_KEYS: dict[type, tuple[tuple[str, str], ...]] = {}


def to_jsonable(value: object) -> Any:
    """Plain JSON values for ``value`` (see the module docstring for the rules)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    # the containers' items are tried against _SCALARS in line: a call per leaf is most of the cost
    keys = _DATACLASS_KEYS.get(kind)
    if keys is not None:
        return {
            key: v if type(v := getattr(value, attr)) in _SCALARS else to_jsonable(v) for attr, key in keys
        }
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS else to_jsonable(v) for v in value]  # type: ignore[attr-defined]
    if kind is dict:
        return {
            str(k): v if type(v) in _SCALARS else to_jsonable(v)
            for k, v in value.items()  # type: ignore[attr-defined]
        }
    if isinstance(value, Enum):
        return value.value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_jsonable(to_dict())
    if is_dataclass(value) and not isinstance(value, type):
        _DATACLASS_KEYS[kind] = tuple((f.name, camel_case(f.name)) for f in fields(value))
        return to_jsonable(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
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


def _print_table(sections: Sequence[Section]) -> None:
    width, styled = _rich_console_settings(sys.stdout)
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower()
    same = sys.platform != "win32" and encoding.startswith("utf")  # else rich draws ASCII boxes
    laid_out = _plain_table(sections, width, styled) if same else None
    if laid_out is None:
        _print_rich(sections)
    else:
        sys.stdout.write(laid_out)


# -- table, without rich ----------------------------------------------------------------------------
# rich's import is the largest of a command's start; the tables commands print are simple enough to lay
# out here exactly as rich lays them out (tests/cli/test_output.py compares the two). Whatever rich
# could lay out otherwise (text that is not plain ASCII, a table wider than the width, a title wider than
# its table) is left to rich.
_BOLD, _ITALIC = "1", "3"  # rich's table.header and field-name styles, and its table.title style


def _rich_console_settings(stream: Any) -> tuple[int, bool]:
    """The width and whether styles are written, as rich's Console decides them for :func:`_console`."""
    terminal = _rich_is_terminal(stream)
    dumb = terminal and os.environ.get("TERM", "").lower() in ("dumb", "unknown")
    width = _terminal_width(dumb) if stream.isatty() else _PIPE_WIDTH
    return width, terminal and not dumb


def _rich_is_terminal(stream: Any) -> bool:
    tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "1"
    force_color = os.environ.get("FORCE_COLOR")
    if force_color is not None:
        return force_color != ""
    return bool(stream.isatty())


def _terminal_width(dumb: bool) -> int:
    columns, lines = os.environ.get("COLUMNS", ""), os.environ.get("LINES", "")
    if columns.isdigit() and lines.isdigit():
        return int(columns)
    if dumb:
        return 80
    width = 0
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    return int(columns) if columns.isdigit() else width or 80


def _plain_text(text: str) -> bool:
    """Text rich writes unchanged in a cell that is wide enough: one cell per character, nothing to wrap."""
    return text.isascii() and text.isprintable() and text == text.strip() and text != ""


def _plain_label(text: str) -> bool:
    """A title or heading rich writes unchanged: also no markup (``[``) or emoji code (``:``)."""
    return _plain_text(text) and "[" not in text and ":" not in text


def _plain_table(sections: Sequence[Section], width: int, styled: bool) -> str | None:
    """The sections as rich prints them, or None when rich could lay one out otherwise."""
    blocks = [_plain_section(section, width, styled) for section in sections]
    return None if None in blocks else "\n".join(b for b in blocks if b is not None)


def _plain_section(section: Section, width: int, styled: bool) -> str | None:
    """A Table in a SIMPLE_HEAD box, Fields without a box; cells padded by one space."""
    boxed = isinstance(section, Table)
    if isinstance(section, Table):
        head = list(section.columns)
        rows = [[cell(v) for v in row] for row in section.rows]
    else:
        head = []
        rows = [[name, cell(value)] for name, value in section.items]
    labels = [*head, section.title] if section.title else head
    grid = [head, *rows] if head else rows
    if not grid or not all(map(_plain_label, labels)) or not all(_plain_text(t) for r in rows for t in r):
        return None
    widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
    inner = sum(w + 2 for w in widths) + (len(widths) - 1 if boxed else 0)
    total = inner + 2 if boxed else inner
    if total > width or len(section.title) > total:
        return None
    style = _style if styled else _unstyled
    lines = [style(section.title.ljust(total), _ITALIC)] if section.title else []
    if boxed:
        header = [_padded(t, w, _BOLD, style) for t, w in zip(head, widths, strict=True)]
        body = [
            " " + " ".join(_padded(t, w, "", style) for t, w in zip(r, widths, strict=True)) + " "
            for r in rows
        ]
        lines += [" " * total, " " + " ".join(header) + " ", f" {'─' * inner} ", *body, " " * total]
    else:
        name_width, value_width = widths
        lines += [_padded(n, name_width, _BOLD, style) + _padded(v, value_width, "", style) for n, v in rows]
    return "".join(f"{line}\n" for line in lines)


def _padded(text: str, width: int, sgr: str, style: Callable[[str, str], str]) -> str:
    """A cell: padding, text and padding are separate pieces of one style, as rich writes them."""
    if not sgr:
        return f" {text.ljust(width)} "
    return style(" ", sgr) + style(text.ljust(width), sgr) + style(" ", sgr)


def _style(text: str, sgr: str) -> str:
    return f"\x1b[{sgr}m{text}\x1b[0m"


def _unstyled(text: str, sgr: str) -> str:
    return text


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
