"""Controller mode: which controller leads, and per broker group its master, master epoch and
SyncStateSet as the leader keeps them. The controllers are the ones given to the dashboard
(``--controller``), else the ones the brokers in controller mode name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from admin.models.controller import ControllerStatus, GroupReplicas, Replica
from admin.tui.live import LiveScreen
from admin.tui.table import LiveTable, Row

if TYPE_CHECKING:
    from admin.service import AdminService

GROUP_COLUMNS = ("broker", "master", "master address", "epoch", "SyncStateSet", "set epoch", "not in sync")
ASKING = "asking the controllers ..."
NO_CONTROLLER = "No broker runs in controller mode (start the dashboard with --controller ADDR to ask one)."


def members(replicas: list[Replica]) -> str:
    """Broker ids, the ones whose heartbeats stopped marked."""
    return ", ".join(f"{r.broker_id}" + ("" if r.alive else " (down)") for r in replicas) or "-"


def leader_line(status: ControllerStatus) -> str:
    meta = status.controller
    peers = f" · peers {', '.join(meta.peers)}" if meta.peers else ""
    if meta.leader_id is None:
        return f"No controller leads now (no majority): brokers keep their roles{peers}"
    return f"Controller leader {meta.leader_id} at {meta.leader_address or '?'}{peers}"


def group_row(group: GroupReplicas) -> tuple[str, ...]:
    master = "-" if group.master_id is None else str(group.master_id)
    return (
        group.broker_name,
        master,
        group.master_address or "-",
        str(group.master_epoch),
        members([r for r in group.replicas if r.in_sync]),
        str(group.sync_state_set_epoch),
        members([r for r in group.replicas if not r.in_sync]),
    )


class ControllerScreen(LiveScreen[ControllerStatus | None]):
    def body(self) -> ComposeResult:
        yield Static(ASKING, id="controller-leader", classes="title")
        yield LiveTable(id="controller-groups")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#controller-groups", DataTable).add_columns(*GROUP_COLUMNS)

    async def fetch(self, service: AdminService) -> ControllerStatus | None:
        controllers = list(self.dash.controllers) or await service.controller_addresses()
        return await service.controller_status(controllers) if controllers else None

    def show(self, data: ControllerStatus | None) -> None:
        title = self.query_one("#controller-leader", Static)
        table = self.query_one("#controller-groups", LiveTable)
        if data is None:
            title.update(NO_CONTROLLER)
            table.fill([])
            return
        title.update(leader_line(data))
        shown: list[Row] = [
            (g.broker_name, group_row(g))
            for g in data.groups
            if self.matches(g.broker_name, g.master_address or "")
        ]
        table.fill(shown)

    def focus_object(self, name: str) -> None:
        self.filter_text = name
        self.redraw()
