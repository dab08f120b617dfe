"""Broker detail: runtime figures, configuration, and the store (files, flush and dispatch progress)
as far as the runtime information tells."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from admin.models import BrokerRuntime, ConfigValues
from admin.tui.live import LiveScreen
from admin.tui.table import LiveTable, Row
from admin.units import runtime_value

if TYPE_CHECKING:
    from admin.service import AdminService

# runtime keys about the store: CommitLog and ConsumeQueue files, disk, flushing and dispatching
STORE_WORDS = ("commitlog", "consumequeue", "disk", "dispatch", "flush", "pagecache", "earliest",
               "putmessage", "index", "timer", "dirCapacity")  # fmt: skip


def store_keys(values: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in values.items() if any(w.lower() in k.lower() for w in STORE_WORDS)}


class BrokerScreen(LiveScreen[tuple[BrokerRuntime, ConfigValues]]):
    pushed: ClassVar[bool] = True

    def __init__(self, address: str) -> None:
        super().__init__()
        self.address = address

    def body(self) -> ComposeResult:
        yield Static(f"Broker {self.address} (esc: back)", classes="title")
        with TabbedContent():
            with TabPane("Runtime", id="tab-runtime"):
                yield LiveTable(id="runtime")
            with TabPane("Store", id="tab-store"):
                yield LiveTable(id="store")
            with TabPane("Config", id="tab-config"):
                yield LiveTable(id="config")

    def on_mount(self) -> None:
        super().on_mount()
        for table in self.query(DataTable):
            table.add_columns("key", "value")

    async def fetch(self, service: AdminService) -> tuple[BrokerRuntime, ConfigValues]:
        return await asyncio.gather(
            service.broker_runtime(self.address), service.broker_config_get(self.address)
        )

    def show(self, data: tuple[BrokerRuntime, ConfigValues]) -> None:
        runtime, config = data
        for table_id, values, shown in (
            ("runtime", runtime.values, runtime_value),
            ("store", store_keys(runtime.values), runtime_value),
            ("config", config.values, lambda _k, v: v),  # settings as they are set
        ):
            rows: list[Row] = [(k, (k, shown(k, v))) for k, v in values.items() if self.matches(k, v)]
            self.query_one(f"#{table_id}", LiveTable).fill(rows)
