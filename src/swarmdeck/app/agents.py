"""The Agents panel: Claude Code sessions and their subagents."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.snapshot import Snapshot


class AgentsPanel(Vertical):
    """Which sessions are live and what their subagents are doing."""

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room."""

    def __init__(self) -> None:
        super().__init__(id="agents", classes="panel")
        self.border_title = "Agents"

    def compose(self) -> ComposeResult:
        yield Label("no Claude Code sessions seen", classes="empty")

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        self.query_one(".empty", Label).display = not snapshot.sessions
