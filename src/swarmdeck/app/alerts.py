"""The Alerts panel: what needs a person's eyes, newest first, until acknowledged."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import in_order
from swarmdeck.views.records import ALERT_COLUMNS, alert_cells


class AlertsPanel(Vertical):
    """Open alerts, one row per alert key."""

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room."""

    def __init__(self) -> None:
        super().__init__(id="alerts", classes="panel")
        self.border_title = "Alerts"

    def compose(self) -> ComposeResult:
        yield Label("no open alerts", classes="empty")
        yield KeyedTable(ALERT_COLUMNS, id="alerts-table")

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        now = time.time()
        rows = {
            str(alert.id): in_order(alert_cells(alert, now), ALERT_COLUMNS)
            for alert in snapshot.alerts
        }
        self.query_one(".empty", Label).display = not rows
        table = self.query_one(KeyedTable)
        table.display = bool(rows)
        table.sync(rows)
