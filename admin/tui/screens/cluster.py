"""Cluster: the NameServers and every broker of every cluster. A broker that stops answering, or
that the NameServers forget, stays on the list, marked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from admin.models import BrokerInfo, ClusterStatus
from admin.tui.fmt import num, ratio, state
from admin.tui.live import LiveScreen
from admin.tui.screens.broker import BrokerScreen
from admin.tui.table import LiveTable, Row
from admin.units import size

if TYPE_CHECKING:
    from admin.service import AdminService

BROKER_COLUMNS = ("state", "cluster", "broker", "id", "role", "address", "version", "put TPS", "get TPS",
                  "disk", "CommitLog min", "CommitLog max", "repl lag", "error")  # fmt: skip


def replication_lag(broker: BrokerInfo) -> str:
    """A slave's bytes behind its master; a master shows its slowest in-sync slave ("-" if unknown)."""
    ha = broker.ha
    if ha is None or ha.lag_bytes is None:
        return "-"
    suffix = "" if ha.master else ("" if ha.master_alive else " (master lost)")
    return f"{size(ha.lag_bytes)}{suffix}"


def _position(offset: int | None) -> Text:
    """A CommitLog byte position in binary units."""
    return Text("-" if offset is None else size(offset), justify="right")


class ClusterScreen(LiveScreen[ClusterStatus]):
    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, BrokerInfo] = {}  # address -> last answer, to mark brokers that vanish
        self.states: dict[str, str] = {}  # address -> UP, DOWN or GONE, as shown

    def body(self) -> ComposeResult:
        yield Static("NameServers", classes="title")
        yield LiveTable(id="namesrvs")
        yield Static("Brokers (enter: detail)", classes="title")
        yield LiveTable(id="brokers")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#namesrvs", DataTable).add_columns("address", "state", "error")
        self.query_one("#brokers", DataTable).add_columns(*BROKER_COLUMNS)
        self.query_one("#brokers", DataTable).focus()

    async def fetch(self, service: AdminService) -> ClusterStatus:
        return await service.cluster_status()

    def show(self, data: ClusterStatus) -> None:
        self.query_one("#namesrvs", LiveTable).fill(
            [(n.address, (n.address, state(n.reachable), n.error or "")) for n in data.namesrvs],
        )
        present = {b.address for b in data.brokers}
        self.seen.update((b.address, b) for b in data.brokers)
        rows: list[Row] = []
        for b in sorted(self.seen.values(), key=lambda b: (b.cluster, b.broker_name, b.broker_id)):
            mark = "GONE" if b.address not in present else "UP" if b.reachable else "DOWN"
            self.states[b.address] = mark
            if not self.matches(b.cluster, b.broker_name, b.address):
                continue
            live = mark == "UP"
            rows.append(
                (
                    b.address,
                    (
                        state(live, "UP", mark),
                        b.cluster,
                        b.broker_name,
                        str(b.broker_id),
                        b.role,
                        b.address,
                        (b.version or "-") if live else "-",
                        num(b.put_tps if live else None),
                        num(b.get_tps if live else None),
                        ratio(b.disk_ratio if live else None),
                        _position(b.commitlog_min_offset),
                        _position(b.commitlog_max_offset),
                        replication_lag(b),
                        "" if live else Text(b.error or "not registered", style="red"),
                    ),
                )
            )
        self.query_one("#brokers", LiveTable).fill(rows)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "brokers" and event.row_key.value is not None:
            self.app.push_screen(BrokerScreen(event.row_key.value))

    def focus_object(self, name: str) -> None:
        table = self.query_one("#brokers", DataTable)
        for b in self.seen.values():
            if name in (b.broker_name, b.address):
                table.move_cursor(row=table.get_row_index(b.address))
                return
