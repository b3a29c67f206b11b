"""Findings in the state store: one row per key, upserted by each pass inside its transaction.

A finding seen again raises its count (of the passes that saw it, said so by `passes_text`)
and last-seen time, never a new row. It shows once its condition has held `min_duration`
seconds and stays open `merge_interval` seconds after it is last seen, so a condition that
flickers is one finding; then it is closed, and the same row opens again should it come back.
The app and `swarmdeck watch` may both run passes; only the holder of the writer's lease (a
row in `watchdog_lease`) writes, so no count is ever raised twice for one moment.
"""

from __future__ import annotations

import secrets
import socket
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swarmdeck.probes.procs import identity, own_identity
from swarmdeck.probes.store_rows import JOB_ENDED, Finding
from swarmdeck.words import counted

if TYPE_CHECKING:
    from swarmdeck.config import WatchdogConfig
    from swarmdeck.state import StateStore

LEASE = "writer"
INFO = "info"
WARNING = "warning"
CRITICAL = "critical"
LEVELS = (INFO, WARNING, CRITICAL)


@dataclass(frozen=True)
class FindingDraft:
    """What a rule says about one subject now; `key` is rule + subject, stable across passes."""

    key: str
    rule: str
    subject: str
    severity: str
    message: str
    advice: str
    session_id: str | None = None
    host: str | None = None
    job_id: int | None = None
    pid: int | None = None
    start_ticks: int | None = None


@dataclass
class PassOutcome:
    """What one pass did to the store; `writer` False means it only read."""

    writer: bool
    fired: list[Finding] = field(default_factory=list)
    """Findings that began to show in this pass."""
    seen: list[Finding] = field(default_factory=list)
    """Every finding the pass saw and that shows, after its update."""
    closed: int = 0


def passes_text(count: int) -> str:
    """A finding's count as what it is: "473 watchdog passes" (that saw it)."""
    return counted(count, "watchdog pass", plural="watchdog passes")


def new_holder() -> str:
    """A lease holder's name: host, pid, start ticks (so a dead holder can be told), a token."""
    me = own_identity()
    return f"{socket.gethostname()}:{me.pid}:{me.start_ticks}:{secrets.token_hex(4)}"


def _holder_alive(holder: str) -> bool:
    parts = holder.split(":")
    if len(parts) != 4 or parts[0] != socket.gethostname():
        return True  # another host's holder: only its expiry can tell
    try:
        pid, ticks = int(parts[1]), int(parts[2])
    except ValueError:
        return False
    found = identity(pid)
    return found is not None and found.start_ticks == ticks


def take_lease(conn: sqlite3.Connection, holder: str, now: float, ttl: float) -> bool:
    """Inside a write transaction: hold or renew the writer's lease; False when another holds it.
    A lease not renewed in time, or whose holder's process is gone, may be taken over."""
    row = conn.execute(
        "SELECT holder, expires_at FROM watchdog_lease WHERE name = ?", (LEASE,)
    ).fetchone()
    if (
        row is not None
        and row["holder"] != holder
        and row["expires_at"] > now
        and _holder_alive(row["holder"])
    ):
        if row["expires_at"] > now + ttl:
            # Taken while the wall clock ran ahead: it lasts one lease time from now, not
            # until the clock catches up with it.
            conn.execute(
                "UPDATE watchdog_lease SET expires_at = ? WHERE name = ?", (now + ttl, LEASE)
            )
        return False
    conn.execute(
        "INSERT INTO watchdog_lease (name, holder, expires_at) VALUES (?, ?, ?)"
        " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
        " expires_at = excluded.expires_at",
        (LEASE, holder, now + ttl),
    )
    return True


def release_lease(store: StateStore, holder: str) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM watchdog_lease WHERE name = ? AND holder = ?", (LEASE, holder))


def lease_holder(store: StateStore) -> str | None:
    with store.read() as conn:
        row = conn.execute("SELECT holder FROM watchdog_lease WHERE name = ?", (LEASE,)).fetchone()
    return row["holder"] if row else None


def lease_ttl(config: WatchdogConfig) -> float:
    """How long a lease lasts unrenewed: three passes, so one slow pass does not lose it."""
    return max(3.0 * config.interval, 2.0)


_COLUMNS = ", ".join(Finding.__dataclass_fields__)


def record_pass(
    conn: sqlite3.Connection,
    drafts: list[FindingDraft],
    config: WatchdogConfig,
    holder: str,
    now: float,
) -> PassOutcome:
    """Inside a write transaction: upsert this pass's drafts and close what cleared, if
    `holder` holds (or takes) the lease.

    A finding about a job whose ledger row has ended is closed at once: that job cannot come
    back, so there is nothing to merge, and it is not open for a reader either, writer or no
    writer (`probes.store_rows.open_findings`)."""
    if not take_lease(conn, holder, now, lease_ttl(config)):
        return PassOutcome(writer=False)
    _bring_back_from_the_future(conn, now)
    outcome = PassOutcome(writer=True)
    keys = set()
    for draft in drafts:
        if draft.key in keys:
            continue
        keys.add(draft.key)
        fired = _upsert(conn, draft, config, now)
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM findings WHERE key = ?", (draft.key,)
        ).fetchone()
        finding = Finding(**dict(row))
        if finding.fired_at is not None:
            outcome.seen.append(finding)
        if fired:
            outcome.fired.append(finding)
    outcome.closed = _close_cleared(conn, keys, config, now)
    return outcome


