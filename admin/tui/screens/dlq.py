"""Retry & DLQ: per group the depth of %RETRY%group and %DLQ%group; enter browses a group's dead
letters (or retries); resend one, the marked ones or all back to that group only, through its retry
topic (after typing the group's name; ones resent before are skipped), with a progress bar; export to
a JSON-lines file."""

from __future__ import annotations

import asyncio
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, ProgressBar, Static

from admin.errors import AdminError, NotFound
from admin.models import MessageRange, Messages, SpecialTopics
from admin.store_tools import message_to_dict
from admin.tui.fmt import ms_time, num
from admin.tui.live import LiveScreen
from admin.tui.screens.confirm import ConfirmScreen
from admin.tui.screens.message import MessageScreen
from admin.tui.screens.prompt import PromptScreen
from admin.tui.table import LiveTable, Row, selected_key
from broker.protocol import properties as message_properties

if TYPE_CHECKING:
    from admin.service import AdminService
    from broker.protocol.message import MessageRecord

BROWSE_LIMIT = 500
EXPORT_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class DlqView:
    retry: SpecialTopics
    dlq: SpecialTopics
    browse: Messages | None


def message_key(rec: MessageRecord) -> str:
    return f"{rec.store_host}/{rec.queue_id}/{rec.queue_offset}"


