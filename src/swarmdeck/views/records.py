"""Alerts, watchdog findings and kill requests as rows: what needs a person's eyes."""

from __future__ import annotations

from rich.text import Text

from swarmdeck.durations import age_text
from swarmdeck.probes.store_rows import Alert, Finding, KillRequest
from swarmdeck.views.cells import Cell

LEVEL_STYLES = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
ALERT_COLUMNS = (
    ("level", "level"),
    ("host", "host"),
    ("message", "message"),
    ("count", "×"),
    ("age", "age"),
)
FINDING_COLUMNS = (
    ("id", "id"),
    ("severity", "severity"),
    ("rule", "rule"),
    ("subject", "subject"),
    ("message", "message"),
    ("age", "age"),
)
"""The id is what `swarmdeck kills --request` takes. A finding's count is left out: it rises
once a watchdog pass, so it reads as that many occurrences; its age says how long it has been
open (the detail view says how many passes saw it)."""
KILL_COLUMNS = (
    ("id", "id"),
    ("host", "host"),
    ("pid", "pid"),
    ("user", "user"),
    ("command", "command"),
    ("reason", "reason"),
    ("age", "asked"),
)


def alert_cells(alert: Alert, now: float) -> dict[str, Cell]:
    return {
        "level": Text(alert.level, style=LEVEL_STYLES.get(alert.level, "")),
        "host": alert.host or "",
        "message": alert.message,
        "count": str(alert.count),
        "age": age_text(now - alert.last_seen_at),
    }


def finding_age(finding: Finding, now: float) -> str:
    """A finding's age, wherever it is shown: the time since it first fired (since it was
    first seen, for one that has not fired)."""
    return age_text(now - (finding.fired_at or finding.first_seen_at))


def finding_cells(finding: Finding, now: float) -> dict[str, Cell]:
    return {
        "id": str(finding.id),
        "severity": Text(finding.severity, style=LEVEL_STYLES.get(finding.severity, "")),
        "rule": finding.rule,
        "subject": finding.subject,
        "message": finding.message,
        "age": finding_age(finding, now),
    }


def kill_cells(request: KillRequest, now: float) -> dict[str, Cell]:
    return {
        "id": str(request.id),
        "host": request.host,
        "pid": str(request.pid),
        "user": request.user or "",
        "command": request.command,
        "reason": request.reason,
        "age": age_text(now - request.requested_at),
    }