def _bring_back_from_the_future(conn: sqlite3.Connection, now: float) -> None:
    """Take as `now` every time of an open finding that lies after it.

    Such a time was written by a pass while the wall clock ran ahead and has since been set
    back. Left as it was, a finding last seen "in ten days" would stay open ten days after its
    subject is gone, and one first seen then would not show its age; taken as now, it merges
    and closes by the rules, counted from the first pass that saw the clock right again.
    """
    for column in ("first_seen_at", "last_seen_at", "fired_at"):
        conn.execute(
            f"UPDATE findings SET {column} = ? WHERE resolved_at IS NULL AND {column} > ?",
            (now, now),
        )


def _upsert(
    conn: sqlite3.Connection, draft: FindingDraft, config: WatchdogConfig, now: float
) -> bool:
    """One draft into its row; True when the finding begins to show now."""
    at_once = now if config.min_duration <= 0 else None
    row = conn.execute(
        "SELECT id, first_seen_at, resolved_at, fired_at FROM findings WHERE key = ?",
        (draft.key,),
    ).fetchone()
    facts = (
        draft.rule, draft.subject, draft.severity, draft.message, draft.advice, draft.session_id,
        draft.host, draft.job_id, draft.pid, draft.start_ticks,
    )
    if row is None:
        conn.execute(
            "INSERT INTO findings (key, rule, subject, severity, message, advice, session_id,"
            " host, job_id, pid, start_ticks, first_seen_at, last_seen_at, count, fired_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
            (draft.key, *facts, now, now, at_once),
        )
        return at_once is not None
    if row["resolved_at"] is not None:
        conn.execute(
            "UPDATE findings SET rule = ?, subject = ?, severity = ?, message = ?, advice = ?,"
            " session_id = ?, host = ?, job_id = ?, pid = ?, start_ticks = ?,"
            " first_seen_at = ?, last_seen_at = ?, count = count + 1, resolved_at = NULL,"
            " acknowledged_at = NULL, acknowledged_by = NULL, fired_at = ? WHERE id = ?",
            (*facts, now, now, at_once, row["id"]),
        )
        return at_once is not None
    fires = row["fired_at"] is None and now - row["first_seen_at"] >= config.min_duration
    conn.execute(
        "UPDATE findings SET rule = ?, subject = ?, severity = ?, message = ?, advice = ?,"
        " session_id = ?, host = ?, job_id = ?, pid = ?, start_ticks = ?,"
        " last_seen_at = ?, count = count + 1, fired_at = COALESCE(fired_at, ?) WHERE id = ?",
        (*facts, now, now if fires else None, row["id"]),
    )
    return fires


def _close_cleared(
    conn: sqlite3.Connection, seen: set[str], config: WatchdogConfig, now: float
) -> int:
    """Close open findings not seen in this pass for `merge_interval` seconds, and at once
    those whose job has ended."""
    stale = conn.execute(
        "SELECT id, key FROM findings WHERE resolved_at IS NULL AND (last_seen_at <= ?"
        f" OR {JOB_ENDED})",
        (now - config.merge_interval,),
    ).fetchall()
    ids = [(now, row["id"]) for row in stale if row["key"] not in seen]
    conn.executemany("UPDATE findings SET resolved_at = ? WHERE id = ?", ids)
    return len(ids)


def acknowledge(store: StateStore, finding_id: int, by: str, now: float) -> bool:
    """Mark a finding acknowledged by `by` (a user name) at `now`; False when there is no open
    finding with that id."""
    with store.transaction() as conn:
        cursor = conn.execute(
            "UPDATE findings SET acknowledged_at = ?, acknowledged_by = ?"
            " WHERE id = ? AND resolved_at IS NULL",
            (now, by, finding_id),
        )
    return cursor.rowcount > 0


def finding_by_id(store: StateStore, finding_id: int) -> Finding | None:
    with store.read() as conn:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM findings WHERE id = ?", (finding_id,)
        ).fetchone()
    return Finding(**dict(row)) if row else None


def findings_fired_since(
    store: StateStore, moment: float, session_id: str | None = None
) -> list[Finding]:
    """Open findings that began to show at or after `moment` (of one session, when given)."""
    where = "resolved_at IS NULL AND fired_at >= ?"
    params: list[object] = [moment]
    if session_id is not None:
        where += " AND session_id = ?"
        params.append(session_id)
    with store.read() as conn:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM findings WHERE {where} ORDER BY fired_at, id", params
        ).fetchall()
    return [Finding(**dict(row)) for row in rows]
