"""The Alerts panel: what needs a person's eyes, newest first, until acknowledged (`a`) or
until what it says is no longer true (the watchdog's pass resolves it)."""

from __future__ import annotations

import getpass
import time
from dataclasses import replace

from textual.binding import Binding

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.panel import Rows, StorePanel, TablePanel
from swarmdeck.app.readonly import WriteGate
from swarmdeck.hooks.guards import ALERT_SOURCE
from swarmdeck.probes.store_rows import Alert, open_alerts
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.cells import in_order
from swarmdeck.views.records import ALERT_COLUMNS, alert_cells
from swarmdeck.watchdog.alerts import acknowledge_alert


class AlertsPanel(StorePanel, TablePanel):
    """Open alerts, one row per alert key."""

    TITLE = "Alerts"
    COLUMNS = ALERT_COLUMNS
    YIELDING = ("message",)
    KEPT = "age"
    EMPTY = "no open alerts in the state file"
    BINDINGS = [
        Binding("a", "acknowledge", "Acknowledge"),
    ]
    ELSEWHERE = {"acknowledge": "an alert in the Alerts panel (7)"}

    def __init__(self, store: StateStore, *, gate: WriteGate) -> None:
        super().__init__(store, gate=gate, id="alerts")

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        newest = sorted(snapshot.alerts, key=lambda alert: -alert.last_seen_at)
        return {str(alert.id): in_order(alert_cells(alert, now), ALERT_COLUMNS) for alert in newest}

    def subtitle(self, snapshot: Snapshot, rows: Rows) -> str:
        """The guards line: how many refusals the open guard alerts hold (hooks/guards.py
        raises one per guard and session, counted on each repeat); nothing when none."""
        guarded = [alert for alert in snapshot.alerts if alert.source == ALERT_SOURCE]
        if not guarded:
            return ""
        refusals = sum(alert.count for alert in guarded)
        guards = len({alert.key.split(":")[1] for alert in guarded if alert.key.count(":") >= 2})
        said = "refusal" if refusals == 1 else "refusals"
        by = "guard" if guards == 1 else "guards"
        return f"guards: {refusals} {said} by {guards} {by} (`swarmdeck guards`)"

    def selected_alert(self) -> Alert | None:
        chosen = self.query_one(KeyedTable).cursor_key()
        if self.snapshot is None or chosen is None:
            return None
        return next((a for a in self.snapshot.alerts if str(a.id) == chosen), None)

    def action_acknowledge(self) -> None:
        """The alert under the cursor has been read: it leaves the panel."""
        if not self.writable():
            return
        alert = self.selected_alert()
        if alert is None:
            none_open = self.snapshot is not None and not self.snapshot.alerts
            self.notify("no open alerts: nothing to acknowledge" if none_open else
                        "no alert selected: the Alerts panel (7) lists them", severity="warning")
            return
        self.acknowledge(alert)

    def acknowledge(self, alert: Alert) -> None:
        """Record that the person read `alert` (the panel's key, or its detail view's)."""
        if not self.writable():
            return
        who = getpass.getuser()
        if acknowledge_alert(self.store, alert.id, who, time.time()):
            self.notify(f"alert {alert.id} acknowledged by {who}; it leaves the panel")
        else:
            self.notify(f"alert {alert.id} is no longer open: nothing acknowledged",
                        severity="warning")
        if self.snapshot is not None:
            self.snapshot = replace(self.snapshot, alerts=open_alerts(self.store))
