"""The Alerts panel: what needs a person's eyes, newest first, until acknowledged."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.snapshot import Snapshot

LEVEL_STYLES = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
COLUMNS = (("level", "level"), ("host", "host"), ("message", "message"), ("count", "×"),
           ("age", "age"))


def age_text(seconds: float) -> str:
    """A short age: 42s, 7m, 3h, 2d."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


class AlertsPanel(Vertical):
    """Open alerts, one row per alert key."""

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room."""

    def __init__(self) -> None:
        super().__init__(id="alerts", classes="panel")
        self.border_title = "Alerts"

    def compose(self) -> ComposeResult:
        yield Label("no open alerts", classes="empty")
        yield KeyedTable(COLUMNS, id="alerts-table")

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        now = time.time()
        rows = {
            str(alert.id): (
                Text(alert.level, style=LEVEL_STYLES.get(alert.level, "")),
                alert.host or "",
                alert.message,
                str(alert.count),
                age_text(now - alert.last_seen_at),
            )
            for alert in snapshot.alerts
        }
        self.query_one(".empty", Label).display = not rows
        table = self.query_one(KeyedTable)
        table.display = bool(rows)
        table.sync(rows)
