"""Alerts: a person acknowledging one, and the watchdog's pass resolving those whose condition
no longer holds (raising one is actions/alerts.py, which a caged run uses too). An alert open,
not acknowledged and not resolved is what the Alerts panel shows."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from swarmdeck.actions.peer_hint import PEER_FITS
from swarmdeck.ledger.schema import QUEUED

if TYPE_CHECKING:
    from swarmdeck.snapshot import Snapshot
    from swarmdeck.state import StateStore


def acknowledge_alert(store: StateStore, alert_id: int, by: str, now: float) -> bool:
    """A person has read the open alert `alert_id`: it leaves the Alerts panel. False when no
    such alert is open (acknowledged or resolved already, or never there)."""
    with store.transaction() as conn:
        cursor = conn.execute(
            "UPDATE alerts SET acknowledged_at = ?, acknowledged_by = ? WHERE id = ?"
            " AND acknowledged_at IS NULL AND resolved_at IS NULL",
            (now, by, alert_id),
        )
    return cursor.rowcount == 1


def why_not_open(store: StateStore, alert_id: int) -> str | None:
    """Why the alert `alert_id` is not open, as a line ("acknowledged by ann 5m ago", "resolved
    5m ago"), or None when there is no such alert at all."""
    from swarmdeck.durations import age_text

    with store.read() as conn:
        row = conn.execute(
            "SELECT acknowledged_at, acknowledged_by, resolved_at FROM alerts WHERE id = ?",
            (alert_id,),
        ).fetchone()
    if row is None:
        return None
    now = time.time()
    if row["acknowledged_at"] is not None:
        by = f" by {row['acknowledged_by']}" if row["acknowledged_by"] else ""
        return f"acknowledged{by} {age_text(now - row['acknowledged_at'])} ago"
    if row["resolved_at"] is not None:
        return f"resolved {age_text(now - row['resolved_at'])} ago"
    return "open"


def resolve_untrue(conn: sqlite3.Connection, snapshot: Snapshot, now: float) -> int:
    """Inside a write transaction: resolve each open peer-fits alert whose workload no longer
    queues on this host (it was admitted, moved or given up); how many were resolved.

    Alerts about a decision (a kill approved, the policy acting) stay until acknowledged."""
    queued = {job.fingerprint for job in snapshot.jobs if job.state == QUEUED}
    rows = conn.execute(
        "SELECT id, key FROM alerts WHERE resolved_at IS NULL AND key LIKE ?", (f"{PEER_FITS}%",)
    ).fetchall()
    untrue = [(now, row["id"]) for row in rows if _workload(row["key"]) not in queued]
    conn.executemany("UPDATE alerts SET resolved_at = ? WHERE id = ?", untrue)
    return len(untrue)


def _workload(key: str) -> str:
    """The workload fingerprint a peer-fits key ends with (a host name holds no colon)."""
    return key.rsplit(":", 1)[-1]



def alert_command(key: str, message: str) -> str | None:
    """The ready-made command an alert's message ends with: a peer-fits alert's
    `swarmdeck peer run …` line; None for others."""
    if not key.startswith(PEER_FITS):
        return None
    return message.rpartition(" fits it now: ")[2] or None
