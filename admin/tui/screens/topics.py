"""Topics: a filterable list (system, retry and DLQ topics shown on demand); enter shows a topic's
route, its queues' offsets and the groups consuming it. Unless read-only: create (``n``), update
(``u``) and delete (``d``) topics, and send a test message to one (``m``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from admin.errors import NotFound
from admin.models import OutgoingMessage, TopicDescription, TopicKind, TopicList, TopicSpec, perm_text
from admin.tui.fmt import ms_time, num
from admin.tui.live import LiveScreen
from admin.tui.screens.groups import number
from admin.tui.table import LiveTable, Row

if TYPE_CHECKING:
    from admin.service import AdminService


@dataclass(frozen=True, slots=True)
class TopicsView:
    topics: TopicList
    detail: TopicDescription | None


class TopicsScreen(LiveScreen[TopicsView]):
    DEFAULT_CSS = """
    TopicsScreen #topics { height: 1fr; }
    TopicsScreen #topic-detail { height: 1fr; }
    TopicsScreen #route { width: 1fr; }
    TopicsScreen #queues { width: 1fr; }
    TopicsScreen #topic-groups { height: auto; max-height: 3; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "toggle_kind('system')", "System"),
        Binding("t", "toggle_kind('retry')", "Retry"),
        Binding("x", "toggle_kind('dlq')", "DLQ"),
        Binding("n", "new", "New"),
        Binding("u", "update", "Update"),
        Binding("d", "delete", "Delete"),
        Binding("m", "send", "Send message"),
    ]
    mutations = frozenset({"new", "update", "delete", "send"})

    def __init__(self) -> None:
        super().__init__()
        self.kinds = {TopicKind.NORMAL}
        self.selected: str | None = None

    def body(self) -> ComposeResult:
        yield Static("", id="topics-title", classes="title")
        yield LiveTable(id="topics")
        yield Static("Select a topic with enter", id="topic-title", classes="title")
        with Horizontal(id="topic-detail"):
            yield LiveTable(id="route")
            yield LiveTable(id="queues")
        yield Static("", id="topic-groups")

    def on_mount(self) -> None:
        super().on_mount()
        topics = self.query_one("#topics", DataTable)
        topics.add_columns("topic", "kind", "clusters", "brokers", "read", "write", "perm", "order")
        self.query_one("#route", DataTable).add_columns(
            "broker", "cluster", "addresses", "read", "write", "perm", "order"
        )
        self.query_one("#queues", DataTable).add_columns(
            "broker", "queue", "min", "max", "messages", "last updated"
        )
        topics.focus()

    async def fetch(self, service: AdminService) -> TopicsView:
        listing, detail = await asyncio.gather(service.topic_list(), self._describe(service, self.selected))
        return TopicsView(listing, detail)

    @staticmethod
    async def _describe(service: AdminService, topic: str | None) -> TopicDescription | None:
        if topic is None:
            return None
        try:
            return await service.topic_describe(topic)
        except NotFound:
            return None

    def show(self, data: TopicsView) -> None:
        shown = [t for t in data.topics.topics if t.kind in self.kinds and self.matches(t.name)]
        hidden = ", ".join(k.value for k in TopicKind if k is not TopicKind.NORMAL and k not in self.kinds)
        self.query_one("#topics-title", Static).update(
            f"Topics: {len(shown)} of {len(data.topics.topics)}" + (f" (hidden: {hidden})" if hidden else "")
        )
        self.query_one("#topics", LiveTable).fill(
            [
                (
                    t.name,
                    (
                        t.name,
                        t.kind.value,
                        ",".join(t.clusters),
                        ",".join(t.brokers),
                        num(t.read_queues),
                        num(t.write_queues),
                        perm_text(t.perm) if t.perm is not None else "-",
                        "yes" if t.order else "",
                    ),
                )
                for t in shown
            ],
        )
        self._show_detail(data.detail)

    def _show_detail(self, d: TopicDescription | None) -> None:
        route_rows: list[Row] = []
        queue_rows: list[Row] = []
        if d is None:
            title = "Select a topic with enter" if self.selected is None else f"{self.selected}: not found"
            groups = ""
        else:
            order = {b.strip() for b in (d.route.order_conf or "").split(";") if b}
            queues = {q.broker_name: q for q in d.route.queues}
            for b in d.route.brokers:
                q = queues.get(b.broker_name)
                route_rows.append(
                    (
                        b.broker_name,
                        (
                            b.broker_name,
                            b.cluster,
                            " ".join(f"{i}={a}" for i, a in b.addresses.items()),
                            num(q.read_queues if q else None),
                            num(q.write_queues if q else None),
                            perm_text(q.perm) if q else "-",
                            "yes" if any(o.startswith(b.broker_name + ":") for o in order) else "",
                        ),
                    )
                )
            queue_rows = [
                (
                    f"{q.broker_name}/{q.queue_id}",
                    (
                        q.broker_name,
                        str(q.queue_id),
                        num(q.min_offset),
                        num(q.max_offset),
                        num(q.messages),
                        ms_time(q.last_updated),
                    ),
                )
                for q in d.status.queues
            ]
            title = (
                f"{d.topic} ({d.kind.value}): {d.status.total_messages:,} messages, "
                f"put {d.status.put_tps:g} TPS"
            )
            groups = "Consuming groups: " + (", ".join(d.groups) or "none")
        self.query_one("#topic-title", Static).update(title)
        self.query_one("#topic-groups", Static).update(groups)
        self.query_one("#route", LiveTable).fill(route_rows)
        self.query_one("#queues", LiveTable).fill(queue_rows)

    # -- actions (hidden with --read-only) ----------------------------------------------------------
    def _topic(self) -> str | None:
        return self.chosen(self.selected, "topics", "topic")

    def action_new(self) -> None:
        def create(values: dict[str, str]) -> None:
            if values["name"]:
                queues = number(values["queues"], "queues")
                spec = TopicSpec(values["name"], queues, queues)
                self.act(lambda s: s.topic_create(spec), lambda c: f"topic {c.topic} created")

        fields = [("name", "Topic name", ""), ("queues", "Queues per broker (read and write)", "8")]
        self.ask("New topic", fields, create)

    def action_update(self) -> None:
        topic = self._topic()
        if topic is None:
            return
        current = (
            next((t for t in self.latest.topics.topics if t.name == topic), None) if self.latest else None
        )

        def update(values: dict[str, str]) -> None:
            spec = TopicSpec(
                topic,
                number(values["read"], "read queues"),
                number(values["write"], "write queues"),
                number(values["perm"], "perm"),
            )
            self.act(lambda s: s.topic_update(spec), lambda c: f"topic {c.topic} updated")

        brokers = max(1, len(current.brokers)) if current else 1  # the list sums queues over brokers
        fields = [
            ("read", "Read queues per broker", str(current.read_queues // brokers if current else 8)),
            ("write", "Write queues per broker", str(current.write_queues // brokers if current else 8)),
            ("perm", "Permission: 6 read+write, 4 read, 2 write", str(current.perm or 6 if current else 6)),
        ]
        self.ask(f"Update topic {topic}", fields, update)

    def action_delete(self) -> None:
        topic = self._topic()
        if topic is None:
            return
        text = f"Delete topic {topic} from its brokers and the NameServers (its messages become unreachable)."
        self.confirm(text, topic, lambda s: s.topic_delete(topic), lambda d: f"topic {topic} deleted")

    def action_send(self) -> None:
        topic = self._topic()
        if topic is None:
            return

        def send(values: dict[str, str]) -> None:
            msg = OutgoingMessage(
                topic, values["body"].encode(), values["tags"] or None, values["keys"].split()
            )
            self.act(lambda s: s.message_send(msg), lambda r: f"sent to {topic}: {r.msg_id} ({r.status})")

        fields = [
            ("body", "Body", "hello from rmq dashboard"),
            ("tags", "Tags", ""),
            ("keys", "Keys (space separated)", ""),
        ]
        self.ask(f"Send a test message to {topic}", fields, send)

    def action_toggle_kind(self, kind: str) -> None:
        self.kinds ^= {TopicKind(kind)}
        self.redraw()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "topics" and event.row_key.value is not None:
            self.select(event.row_key.value)

    def select(self, topic: str) -> None:
        self.selected = topic
        self.action_refresh_now()

    def focus_object(self, name: str) -> None:
        if self.latest is not None and all(
            t.name != name for t in self.latest.topics.topics if t.kind in self.kinds
        ):
            self.kinds = set(TopicKind)
            self.redraw()
        self.query_one("#topics", LiveTable).move_to(name)
        self.select(name)

    def back(self) -> None:
        if self.selected is not None:
            self.selected = None
            self._show_detail(None)
