"""One message: where it is stored, its properties, its body as text, JSON or hex, and whether each
group consuming its topic consumed it; ``t`` opens its trace; ``v`` (unless read-only) hands it to one
online client of a group (consumeMessageDirectly) and shows what the listener answered."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from admin.errors import NotFound
from admin.models import DirectDelivery, MessageTracks
from admin.tui.fmt import body_view, ms_time
from admin.tui.live import LiveScreen
from admin.tui.table import LiveTable, Row

if TYPE_CHECKING:
    from admin.service import AdminService

BODY_MODES = ("text", "json", "hex")


class MessageScreen(LiveScreen[MessageTracks]):
    DEFAULT_CSS = """
    MessageScreen #message-facts { height: auto; padding: 0 1; }
    MessageScreen #message-tables { height: 1fr; }
    MessageScreen #properties { width: 1fr; }
    MessageScreen #tracks { width: 1fr; }
    MessageScreen #body-box { height: 1fr; border: round $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "body_mode", "Body text/JSON/hex"),
        Binding("t", "trace", "Trace"),
        Binding("v", "deliver", "Deliver to a client"),
    ]
    mutations = frozenset({"deliver"})
    live: ClassVar[bool] = False
    pushed: ClassVar[bool] = True

    def __init__(self, msg_id: str, topic: str | None = None) -> None:
        super().__init__()
        self.msg_id = msg_id
        self.topic = topic
        self.body_mode = "text"

    def body(self) -> ComposeResult:
        yield Static(f"Message {self.msg_id} (esc: back)", classes="title")
        yield Static("loading ...", id="message-facts")
        with Horizontal(id="message-tables"):
            yield LiveTable(id="properties")
            yield LiveTable(id="tracks")
        with VerticalScroll(id="body-box"):
            yield Static("", id="message-body", markup=False)

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#properties", DataTable).add_columns("property", "value")
        self.query_one("#tracks", DataTable).add_columns("group", "track", "detail")

    async def fetch(self, service: AdminService) -> MessageTracks:
        return await service.message_track(self.msg_id, self.topic)

    def show(self, data: MessageTracks) -> None:
        m = data.message
        self.query_one("#message-facts", Static).update(
            f"topic [b]{m.topic}[/] · queue {m.queue_id} · offset {m.queue_offset} · "
            f"commitlog {m.physical_offset}\nmsg id {m.offset_msg_id} · uniq key {m.uniq_key or '-'} · "
            f"tags {m.tags or '-'} · keys {' '.join(m.keys) or '-'}\n"
            f"born {ms_time(m.born_timestamp)} at {m.born_host} · stored {ms_time(m.store_timestamp)} "
            f"at {m.store_host} · reconsumed {m.reconsume_times} · {len(m.body)} bytes · "
            f"body as {self.body_mode}"
        )
        props: list[Row] = [(k, (k, v)) for k, v in sorted(m.properties.items()) if self.matches(k, v)]
        self.query_one("#properties", LiveTable).fill(props)
        self.query_one("#tracks", LiveTable).fill(
            [(t.group, (t.group, t.track_type, t.detail or "")) for t in data.tracks],
        )
        self.query_one("#message-body", Static).update(body_view(m.body, self.body_mode))

    def action_trace(self) -> None:
        """Open the message's trace, found by its UNIQ_KEY (the msgId traced clients record)."""
        from admin.tui.screens.trace import TraceScreen

        if self.latest is not None:
            m = self.latest.message
            self.app.push_screen(TraceScreen(m.uniq_key or m.offset_msg_id))

    def action_deliver(self) -> None:
        if self.latest is None:
            return
        m = self.latest.message
        msg_id, topic = m.offset_msg_id, m.topic
        groups = [t.group for t in self.latest.tracks]

        def deliver_to(values: dict[str, str]) -> None:
            if not values["group"]:
                return
            group, client = values["group"], values["client"]

            async def deliver(s: AdminService) -> DirectDelivery:
                cid = client
                if not cid:  # the first online client of the group
                    online = (await s.group_connections(group)).clients
                    if not online:
                        raise NotFound(f"no client of {group} is online")
                    cid = online[0].client_id
                return await s.message_deliver(msg_id, group, cid, topic)

            self.act(deliver, lambda d: f"{d.client_id}: {d.result} in {d.spent_ms} ms ({d.remark or '-'})")

        fields = [
            ("group", "Consumer group", groups[0] if groups else ""),
            ("client", "Client id (empty: the group's first online client)", ""),
        ]
        self.ask("Deliver this message to one client", fields, deliver_to)

    def action_body_mode(self) -> None:
        self.body_mode = BODY_MODES[(BODY_MODES.index(self.body_mode) + 1) % len(BODY_MODES)]
        self.redraw()
