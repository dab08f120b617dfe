"""Reading what the dashboard shows."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from admin.service import AdminService
from admin.tui import DashboardApp


def app_for(namesrv: str, refresh: float = 0, read_only: bool = False) -> DashboardApp:
    return DashboardApp(
        lambda: AdminService([namesrv], 3.0), target=namesrv, refresh=refresh, read_only=read_only, deadline=7
    )


def cell_text(value: Any) -> str:
    return value.plain if isinstance(value, Text) else str(value)


def rows(app: DashboardApp, table_id: str) -> dict[str, list[str]]:
    """Row key -> the cells as text, of a table on the current screen."""
    table = app.screen.query_one(f"#{table_id}", DataTable)
    return {str(key.value): [cell_text(c) for c in table.get_row(key)] for key in table.rows}


def column(app: DashboardApp, table_id: str, name: str) -> dict[str, str]:
    table = app.screen.query_one(f"#{table_id}", DataTable)
    labels = [c.label.plain for c in table.columns.values()]
    index = labels.index(name)
    return {k: v[index] for k, v in rows(app, table_id).items()}
