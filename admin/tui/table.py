"""The dashboard's tables: each refresh hands a table all its rows, and the table touches only what
changed, so a refresh of 1,000 rows never holds the event loop for long.

DataTable measures every cell of a row it is given (when the loop is next idle), re-renders the
visible cells after any change, and widens a column only by measuring all of that column's cells
again. So a refresh rewrites just the changed cells and patches in the rows that came or went; when
many did (a filter typed, a first load), the table is rebuilt a chunk of rows per turn of the event
loop, with keys handled between the chunks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from textual.widgets import DataTable

from admin.tui.fmt import Cell

Row = tuple[str, Sequence[Cell]]  # a row's key and its cells
CHUNK = 100  # rows added per turn of the event loop when a table is rebuilt (more than a screenful)
CHUNK_PAUSE = 0.005  # seconds between chunks: time for the table to measure the rows added
PATCH_LIMIT = 50  # rows added plus removed that a refresh patches in; more rebuild the table


def selected_key(table: DataTable[Any]) -> str | None:
    """The key of the row under the cursor."""
    if not table.row_count:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value


class LiveTable(DataTable[Cell]):
    """A row-cursor table refreshed with :meth:`fill`."""

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id, cursor_type="row")
        self._shown: dict[str, list[str]] = {}  # key -> its cells as text, in the table's order
        self._build = 0  # the rebuild under way; a newer one stops it
        self.filling = False  # a rebuild is adding rows

    def fill(self, rows: Sequence[Row]) -> None:
        """Show ``rows``, keeping the cursor on the same key."""
        texts = {key: [str(c) for c in cells] for key, cells in rows}
        keep = selected_key(self)
        patched = not self.filling and len(texts) == len(rows) and self._patch(rows, texts)
        self._shown = texts
        if not patched:
            self._rebuild(rows, keep)
        elif keep in texts and selected_key(self) != keep:
            self.move_cursor(row=self.get_row_index(keep), animate=False)

    def move_to(self, key: str) -> None:
        """Put the cursor on the row of ``key`` (if it is shown)."""
        if key in self.rows:
            self.move_cursor(row=self.get_row_index(key))

    def _patch(self, rows: Sequence[Row], texts: dict[str, list[str]]) -> bool:
        """Turn the rows shown into ``rows`` in place; False (with nothing done, or the order left
        wrong) when the table must be rebuilt instead."""
        shown = self._shown
        removed = [key for key in shown if key not in texts]
        added = [(key, cells) for key, cells in rows if key not in shown]
        if len(removed) + len(added) > PATCH_LIMIT:
            return False
        columns = self.ordered_columns
        changes = []
        for key, cells in rows:
            before = shown.get(key)
            if before is None or before == texts[key]:
                continue
            for column, cell, text, old in zip(columns, cells, texts[key], before, strict=True):
                if text != old:
                    if cell_len(text) > column.content_width:
                        return False
                    changes.append((key, column.key, cell))
        for key in removed:
            self.remove_row(key)
        for key, column_key, cell in changes:
            self.update_cell(key, column_key, cell)
        for key, cells in added:
            self.add_row(*cells, key=key)
        order = list(texts)
        if not added or [key for key in shown if key in texts] + [key for key, _ in added] == order:
            return True
        return self._reorder(order)

    def _reorder(self, order: list[str]) -> bool:
        """Put the rows in ``order``. DataTable sorts by cell values alone; the cell objects a row was
        given are its own, so their identities name the row (False if two rows share them all)."""
        place = {tuple(map(id, self.get_row(key))): i for i, key in enumerate(order)}
        if len(place) < len(order):
            return False
        self.sort(key=lambda cells: place[tuple(map(id, cells))])
        return True

    def _rebuild(self, rows: Sequence[Row], keep: str | None) -> None:
        self.clear()
        self._build += 1
        self._add(rows[:CHUNK], keep)
        self.filling = len(rows) > CHUNK
        if self.filling:
            self.run_worker(self._add_rest(self._build, rows[CHUNK:], keep), group="fill")

    def _add(self, rows: Sequence[Row], keep: str | None) -> None:
        for key, cells in rows:
            self.add_row(*cells, key=key)
            if key == keep:
                self.move_cursor(row=self.row_count - 1, animate=False)

    async def _add_rest(self, build: int, rows: Sequence[Row], keep: str | None) -> None:
        for start in range(0, len(rows), CHUNK):
            await asyncio.sleep(CHUNK_PAUSE)
            if build != self._build:
                return  # a newer refresh rebuilt the table
            self._add(rows[start : start + CHUNK], keep)
        self.filling = False
