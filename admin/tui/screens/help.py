"""The key help dialog (``?``)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = """[b]Everywhere[/]
  1..6      cluster, topics, groups, retry & DLQ, message lookup, controller (failover)
  :         jump: topic NAME, group NAME, broker ADDR, msg ID, or a screen name
  /         filter the list        r  refresh now        ?  this help
  enter     drill down             esc  back / clear     q  quit
[b]Topics[/]   s system  t retry  x DLQ topics (show/hide){topics}
[b]Groups[/]   s system groups (show/hide)  o order: lag time, lag, name  c clients: queues, rates{groups}
[b]Retry & DLQ[/]   enter browse  k DLQ/retry  space mark  e export{dlq}
[b]Message[/]  b body as text / JSON / hex  t trace (send, consumptions, transaction end){message}
"""
# what changes the cluster; left out with --read-only
ACTIONS = {
    "topics": "\n  n new  u update  d delete  m send a test message",
    "groups": "\n  f reset offsets  k skip the backlog  z undo the last reset (a preview first)"
    "\n  n new  u update  d delete",
    "dlq": "\n  s resend marked (or the current) message   a resend all (to the failing group only)",
    "message": "\n  v deliver it to one client of a group (consumeMessageDirectly)",
}


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 90; height: auto; border: thick $accent; background: $surface; padding: 1 2;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close"),
        Binding("q", "close", "Close"),
    ]

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(KEYS.format(**{k: "" if self.read_only else v for k, v in ACTIONS.items()}))

    def action_close(self) -> None:
        self.dismiss(None)
