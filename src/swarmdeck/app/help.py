"""The help screen: every key the control room answers to, from the bindings themselves."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Static


class HelpScreen(ModalScreen[None]):
    """A modal listing the keys; any of Escape, q or ? closes it."""

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("question_mark", "close", "Close", show=False),
    ]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        """Args:
            keys: (key, what it does) pairs to list.
        """
        super().__init__(id="help")
        self._keys = keys

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Label("[b]swarmdeck — keys[/b]")
            lines = [f"[b]{key:>8}[/b]  {what}" for key, what in self._keys]
            yield Static("\n".join(lines), id="help-keys")
            yield Label("[dim]Escape closes this help[/dim]")

    def action_close(self) -> None:
        self.dismiss(None)
