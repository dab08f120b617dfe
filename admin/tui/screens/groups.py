"""Consumer groups: online clients, model, consume type, lag in messages and in time (worst first;
``o`` changes the order); enter shows a group's lag in total and per queue, its consume TPS, and a
sparkline of its lag over the last refreshes, and which client took which queue when (the brokers'
rebalance history; a queue changing hands again and again is flagged as flapping); ``c`` what its
clients report of themselves (:mod:`admin.tui.screens.clients`). Unless read-only: reset the selected
group's offsets (``f``), skip its backlog (``k``) or undo the last reset (``z``), each after a dry-run
preview and typing its name; create (``n``), update (``u``) and delete (``d``) groups."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Sparkline, Static

from admin.errors import AdminError, BadInput, NotFound, OperationFailed
from admin.models import (
    GroupDescription,
    GroupList,
    GroupRebalances,
    GroupSpec,
    GroupSummary,
    OffsetReset,
    ResetKind,
    ResetTarget,
)
from admin.timeparse import parse_time
from admin.tui.fmt import ms_time, num, state
from admin.tui.live import LiveScreen
from admin.tui.table import LiveTable, Row
from admin.units import duration

if TYPE_CHECKING:
    from admin.service import AdminService

HISTORY = 60  # lag samples kept for the sparkline
REBALANCES_SHOWN = 20  # the latest queue moves listed
PREVIEW_LINES = 12  # queues listed in a reset's confirmation; the rest are counted
# the orders ``o`` cycles through: a name and how to sort (the worst first)
ORDERS: tuple[tuple[str, Callable[[GroupSummary], tuple[object, ...]]], ...] = (
    ("lag time", lambda g: (-g.lag_ms, -g.lag, g.name)),
    ("lag", lambda g: (-g.lag, -g.lag_ms, g.name)),
    ("name", lambda g: (g.name,)),
)


def number(text: str, what: str) -> int:
    """An integer typed into a form; a clear error otherwise."""
    try:
        return int(text)
    except ValueError:
        raise BadInput(f"{what} must be a whole number, not {text!r}") from None


def reset_target(text: str) -> ResetTarget:
    """``earliest``, ``latest``, ``offset N`` or a time (``-1h``, ISO 8601, epoch ms) as a target."""
    words = text.strip().lower().split()
    if words in (["earliest"], ["latest"]):
        return ResetTarget(ResetKind(words[0]))
    if len(words) == 2 and words[0] == "offset":
        return ResetTarget(ResetKind.OFFSET, number(words[1], "the offset"))
    return ResetTarget(ResetKind.TIME, parse_time(text))


def target_text(target: ResetTarget) -> str:
    if target.kind is ResetKind.TIME:
        return f"the first message stored at or after {ms_time(target.value)}"
    if target.kind is ResetKind.OFFSET:
        return f"offset {target.value}"
    return str(target.kind.value)


@dataclass(frozen=True, slots=True)
class GroupsView:
    groups: GroupList
    detail: GroupDescription | None
    rebalances: GroupRebalances | None  # of the selected group, as the brokers recorded them


class GroupsScreen(LiveScreen[GroupsView]):
    DEFAULT_CSS = """
    GroupsScreen #groups { height: 1fr; }
    GroupsScreen #group-who { height: 6; }
    GroupsScreen #clients { width: 1fr; }
    GroupsScreen #subscriptions { width: 1fr; }
    GroupsScreen #rebalances { width: 1fr; }
    GroupsScreen #lag-history { height: 2; margin: 0 1; }
    GroupsScreen #lag { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "toggle_system", "System"),
        Binding("o", "order", "Order"),
        Binding("c", "clients", "Clients"),
        Binding("f", "reset", "Reset offsets"),
        Binding("k", "skip", "Skip backlog"),
        Binding("z", "undo", "Undo reset"),
        Binding("n", "new", "New"),
        Binding("u", "update", "Update"),
        Binding("d", "delete", "Delete"),
    ]
    mutations = frozenset({"reset", "skip", "undo", "new", "update", "delete"})

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
            yield LiveTable(id="rebalances")
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
        self.query_one("#rebalances", DataTable).add_columns("rebalanced", "queue", "from", "to")
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
        listing, detail, rebalances = await asyncio.gather(
            service.group_list(include_system=True),
            self._describe(service, self.selected),
            self._rebalances(service, self.selected),
        )
        return GroupsView(listing, detail, rebalances)

    @staticmethod
    async def _rebalances(service: AdminService, group: str | None) -> GroupRebalances | None:
        """The group's rebalance history (None when no broker keeps one)."""
        if group is None:
            return None
        try:
            return await service.group_rebalances(group)
        except (NotFound, OperationFailed):
            return None

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
        self._show_detail(data.detail, data.rebalances)

    def _show_detail(self, d: GroupDescription | None, rebalances: GroupRebalances | None) -> None:
        clients: list[Row] = []
        subs: list[Row] = []
        lag: list[Row] = []
        if d is None:
            title = "Select a group with enter" if self.selected is None else f"{self.selected}: not found"
        else:
            c = d.connections
            flapping = rebalances.flapping if rebalances is not None else []
            title = (
                f"{d.group}: {'online' if c.online else 'offline'} · {c.consume_type or '-'} · "
                f"{c.message_model or '-'} · lag {d.lag.diff_total:,} · in-flight {d.lag.inflight_total:,} · "
                f"{d.lag.consume_tps:g} TPS · oldest waiting {duration(d.lag.lag_ms)}"
                + (f" · [b red]FLAPPING: {len(flapping)} queue(s)[/]" if flapping else "")
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
        moves = rebalances.moves[-REBALANCES_SHOWN:] if d is not None and rebalances is not None else []
        self.query_one("#rebalances", LiveTable).fill(
            [
                (
                    f"{m.timestamp}/{m.topic}/{m.broker_name}/{m.queue_id}",
                    (time.strftime("%H:%M:%S", time.localtime(m.timestamp / 1000)),
                     f"{m.topic}/{m.broker_name}/{m.queue_id}", m.from_client, m.to_client),
                )
                for m in reversed(moves)
            ]
        )  # fmt: skip

    def action_order(self) -> None:
        self.order = (self.order + 1) % len(ORDERS)
        self.redraw()

    # -- actions (hidden with --read-only) ----------------------------------------------------------
    def _group(self) -> str | None:
        return self.chosen(self.selected, "groups", "group")

    def action_reset(self) -> None:
        group = self._group()
        if group is None:
            return

        def reset(values: dict[str, str]) -> None:
            self._preview_reset(group, reset_target(values["to"]), values["topic"] or None)

        fields = [
            ("to", "To: earliest, latest, offset N, or a time (-1h, 2026-11-27T10:00, epoch ms)", "earliest"),
            ("topic", "Topic (empty: every topic the group consumes)", ""),
        ]
        self.ask(f"Reset the offsets of {group}", fields, reset)

    def action_skip(self) -> None:
        group = self._group()
        if group is not None:
            self._preview_reset(group, ResetTarget(ResetKind.LATEST), None)

    def _preview_reset(self, group: str, target: ResetTarget, topic: str | None) -> None:
        self._preview_moves(
            group,
            f"to {target_text(target)}",
            lambda s, dry: s.group_reset_offset(group, target, topic, dry_run=dry),
        )

    def action_undo(self) -> None:
        group = self._group()
        if group is not None:
            self._preview_moves(
                group, "back to before its last reset", lambda s, dry: s.group_offsets_undo(group, dry)
            )

    def _preview_moves(
        self, group: str, where: str, move: Callable[[AdminService, bool], Awaitable[OffsetReset]]
    ) -> None:
        """Show where each queue would move (``move`` as a dry run), then move them once the group's
        name is typed (every move first saves the offsets it leaves: ``z`` undoes it)."""

        async def preview() -> None:
            try:
                plan = await self.dash.backend.call(lambda s: move(s, True))
            except AdminError as exc:
                self.notify(str(exc), severity="error", timeout=10)
                return
            lines = [
                f"  {q.topic} {q.broker_name}/{q.queue_id}: {q.current} -> {q.target}" for q in plan.queues
            ]
            more = len(lines) - PREVIEW_LINES
            text = "\n".join(
                [f"Move the offsets of {group} {where}:", *lines[:PREVIEW_LINES]]
                + ([f"  ... and {more} more queue(s)"] if more > 0 else [])
            )
            self.confirm(
                text,
                group,
                lambda s: move(s, False),
                lambda r: f"offsets of {group} moved on {len(r.queues)} queue(s)",
            )

        self.run_worker(preview, group="action", exit_on_error=False)  # type: ignore[arg-type]

    def action_new(self) -> None:
        def create(values: dict[str, str]) -> None:
            if values["name"]:
                spec = GroupSpec(values["name"], retry_max_times=number(values["retry"], "retry max times"))
                self.act(
                    lambda s: s.group_create(spec),
                    lambda c: f"group {c.group} created on {len(c.addresses)} broker(s)",
                )

        fields = [("name", "Group name", ""), ("retry", "Retry max times (then the DLQ)", "16")]
        self.ask("New consumer group", fields, create)

    def action_update(self) -> None:
        group = self._group()
        if group is None:
            return
        current = (
            next((g for g in self.latest.groups.groups if g.name == group), None) if self.latest else None
        )

        def update(values: dict[str, str]) -> None:
            spec = GroupSpec(
                group,
                consume_enable=values["consume"].lower() in ("yes", "y", "true", "on"),
                retry_max_times=number(values["retry"], "retry max times"),
            )
            self.act(lambda s: s.group_update(spec), lambda c: f"group {c.group} updated")

        fields = [
            ("retry", "Retry max times (then the DLQ)", str(current.retry_max_times if current else 16)),
            (
                "consume",
                "Consumption enabled (yes/no)",
                "yes" if current is None or current.consume_enable else "no",
            ),
        ]
        self.ask(f"Update consumer group {group}", fields, update)

    def action_delete(self) -> None:
        group = self._group()
        if group is None:
            return
        self.confirm(
            f"Delete consumer group {group} and its offsets.",
            group,
            lambda s: s.group_delete(group),
            lambda d: f"group {d.group} deleted",
        )

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
        self.query_one("#groups", LiveTable).move_to(name)
        self.select(name)

    def back(self) -> None:
        if self.selected is not None:
            self.selected = None
            self.history.clear()
            self._show_detail(None, None)