class DlqScreen(LiveScreen[DlqView]):
    mutations = frozenset({"resend", "resend_all"})
    DEFAULT_CSS = """
    DlqScreen #special { height: 1fr; }
    DlqScreen #browse { height: 2fr; }
    DlqScreen #resend-progress { height: 1; margin: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "kind", "DLQ/retry"),
        Binding("space", "mark", "Mark"),
        Binding("s", "resend", "Resend"),
        Binding("a", "resend_all", "Resend all"),
        Binding("e", "export", "Export"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.selected: str | None = None
        self.kind = "DLQ"  # which of the group's topics is browsed: DLQ or RETRY
        self.marked: set[str] = set()

    def body(self) -> ComposeResult:
        yield Static("Retry and dead-letter topics (enter: browse)", classes="title")
        yield LiveTable(id="special")
        yield Static("Select a group with enter", id="browse-title", classes="title")
        yield LiveTable(id="browse")
        yield ProgressBar(id="resend-progress", classes="hidden", show_eta=False)

    def on_mount(self) -> None:
        super().on_mount()
        special = self.query_one("#special", DataTable)
        special.add_columns("group", "retry", "DLQ", "DLQ brokers", "last dead letter", "last retry")
        self.query_one("#browse", DataTable).add_columns(
            "", "offset", "msg id", "origin topic", "origin msg id", "reconsumed", "stored", "tags", "keys"
        )
        special.focus()

    async def fetch(self, service: AdminService) -> DlqView:
        (retry, dlq), browse = await asyncio.gather(
            service.retry_and_dlq_list(), self._browse(service, BROWSE_LIMIT)
        )
        return DlqView(retry, dlq, browse)

    async def _browse(self, service: AdminService, limit: int) -> Messages | None:
        if self.selected is None:
            return None
        rng = MessageRange(limit=limit)
        try:
            if self.kind == "DLQ":
                return await service.dlq_browse(self.selected, rng)
            return await service.retry_browse(self.selected, rng)
        except NotFound:
            return Messages([])

    def show(self, data: DlqView) -> None:
        retry = {t.group: t for t in data.retry.topics}
        dlq = {t.group: t for t in data.dlq.topics}
        rows: list[Row] = []
        for group in sorted(retry.keys() | dlq.keys()):
            r, d = retry.get(group), dlq.get(group)
            if not self.matches(group):
                continue
            rows.append(
                (
                    group,
                    (
                        group,
                        num(r.messages if r else None),
                        num(d.messages if d else None),
                        ",".join(d.brokers) if d else "",
                        ms_time(d.last_updated) if d else "-",
                        ms_time(r.last_updated) if r else "-",
                    ),
                )
            )
        self.query_one("#special", LiveTable).fill(rows)
        self._show_browse(data.browse)

    def _show_browse(self, browse: Messages | None) -> None:
        if self.selected is None or browse is None:
            title, rows = "Select a group with enter", []
        else:
            count, marked = len(browse.messages), len(self.marked)
            title = f"{self.kind} of {self.selected}: {count} message(s), {marked} marked"
            rows = [(message_key(m), self._cells(m)) for m in browse.messages]
        self.query_one("#browse-title", Static).update(title)
        self.query_one("#browse", LiveTable).fill(rows)

    def _cells(self, m: MessageRecord) -> tuple[str | Text, ...]:
        props = m.properties
        return (
            Text("✔", style="bold green") if message_key(m) in self.marked else "",
            str(m.queue_offset),
            m.msg_id,
            props.get(message_properties.DLQ_ORIGIN_TOPIC)
            or props.get(message_properties.RETRY_TOPIC)
            or "-",
            props.get(message_properties.DLQ_ORIGIN_MESSAGE_ID)
            or props.get(message_properties.ORIGIN_MESSAGE_ID)
            or "-",
            str(m.reconsume_times),
            ms_time(m.store_timestamp),
            m.tags or "",
            " ".join(m.keys),
        )

    def _messages(self) -> list[MessageRecord]:
        return self.latest.browse.messages if self.latest is not None and self.latest.browse else []

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is None:
            return
        if event.data_table.id == "special":
            self.select(key)
        else:
            rec = next((m for m in self._messages() if message_key(m) == key), None)
            if rec is not None:
                self.app.push_screen(MessageScreen(rec.offset_msg_id, rec.topic))

    def select(self, group: str) -> None:
        if group != self.selected:
            self.marked.clear()
        self.selected = group
        self.action_refresh_now()
        self.query_one("#browse", DataTable).focus()

    def focus_object(self, name: str) -> None:
        self.query_one("#special", LiveTable).move_to(name)
        self.select(name)

    def back(self) -> None:
        if self.selected is not None:
            self.selected = None
            self.marked.clear()
            self._show_browse(None)
            self.query_one("#special", DataTable).focus()

    # -- actions ----------------------------------------------------------------------------------
    def action_kind(self) -> None:
        self.kind = "RETRY" if self.kind == "DLQ" else "DLQ"
        self.marked.clear()
        if self.selected is not None:
            self.action_refresh_now()

    def action_mark(self) -> None:
        key = selected_key(self.query_one("#browse", DataTable))
        if key is None:
            return
        self.marked ^= {key}
        if self.latest is not None:
            self._show_browse(self.latest.browse)

    def _resend_targets(self, everything: bool) -> dict[str, list[int]] | None:
        """Broker address -> DLQ offsets to resend; None = all of them."""
        if everything:
            return None
        keys = self.marked or {k for k in [selected_key(self.query_one("#browse", DataTable))] if k}
        chosen: dict[str, list[int]] = {}
        for m in self._messages():
            if message_key(m) in keys:
                chosen.setdefault(m.store_host, []).append(m.queue_offset)
        return chosen

    def action_resend(self) -> None:
        self._ask_resend(everything=False)

    def action_resend_all(self) -> None:
        self._ask_resend(everything=True)

    def _ask_resend(self, everything: bool) -> None:
        group = self.selected
        if self.dash.read_only or group is None or self.kind != "DLQ":
            self.notify("select a group's dead-letter queue first (enter on a group)", severity="warning")
            return
        targets = self._resend_targets(everything)
        if targets is not None and not targets:
            self.notify("no message selected", severity="warning")
            return
        count = (
            "every dead letter" if targets is None else f"{sum(map(len, targets.values()))} dead letter(s)"
        )

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.run_worker(self._resend(group, targets), group="resend", exit_on_error=False)

        self.app.push_screen(
            ConfirmScreen(
                f"Resend {count} of {group} to {group} only (its retry topic; no other group gets them).",
                group,
            ),
            confirmed,
        )

    async def _resend(self, group: str, targets: dict[str, list[int]] | None) -> None:
        bar = self.query_one("#resend-progress", ProgressBar)
        bar.remove_class("hidden")
        bar.update(total=None, progress=0)

        ui = asyncio.get_running_loop()

        def progress(_label: str, done: int, total: int) -> None:  # on the service's thread
            ui.call_soon_threadsafe(functools.partial(bar.update, total=total, progress=done))

        jobs = [(None, None)] if targets is None else [(a, o) for a, o in targets.items()]

        async def resend(service: AdminService) -> tuple[int, int, int]:
            resent = failed = skipped = 0
            for addr, offsets in jobs:
                report = await service.dlq_resend(group, offsets, addr, progress=progress)
                resent += len(report.resent)
                failed += len(report.failed)
                skipped += len(report.skipped)
            return resent, failed, skipped

        try:
            resent, failed, skipped = await self.dash.backend.call(resend)
        except AdminError as exc:
            self.notify(f"resend failed: {exc}", severity="error")
        else:
            self.notify(
                f"resent {resent} message(s) to {group}"
                + (f", {skipped} skipped (resent before)" if skipped else "")
                + (f", {failed} failed" if failed else "")
            )
        finally:
            bar.add_class("hidden")
            self.marked.clear()
            self.action_refresh_now()

    def action_export(self) -> None:
        group = self.selected
        if group is None:
            self.notify("select a group first (enter on a group)", severity="warning")
            return
        default = f"{group}-{self.kind.lower()}.jsonl"

        def chosen(path: str | None) -> None:
            if path:
                self.run_worker(self._export(Path(path)), group="export", exit_on_error=False)

        self.app.push_screen(
            PromptScreen(f"Export the {self.kind} of {group} to (JSON lines):", default), chosen
        )

    async def _export(self, path: Path) -> None:
        try:
            found = await self.dash.backend.call(lambda service: self._browse(service, EXPORT_LIMIT))
            records = found.messages if found is not None else []
            path.write_text(
                "".join(json.dumps(message_to_dict(m), ensure_ascii=False) + "\n" for m in records)
            )
        except (AdminError, OSError) as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        self.notify(f"exported {len(records)} message(s) to {path}")
