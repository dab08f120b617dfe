"""A small form (a few labelled one-line fields): what creating or changing an object asks for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class FormScreen(ModalScreen[dict[str, str] | None]):
    """``fields`` are (key, label, default); enter moves to the next field, and on the last one
    answers with every field's text by key; esc answers None."""

    DEFAULT_CSS = """
    FormScreen { align: center middle; }
    FormScreen > Vertical { width: 80; height: auto; border: thick $accent; background: $surface; }
    FormScreen Input { margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, fields: Sequence[tuple[str, str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.fields = list(fields)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"[b]{self.title_text}[/]  (enter: next field / done, esc: cancel)")
            for key, label, default in self.fields:
                yield Label(label)
                yield Input(value=default, id=f"field-{key}")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        inputs = list(self.query(Input))
        index = inputs.index(event.input)
        if index + 1 < len(inputs):
            inputs[index + 1].focus()
            return
        self.dismiss({key: self.query_one(f"#field-{key}", Input).value.strip() for key, _, _ in self.fields})

    def action_cancel(self) -> None:
        self.dismiss(None)
