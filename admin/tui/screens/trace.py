"""A message's trace: what its traced clients recorded (the send, each consumption before and after the
listener, the transaction's end), oldest first. Asked once when opened and again on ``r``."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from admin.errors import NotFound
from admin.models import MessageTrace
from admin.tui.fmt import ms_time
from admin.tui.live import LiveScreen
from admin.tui.table import LiveTable, Row

if TYPE_CHECKING:
    from admin.service import AdminService

# A message without trace records is an answer, not a failure: (the trace, or why there is none)
Found = tuple[MessageTrace | None, str]


class TraceScreen(LiveScreen[Found]):
    DEFAULT_CSS = """
    TraceScreen #trace-facts { height: auto; padding: 0 1; }
    TraceScreen #trace-entries { height: 1fr; }
    """
    live: ClassVar[bool] = False
    pushed: ClassVar[bool] = True

    def __init__(self, msg_id: str) -> None:
        super().__init__()
        self.msg_id = msg_id

    def body(self) -> ComposeResult:
        yield Static(f"Trace of {self.msg_id} (r: ask again, esc: back)", classes="title")
        yield Static("looking for trace records ...", id="trace-facts")
        yield LiveTable(id="trace-entries")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#trace-entries", DataTable).add_columns(
            "type", "time", "group", "client host", "store host", "cost ms", "status", "detail"
        )

    async def fetch(self, service: AdminService) -> Found:
        try:
            return await service.message_trace(self.msg_id), ""
        except NotFound as exc:
            return None, str(exc)

    def show(self, data: Found) -> None:
        trace, missing = data
        facts = self.query_one("#trace-facts", Static)
        table = self.query_one("#trace-entries", LiveTable)
        if trace is None:
            facts.update(f"{missing}\nClients record traces only when built with trace=True.")
            table.fill([])
            return
        undecodable = f" · {trace.undecodable} undecodable trace messages" if trace.undecodable else ""
        facts.update(f"topic [b]{trace.topic or '-'}[/] · trace topic {trace.trace_topic}{undecodable}")
        rows: list[Row] = [
            (
                str(i),
                (
                    e.type,
                    ms_time(e.timestamp),
                    e.group,
                    e.client_host or "-",
                    e.store_host or "-",
                    "-" if e.cost_ms is None else str(e.cost_ms),
                    e.status or "-",
                    e.detail or "-",
                ),
            )
            for i, e in enumerate(trace.entries)
            if self.matches(e.type, e.group, e.client_host or "")
        ]
        table.fill(rows)
