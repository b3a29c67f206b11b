"""Raising an alert: one row per key, a repeat raising its count and opening it again.

It lives with the actions, below the watchdog, because a caged run raises alerts too
(actions/peer_hint.py) and neither imports the watchdog nor pays for more than sqlite3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3


def raise_alert(
    conn: sqlite3.Connection,
    key: str,
    level: str,
    source: str,
    host: str | None,
    message: str,
    now: float,
) -> None:
    """Inside a write transaction: open the alert `key`, or count it once more if it is open.

    A resolved or acknowledged alert raised again opens again, in the same row, with its count
    kept."""
    conn.execute(
        "INSERT INTO alerts (key, level, source, host, message, created_at, last_seen_at, count)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (key) DO UPDATE SET"
        " level = excluded.level, message = excluded.message,"
        " last_seen_at = excluded.last_seen_at, count = alerts.count + 1, resolved_at = NULL,"
        " acknowledged_at = NULL, acknowledged_by = NULL",
        (key, level, source, host, message, now, now),
    )
