"""Message lookup: by MessageId (an offset id, or a UNIQ_KEY with its topic) or by topic and key
within a time range; enter opens a message."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Input, Static

from admin.errors import BadInput
from admin.models import Messages
from admin.timeparse import parse_time
from admin.tui.fmt import ms_time
from admin.tui.live import LiveScreen
from admin.tui.screens.message import MessageScreen
from admin.tui.table import LiveTable

if TYPE_CHECKING:
    from admin.service import AdminService

FIELDS = ("msgid", "topic", "key", "begin", "end")


class LookupScreen(LiveScreen[Messages | None]):
    DEFAULT_CSS = """
    LookupScreen #lookup-form { height: 3; }
    LookupScreen #lookup-form Input { width: 1fr; }
    LookupScreen #msgid { width: 2fr; }
    """
    live: ClassVar[bool] = False
    AUTO_FOCUS = "#msgid"

    def body(self) -> ComposeResult:
        yield Static("Message lookup: a MessageId, or a topic and key (enter searches)", classes="title")
        with Horizontal(id="lookup-form"):
            yield Input(placeholder="MessageId or UNIQ_KEY", id="msgid")
            yield Input(placeholder="topic", id="topic")
            yield Input(placeholder="key", id="key")
            yield Input(placeholder="from (-1h, ISO, ms)", id="begin")
            yield Input(placeholder="to", id="end")
        yield Static("", id="lookup-title", classes="title")
        yield LiveTable(id="found")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#found", DataTable).add_columns(
            "topic", "queue", "offset", "msg id", "uniq key", "tags", "keys", "stored"
        )

    def value(self, field: str) -> str:
        return self.query_one(f"#{field}", Input).value.strip()

    async def fetch(self, service: AdminService) -> Messages | None:
        msg_id, topic, key = self.value("msgid"), self.value("topic") or None, self.value("key")
        if msg_id:
            return await service.message_get(msg_id, topic)
        if key:
            if topic is None:
                raise BadInput("a key lookup needs the topic")
            begin, end = self.value("begin"), self.value("end")
            return await service.message_query(
                topic,
                key=key,
                begin=parse_time(begin) if begin else 0,
                end=parse_time(end) if end else (1 << 63) - 1,
            )
        return None

    def show(self, data: Messages | None) -> None:
        found = data.messages if data is not None else []
        self.query_one("#lookup-title", Static).update(
            f"{len(found)} message(s) found (enter: detail)" if data is not None else ""
        )
        self.query_one("#found", LiveTable).fill(
            [
                (
                    m.offset_msg_id,
                    (
                        m.topic,
                        str(m.queue_id),
                        str(m.queue_offset),
                        m.offset_msg_id,
                        m.uniq_key or "-",
                        m.tags or "",
                        " ".join(m.keys),
                        ms_time(m.store_timestamp),
                    ),
                )
                for m in found
                if self.matches(m.topic, m.offset_msg_id, m.uniq_key or "", *m.keys)
            ],
        )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id in FIELDS:
            self.action_refresh_now()
            self.query_one("#found", DataTable).focus()
        else:
            super().on_input_submitted(event)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(MessageScreen(event.row_key.value, self.value("topic") or None))

    def lookup(self, msg_id: str) -> None:
        self.query_one("#msgid", Input).value = msg_id
        self.action_refresh_now()

    def focus_object(self, name: str) -> None:
        self.lookup(name)
