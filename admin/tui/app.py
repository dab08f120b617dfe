"""The dashboard application: screens as modes, the global keys, and the connection state."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.reactive import reactive

from admin.errors import ConnectFailed, Timeout
from admin.tui.backend import ServiceThread
from admin.tui.screens.broker import BrokerScreen
from admin.tui.screens.cluster import ClusterScreen
from admin.tui.screens.controller import ControllerScreen
from admin.tui.screens.dlq import DlqScreen
from admin.tui.screens.groups import GroupsScreen
from admin.tui.screens.help import HelpScreen
from admin.tui.screens.jump import JumpScreen
from admin.tui.screens.lookup import LookupScreen
from admin.tui.screens.topics import TopicsScreen

if TYPE_CHECKING:
    from admin.service import AdminService
    from admin.tui.live import LiveScreen

# what ``:`` understands: a word (or its first letter) -> the screen it opens
JUMPS = {
    "cluster": "cluster",
    "topic": "topics",
    "topics": "topics",
    "group": "groups",
    "groups": "groups",
    "dlq": "dlq",
    "retry": "dlq",
    "lookup": "lookup",
    "message": "lookup",
    "msg": "lookup",
    "broker": "broker",
    "controller": "controller",
}


class DashboardApp(App[None]):
    """``rmq dashboard``: cluster, topics, groups, retry/DLQ and message lookup, refreshed live."""

    TITLE = "rmq dashboard"
    CSS = """
    .hidden { display: none; }
    .title { background: $boost; text-style: bold; padding: 0 1; height: 1; }
    DataTable { height: 1fr; }
    TabbedContent, TabbedContent > ContentSwitcher, TabPane { height: 1fr; }
    #filter { height: 3; }
    """
    MODES: ClassVar[dict[str, str | Callable[[], object]]] = {  # type: ignore[assignment]
        "cluster": ClusterScreen,
        "topics": TopicsScreen,
        "groups": GroupsScreen,
        "dlq": DlqScreen,
        "lookup": LookupScreen,
        "controller": ControllerScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("colon", "jump", "Jump"),
        Binding("1", "switch_mode('cluster')", "Cluster", show=False),
        Binding("2", "switch_mode('topics')", "Topics", show=False),
        Binding("3", "switch_mode('groups')", "Groups", show=False),
        Binding("4", "switch_mode('dlq')", "Retry/DLQ", show=False),
        Binding("5", "switch_mode('lookup')", "Lookup", show=False),
        Binding("6", "switch_mode('controller')", "Controller", show=False),
    ]
    DEFAULT_MODE = "cluster"
    status: reactive[str] = reactive("connecting ...")

    def __init__(
        self,
        connect: Callable[[], AdminService],
        *,
        target: str,
        refresh: float = 3.0,
        read_only: bool = False,
        deadline: float = 11.0,
        clock: Callable[[], float] = time.time,
        controllers: Sequence[str] = (),
    ) -> None:
        """``connect`` builds the admin service (on the service's thread); ``refresh`` is seconds
        between refreshes (0 = only on ``r``); ``deadline`` cuts off one refresh; ``controllers``: the
        controller screen's controllers (none: the ones the brokers in controller mode name)."""
        super().__init__()
        self._connect = connect
        self.target = target
        self.refresh_seconds = refresh
        self.read_only = read_only
        self.deadline = deadline
        self.clock = clock
        self.controllers = list(controllers)
        self.connected = True

    @functools.cached_property
    def backend(self) -> ServiceThread:
        """The admin service on its own thread, started on first use."""
        return ServiceThread(self._connect)

    async def on_unmount(self) -> None:
        if "backend" in self.__dict__:
            await self.backend.close()

    # -- connection state -------------------------------------------------------------------------
    def _header(self) -> str:
        every = f"every {self.refresh_seconds:g} s" if self.refresh_seconds > 0 else "manual refresh (r)"
        return f"{self.target} · {every}{' · READ-ONLY' if self.read_only else ''}"

    def report_ok(self) -> None:
        self.connected = True
        stamp = time.strftime("%H:%M:%S", time.localtime(self.clock()))
        self.status = f"{self._header()} · [green]● connected[/] · updated {stamp}"

    def report_failure(self, exc: Exception) -> None:
        lost = isinstance(exc, ConnectFailed | Timeout | TimeoutError)
        self.connected = not lost
        reason = str(exc) or "no answer in time"
        what = "[red]✖ connection lost[/]" if lost else "[yellow]! error[/]"
        self.status = f"{self._header()} · {what}: {reason}" + (" · retrying" if lost else "")

    # -- global actions ---------------------------------------------------------------------------
    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.read_only))

    def action_jump(self) -> None:
        self.push_screen(JumpScreen(), self._jump)

    async def _jump(self, text: str | None) -> None:
        word, _, arg = (text or "").strip().partition(" ")
        word = word.lower()
        mode = JUMPS.get(word) or next((m for w, m in JUMPS.items() if word and w.startswith(word)), None)
        if mode is None:
            if word:
                self.notify(f"nothing called {word!r}: try cluster, topic, group, dlq, msg or broker")
            return
        arg = arg.strip()
        if mode == "broker":
            await self.switch_mode("cluster")
            if arg:
                self.push_screen(BrokerScreen(arg))
            return
        await self.switch_mode(mode)
        if arg:
            screen: LiveScreen[object] = self.screen  # type: ignore[assignment]
            screen.focus_object(arg)
