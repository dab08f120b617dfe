"""LiveTable: whatever mix of changed, added, removed and reordered rows a refresh brings, the table
ends up showing exactly the rows given, in their order, with the cursor on the same key."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult

from admin.tui.table import CHUNK, PATCH_LIMIT, LiveTable, Row
from tests.admin.tui.conftest import run, until
from tests.admin.tui.helpers import cell_text


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LiveTable(id="t")

    def on_mount(self) -> None:
        self.query_one(LiveTable).add_columns("name", "count")


def rows(names: list[str], count: Callable[[str], int] = lambda _: 1) -> list[Row]:
    return [(n, (n, Text(str(count(n)), justify="right"))) for n in names]


def names(n: int) -> list[str]:
    return [f"t{i:04d}" for i in range(n)]


def shown(table: LiveTable) -> list[tuple[str, list[str]]]:
    return [(str(r.key.value), [cell_text(c) for c in table.get_row(r.key)]) for r in table.ordered_rows]


def expected(given: list[Row]) -> list[tuple[str, list[str]]]:
    return [(key, [cell_text(c) for c in cells]) for key, cells in given]


def scenario(steps: Callable[[LiveTable, Any], Awaitable[None]]) -> None:
    async def main() -> None:
        app = TableApp()
        async with app.run_test(size=(80, 30)) as pilot:
            await steps(app.query_one(LiveTable), pilot)

    run(main())


async def filled(table: LiveTable, given: list[Row], pilot: Any) -> None:
    table.fill(given)
    await until(lambda: not table.filling, pilot, what="the rows added")
    assert shown(table) == expected(given)


def test_a_refresh_patches_changed_added_and_removed_rows_in_order() -> None:
    async def steps(table: LiveTable, pilot: Any) -> None:
        first = names(CHUNK * 3)
        await filled(table, rows(first), pilot)
        table.move_cursor(row=first.index("t0042"))
        later = [n for n in first if n not in ("t0007", "t0200")]
        later[10:10] = ["t0009a", "t0009b"]  # new rows in the middle, and one at the end
        later.append("t9999")
        await filled(table, rows(later, lambda n: 7 if n.endswith("5") else 1), pilot)
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == "t0042"

    scenario(steps)


def test_a_cell_wider_than_its_column_widens_it() -> None:
    async def steps(table: LiveTable, pilot: Any) -> None:
        await filled(table, rows(names(5)), pilot)
        await filled(table, rows(names(5), lambda n: 123_456_789 if n == "t0003" else 1), pilot)
        await pilot.pause()
        assert table.ordered_columns[1].content_width >= len("123456789")

    scenario(steps)


def test_many_new_rows_are_added_in_chunks_and_a_newer_refresh_wins() -> None:
    async def steps(table: LiveTable, pilot: Any) -> None:
        await filled(table, rows(names(10)), pilot)
        table.fill(rows(names(CHUNK * 5)))
        assert table.filling and table.row_count == CHUNK  # the rest comes a chunk per turn
        await filled(table, rows(names(PATCH_LIMIT * 2)[::-1]), pilot)
        await pilot.pause(0.1)
        assert shown(table) == expected(rows(names(PATCH_LIMIT * 2)[::-1]))

    scenario(steps)
