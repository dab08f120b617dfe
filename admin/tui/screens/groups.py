"""Consumer groups: online clients, model, consume type, lag in messages and in time (worst first;
``o`` changes the order); enter shows a group's lag in total and per queue, its consume TPS, and a
sparkline of its lag over the last refreshes; ``c`` what its clients report of themselves
(:mod:`admin.tui.screens.clients`)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Sparkline, Static

from admin.errors import NotFound
from admin.models import GroupDescription, GroupList, GroupSummary
from admin.tui.fmt import ms_time, num, state
from admin.tui.live import LiveScreen
from admin.tui.table import LiveTable, Row
from admin.units import duration

if TYPE_CHECKING:
    from admin.service import AdminService

HISTORY = 60  # lag samples kept for the sparkline
# the orders ``o`` cycles through: a name and how to sort (the worst first)
ORDERS: tuple[tuple[str, Callable[[GroupSummary], tuple[object, ...]]], ...] = (
    ("lag time", lambda g: (-g.lag_ms, -g.lag, g.name)),
    ("lag", lambda g: (-g.lag, -g.lag_ms, g.name)),
    ("name", lambda g: (g.name,)),
)


@dataclass(frozen=True, slots=True)
class GroupsView:
    groups: GroupList
    detail: GroupDescription | None


class GroupsScreen(LiveScreen[GroupsView]):
    DEFAULT_CSS = """
    GroupsScreen #groups { height: 1fr; }
    GroupsScreen #group-who { height: 6; }
    GroupsScreen #clients { width: 1fr; }
    GroupsScreen #subscriptions { width: 1fr; }
    GroupsScreen #lag-history { height: 2; margin: 0 1; }
    GroupsScreen #lag { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "toggle_system", "System"),
        Binding("o", "order", "Order"),
        Binding("c", "clients", "Clients"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.show_system = False
        self.order = 0  # index into ORDERS
        self.selected: str | None = None
        self.history: deque[float] = deque(maxlen=HISTORY)
        self._drawn: GroupsView | None = None  # the last data drawn: a redraw adds no lag sample

    def body(self) -> ComposeResult:
        yield Static("", id="groups-title", classes="title")
        yield LiveTable(id="groups")
        yield Static("Select a group with enter", id="group-title", classes="title")
        with Horizontal(id="group-who"):
            yield LiveTable(id="clients")
            yield LiveTable(id="subscriptions")
        yield Sparkline([], id="lag-history")
        yield LiveTable(id="lag")

    def on_mount(self) -> None:
        super().on_mount()
        groups = self.query_one("#groups", DataTable)
        groups.add_columns(
            "group", "state", "clients", "lag", "lag time", "type", "model", "brokers", "orderly", "retry max"
        )
        self.query_one("#clients", DataTable).add_columns("client id", "address", "language", "version")
        self.query_one("#subscriptions", DataTable).add_columns("topic", "expression", "type")
        self.query_one("#lag", DataTable).add_columns(
            "topic",
            "broker",
            "queue",
            "broker offset",
            "consumer offset",
            "diff",
            "in-flight",
            "last consumed",
            "lag time",
        )
        groups.focus()

    async def fetch(self, service: AdminService) -> GroupsView:
        listing, detail = await asyncio.gather(
            service.group_list(include_system=True), self._describe(service, self.selected)
        )
        return GroupsView(listing, detail)

    @staticmethod
    async def _describe(service: AdminService, group: str | None) -> GroupDescription | None:
        if group is None:
            return None
        try:
            return await service.group_describe(group)
        except NotFound:
            return None

    def show(self, data: GroupsView) -> None:
        order_name, order_key = ORDERS[self.order]
        shown = sorted(
            (g for g in data.groups.groups if (self.show_system or not g.system) and self.matches(g.name)),
            key=order_key,
        )
        self.query_one("#groups-title", Static).update(
            f"Consumer groups: {len(shown)} of {len(data.groups.groups)}"
            + ("" if self.show_system else " (system groups hidden)")
            + f" · by {order_name} (o: order)"
        )
        self.query_one("#groups", LiveTable).fill(
            [
                (
                    g.name,
                    (
                        g.name,
                        state(g.online, "online", "offline"),
                        num(g.clients),
                        num(g.lag),
                        duration(g.lag_ms),
                        g.consume_type or "-",
                        g.message_model or "-",
                        ",".join(g.brokers),
                        "yes" if g.orderly else "",
                        num(g.retry_max_times),
                    ),
                )
                for g in shown
            ],
        )
        if data.detail is not None and data.detail.group == self.selected and data is not self._drawn:
            self.history.append(float(data.detail.lag.diff_total))
        self._drawn = data
        self._show_detail(data.detail)

    def _show_detail(self, d: GroupDescription | None) -> None:
        clients: list[Row] = []
        subs: list[Row] = []
        lag: list[Row] = []
        if d is None:
            title = "Select a group with enter" if self.selected is None else f"{self.selected}: not found"
        else:
            c = d.connections
            title = (
                f"{d.group}: {'online' if c.online else 'offline'} · {c.consume_type or '-'} · "
                f"{c.message_model or '-'} · lag {d.lag.diff_total:,} · in-flight {d.lag.inflight_total:,} · "
                f"{d.lag.consume_tps:g} TPS · oldest waiting {duration(d.lag.lag_ms)}"
            )
            clients = [(x.client_id, (x.client_id, x.address, x.language, str(x.version))) for x in c.clients]
            subs = [(s.topic, (s.topic, s.expression, s.expression_type)) for s in c.subscriptions]
            lag = [
                (
                    f"{q.topic}/{q.broker_name}/{q.queue_id}",
                    (
                        q.topic,
                        q.broker_name,
                        str(q.queue_id),
                        num(q.broker_offset),
                        num(q.consumer_offset),
                        num(q.diff),
                        num(q.inflight),
                        ms_time(q.last_timestamp),
                        duration(q.lag_ms),
                    ),
                )
                for q in d.lag.queues
            ]
        self.query_one("#group-title", Static).update(title)
        self.query_one("#lag-history", Sparkline).data = list(self.history)
        self.query_one("#clients", LiveTable).fill(clients)
        self.query_one("#subscriptions", LiveTable).fill(subs)
        self.query_one("#lag", LiveTable).fill(lag)

    def action_order(self) -> None:
        self.order = (self.order + 1) % len(ORDERS)
        self.redraw()

    def action_toggle_system(self) -> None:
        self.show_system = not self.show_system
        self.redraw()

    def action_clients(self) -> None:
        """What the selected group's clients report of themselves (asked now, on a screen of its own)."""
        from admin.tui.screens.clients import ClientsScreen

        if self.selected is not None:
            self.app.push_screen(ClientsScreen(self.selected))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "groups" and event.row_key.value is not None:
            self.select(event.row_key.value)

    def select(self, group: str) -> None:
        if group != self.selected:
            self.history.clear()
        self.selected = group
        self.action_refresh_now()

    def focus_object(self, name: str) -> None:
        table = self.query_one("#groups", DataTable)
        if name in table.rows:
            table.move_cursor(row=table.get_row_index(name))
        self.select(name)

    def back(self) -> None:
        if self.selected is not None:
            self.selected = None
            self.history.clear()
            self._show_detail(None)
