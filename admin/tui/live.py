"""What every dashboard screen shares: the status bar and refreshes in workers.

A :class:`LiveScreen` fetches its data on the admin service's thread (``fetch``, see
:mod:`admin.tui.backend`) and lays it out in its tables (``show``, see :mod:`admin.tui.table`).
Each refresh gets a generation number; a result that arrives after a newer refresh began is
dropped. A refresh is cut off after the app's deadline, so a slow or dead broker never holds the
screen. The timer only refreshes the screen on top: behind a modal dialog, or while another screen
shows, refresh pauses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from admin.errors import AdminError
from admin.tui.screens.confirm import ConfirmScreen
from admin.tui.screens.form import FormScreen
from admin.tui.table import selected_key

if TYPE_CHECKING:
    from admin.service import AdminService
    from admin.tui.app import DashboardApp

D = TypeVar("D")
T = TypeVar("T")


class StatusBar(Static):
    """The app's connection state, on every screen."""

    DEFAULT_CSS = "StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }"

    def on_mount(self) -> None:
        self.watch(self.app, "status", self._changed)

    def _changed(self, text: str) -> None:
        self.update(text)


SCREENS = (("1", "cluster", "Cluster"), ("2", "topics", "Topics"), ("3", "groups", "Groups"),
           ("4", "dlq", "Retry/DLQ"), ("5", "lookup", "Lookup"),
           ("6", "controller", "Controller"))  # fmt: skip


class ScreenBar(Static):
    """The screens and their keys, the current one highlighted: what ``1``..``6`` open."""

    DEFAULT_CSS = "ScreenBar { height: 1; background: $panel; padding: 0 1; }"

    def on_mount(self) -> None:
        self.watch(self.app, "current_mode", self._changed)

    def _changed(self, mode: str) -> None:
        self.update(
            "  ".join(
                f"[reverse b] {key} {label} [/]" if name == mode else f"[b]{key}[/] {label}"
                for key, name, label in SCREENS
            )
        )


class LiveScreen(Screen[None], Generic[D]):
    """A screen whose data is fetched from the admin service and refreshed on a timer."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh_now", "Refresh"),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "back", "Back"),
    ]
    mutations: ClassVar[frozenset[str]] = frozenset()  # actions that change the cluster: not read-only
    live: ClassVar[bool] = True  # refreshed by the timer (False: only on demand)
    pushed: ClassVar[bool] = False  # a drill-down screen: esc goes back to the one below
    AUTO_FOCUS = "DataTable"

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0
        self.latest: D | None = None
        self.filter_text = ""
        self.service_ms = 0.0  # time the last refresh spent in the admin service
        self.busy = False

    @property
    def dash(self) -> DashboardApp:
        return cast("DashboardApp", self.app)

    def compose(self) -> ComposeResult:
        box = Input(placeholder="filter (esc clears)", id="filter")
        box.display = False
        yield box
        yield ScreenBar()
        yield from self.body()
        yield StatusBar()
        yield Footer()

    def body(self) -> ComposeResult:
        raise NotImplementedError

    async def fetch(self, service: AdminService) -> D:
        """The screen's data; runs on the service's thread, so it only reads the screen's settings."""
        raise NotImplementedError

    def show(self, data: D) -> None:
        raise NotImplementedError

    def focus_object(self, name: str) -> None:
        """Put the cursor on an object named by the jump dialog (``:topic NAME``)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """With ``--read-only`` the actions that change the cluster are neither shown nor run."""
        return not (action in self.mutations and self.dash.read_only)

    def act(self, call: Callable[[AdminService], Awaitable[T]], done: Callable[[T], str]) -> None:
        """Run ``call`` on the service's thread, then say ``done(result)`` (or the error) and refresh."""

        async def run() -> None:
            try:
                result = await self.dash.backend.call(call)
            except AdminError as exc:
                self.notify(str(exc), severity="error", timeout=10)
                return
            self.notify(done(result))
            self.action_refresh_now()

        self.run_worker(run, group="action", exit_on_error=False)  # type: ignore[arg-type]

    # -- asking before acting (the actions hidden with --read-only) ------------------------------
    def chosen(self, selected: str | None, table: str, what: str) -> str | None:
        """``selected`` (chosen with enter or a jump), else the key under ``table``'s cursor; None,
        with a word why, when there is neither."""
        name = selected or selected_key(self.query_one(f"#{table}", DataTable))
        if name is None:
            self.notify(f"select a {what} first", severity="warning")
        return name

    def ask(
        self, title: str, fields: Sequence[tuple[str, str, str]], then: Callable[[dict[str, str]], None]
    ) -> None:
        """Ask for ``fields`` (key, label, default) in a form, then call ``then`` with the answers;
        a value it rejects (an AdminError, such as a bad number) is shown. Esc asks nothing more."""

        def answered(values: dict[str, str] | None) -> None:
            if values is None:
                return
            try:
                then(values)
            except AdminError as exc:
                self.notify(str(exc), severity="error")

        self.app.push_screen(FormScreen(title, fields), answered)

    def confirm(
        self, text: str, name: str, call: Callable[[AdminService], Awaitable[T]], done: Callable[[T], str]
    ) -> None:
        """Show ``text`` and have ``name`` typed, then :meth:`act`."""

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.act(call, done)

        self.app.push_screen(ConfirmScreen(text, name), confirmed)

    # -- refreshing -------------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self.live and self.dash.refresh_seconds > 0:
            self.set_interval(self.dash.refresh_seconds, self._tick)

    def on_screen_resume(self) -> None:
        if self.live or self.latest is None:
            self.action_refresh_now()

    def _tick(self) -> None:
        if self.app.screen is self and not self.busy:
            self.action_refresh_now()

    def action_refresh_now(self) -> None:
        self.generation += 1
        self.busy = True
        generation = self.generation

        async def load() -> None:  # a function, not a coroutine: one cancelled early is never left unawaited
            await self._load(generation)

        # textual's WorkType cannot solve its result type from an async function returning None
        self.run_worker(load, group="refresh", exclusive=True, exit_on_error=False)  # type: ignore[arg-type]

    async def _load(self, generation: int) -> None:
        began = time.perf_counter()
        try:
            data = await asyncio.wait_for(self.dash.backend.call(self.fetch), self.dash.deadline)
        except (AdminError, TimeoutError) as exc:
            if generation == self.generation:
                self.busy = False
                self.dash.report_failure(exc)
            return
        if generation != self.generation:
            return  # a newer refresh started: this answer is stale
        self.service_ms = (time.perf_counter() - began) * 1000
        self.latest = data
        try:
            self.show(data)
        finally:
            self.busy = False
        self.dash.report_ok()

    def redraw(self) -> None:
        if self.latest is not None:
            self.show(self.latest)

    # -- filter and back --------------------------------------------------------------------------
    def matches(self, *texts: str) -> bool:
        needle = self.filter_text.lower()
        return not needle or any(needle in t.lower() for t in texts)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.filter_text = event.value
            self.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.focus_next(DataTable)

    def action_back(self) -> None:
        """Clear the filter; on a drilled-down screen go back."""
        box = self.query_one("#filter", Input)
        if self.filter_text or box.display:
            box.value = ""
            box.display = False
            self.filter_text = ""
            self.redraw()
            self.focus_next(DataTable)
        elif self.pushed:
            self.app.pop_screen()
        else:
            self.back()

    def back(self) -> None:
        """Esc with no filter on a top screen (e.g. close a detail pane)."""
