"""The Alerts panel: what needs a person's eyes, newest first, until acknowledged."""

from __future__ import annotations

from swarmdeck.app.panel import Rows, TablePanel
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import in_order
from swarmdeck.views.records import ALERT_COLUMNS, alert_cells


class AlertsPanel(TablePanel):
    """Open alerts, one row per alert key."""

    TITLE = "Alerts"
    COLUMNS = ALERT_COLUMNS
    EMPTY = "no open alerts in the state file"

    def __init__(self) -> None:
        super().__init__(id="alerts")

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        newest = sorted(snapshot.alerts, key=lambda alert: -alert.last_seen_at)
        return {str(alert.id): in_order(alert_cells(alert, now), ALERT_COLUMNS) for alert in newest}
