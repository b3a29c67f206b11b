"""Alerts, findings and kill requests as the state store holds them, for the snapshot."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmdeck.state import StateStore


@dataclass(frozen=True)
class Alert:
    """Something a person should see until they acknowledge it or it resolves."""

    id: int
    key: str
    level: str
    source: str
    host: str | None
    message: str
    created_at: float
    last_seen_at: float
    count: int
    acknowledged_at: float | None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Finding:
    """A watchdog rule's verdict on one subject; repeats raise its count, not new rows."""

    id: int
    key: str
    rule: str
    subject: str
    severity: str
    message: str
    first_seen_at: float
    last_seen_at: float
    count: int
    acknowledged_at: float | None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class KillRequest:
    """A kill that waits for a person's approval."""

    id: int
    job_id: int | None
    host: str
    pid: int
    start_ticks: int
    user: str | None
    command: str
    reason: str
    state: str
    requested_at: float

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def open_alerts(store: StateStore) -> list[Alert]:
    """Alerts not yet resolved, newest first."""
    with store.read() as conn:
        rows = conn.execute(
            "SELECT id, key, level, source, host, message, created_at, last_seen_at, count,"
            " acknowledged_at FROM alerts WHERE resolved_at IS NULL ORDER BY last_seen_at DESC"
        ).fetchall()
    return [Alert(**dict(row)) for row in rows]


def open_findings(store: StateStore) -> list[Finding]:
    """Findings not yet resolved, newest first."""
    with store.read() as conn:
        rows = conn.execute(
            "SELECT id, key, rule, subject, severity, message, first_seen_at, last_seen_at, count,"
            " acknowledged_at FROM findings WHERE resolved_at IS NULL ORDER BY last_seen_at DESC"
        ).fetchall()
    return [Finding(**dict(row)) for row in rows]


def pending_kill_requests(store: StateStore) -> list[KillRequest]:
    """Kill requests still waiting for a decision, oldest first."""
    with store.read() as conn:
        rows = conn.execute(
            "SELECT id, job_id, host, pid, start_ticks, user, command, reason, state, requested_at"
            " FROM kill_requests WHERE state = 'pending' ORDER BY requested_at"
        ).fetchall()
    return [KillRequest(**dict(row)) for row in rows]
