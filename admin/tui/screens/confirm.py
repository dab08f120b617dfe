"""Confirmation of a destructive action: the object's name has to be typed."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 80; height: auto; border: thick $error; background: $surface; }
    #confirm-error { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, action: str, name: str) -> None:
        super().__init__()
        self.action_text = action
        self.expected = name

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"{self.action_text}\nType [b]{self.expected}[/] to confirm, esc to cancel.")
            yield Input(placeholder=self.expected, id="confirm")
            yield Label("", id="confirm-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value == self.expected:
            self.dismiss(True)
        else:
            self.query_one("#confirm-error", Label).update(f"that is not {self.expected}")

    def action_cancel(self) -> None:
        self.dismiss(False)
