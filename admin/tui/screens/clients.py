"""A group's clients as they report themselves (GET_CONSUMER_RUNNING_INFO): per client its version,
consume type and rates, per owned queue its commit offset, cached messages, lock and last pull and
consume, and the queues that look stuck. Asked on demand (``r``), not on the refresh timer: every
refresh asks every client through its broker."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from admin.models import GroupClients
from admin.tui.fmt import ms_time, num
from admin.tui.live import LiveScreen
from admin.tui.table import LiveTable, Row

if TYPE_CHECKING:
    from admin.service import AdminService


class ClientsScreen(LiveScreen[GroupClients]):
    DEFAULT_CSS = """
    ClientsScreen #client-list { height: auto; max-height: 12; }
    ClientsScreen #client-queues { height: 1fr; }
    ClientsScreen #client-verdict { height: auto; padding: 0 1; }
    """
    live: ClassVar[bool] = False
    pushed: ClassVar[bool] = True

    def __init__(self, group: str) -> None:
        super().__init__()
        self.group = group

    def body(self) -> ComposeResult:
        yield Static(f"Clients of {self.group} (r: ask again, esc: back)", classes="title")
        yield LiveTable(id="client-list")
        yield Static("asking the clients ...", id="client-verdict")
        yield LiveTable(id="client-queues")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#client-list", DataTable).add_columns(
            "client id", "address", "version", "type", "queues", "cached", "pull TPS", "consume TPS",
            "failed/h", "answer",
        )  # fmt: skip
        self.query_one("#client-queues", DataTable).add_columns(
            "client id", "topic", "broker", "queue", "commit offset", "cached", "locked", "last pull",
            "last consume",
        )  # fmt: skip

    async def fetch(self, service: AdminService) -> GroupClients:
        return await service.group_clients(self.group)

    def show(self, data: GroupClients) -> None:
        clients: list[Row] = []
        queues: list[Row] = []
        problems: list[str] = []
        for c in data.clients:
            if not self.matches(c.client_id, c.address):
                continue
            rates = c.rates
            clients.append(
                (
                    c.client_id,
                    (
                        c.client_id,
                        c.address,
                        c.client_version or "-",
                        c.consume_type or "-",
                        num(len(c.queues)),
                        num(sum(q.cached_count for q in c.queues)),
                        num(round(sum(r.pull_tps for r in rates), 1)),
                        num(round(sum(r.consume_ok_tps for r in rates), 1)),
                        num(sum(r.consume_failed_msgs for r in rates)),
                        c.error or "ok",
                    ),
                )
            )
            queues += [
                (
                    f"{c.client_id}/{q.topic}/{q.broker_name}/{q.queue_id}",
                    (
                        c.client_id,
                        q.topic,
                        q.broker_name,
                        str(q.queue_id),
                        num(q.commit_offset),
                        num(q.cached_count),
                        "yes" if q.locked else "",
                        ms_time(q.last_pull_timestamp),
                        ms_time(q.last_consume_timestamp),
                    ),
                )
                for q in c.queues
            ]
            problems += [
                f"{c.client_id} {p.topic}/{p.broker_name}/{p.queue_id}: {p.kind.value}" for p in c.problems
            ]
        verdict = (
            "subscriptions alike" if data.same_subscriptions else "[b]subscriptions differ between clients[/]"
        )
        if not data.clients:
            verdict = "no client of this group is online"
        self.query_one("#client-verdict", Static).update("; ".join([verdict, *problems]))
        self.query_one("#client-list", LiveTable).fill(clients)
        self.query_one("#client-queues", LiveTable).fill(queues)
