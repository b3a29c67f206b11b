"""Alerts, findings and kill requests as the state store holds them, for the snapshot."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, TypeVar

from swarmdeck.ledger import FINDING_JOB_ENDED

if TYPE_CHECKING:
    from swarmdeck.state import StateStore

Row = TypeVar("Row")


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


@dataclass(frozen=True)
class Finding:
    """A watchdog rule's verdict on one subject; repeats raise its count, not new rows."""

    id: int
    key: str
    rule: str
    subject: str
    severity: str
    """Its level: info, warning or critical."""
    message: str
    first_seen_at: float
    last_seen_at: float
    count: int
    acknowledged_at: float | None
    host: str | None = None
    session_id: str | None = None
    """The Claude Code session the finding concerns, when one does."""
    job_id: int | None = None
    pid: int | None = None
    start_ticks: int | None = None
    """The subject's process, when it is one: what a kill request for it would stop."""
    advice: str | None = None
    """What to do about it, in one line."""
    fired_at: float | None = None
    """When its condition had held long enough to show."""
    acknowledged_by: str | None = None
    """Who acknowledged it (a user name, or `escalation` when the policy acted)."""


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
    finding_key: str | None = None
    requested_by: str | None = None
    slurm_job_id: int | None = None
    """For a job on the Slurm cluster: its id, which approval cancels (pid and ticks are 0)."""


def _read(store: StateStore, kind: type[Row], table: str, where: str, order: str) -> list[Row]:
    """Rows of `table` as `kind`, selecting exactly the dataclass's fields."""
    columns = ", ".join(item.name for item in fields(kind))
    with store.read() as conn:
        rows = conn.execute(
            f"SELECT {columns} FROM {table} WHERE {where} ORDER BY {order}"
        ).fetchall()
    return [kind(**dict(row)) for row in rows]


def open_alerts(store: StateStore) -> list[Alert]:
    """Alerts neither resolved nor acknowledged, newest first."""
    return _read(
        store, Alert, "alerts", "resolved_at IS NULL AND acknowledged_at IS NULL",
        "last_seen_at DESC",
    )


JOB_ENDED = FINDING_JOB_ENDED
"""SQL, true for a finding about a ledger job that has ended (the ledger package words it)."""


def open_findings(store: StateStore) -> list[Finding]:
    """Findings that fired and are not resolved, newest first (one still pending its minimum
    duration is not shown, nor one whose job has ended, even while no watchdog runs to close
    it)."""
    return _read(
        store, Finding, "findings",
        f"resolved_at IS NULL AND fired_at IS NOT NULL AND NOT {JOB_ENDED}",
        "last_seen_at DESC",
    )


def holding_findings(store: StateStore) -> list[Finding]:
    """Conditions the watchdog saw that have not held their minimum duration yet, so are not
    findings to show; oldest first (the one to show first)."""
    return _read(
        store, Finding, "findings",
        f"resolved_at IS NULL AND fired_at IS NULL AND NOT {JOB_ENDED}",
        "first_seen_at ASC",
    )


def pending_kill_requests(store: StateStore) -> list[KillRequest]:
    """Kill requests still waiting for a decision, oldest first."""
    return _read(store, KillRequest, "kill_requests", "state = 'pending'", "requested_at")
