"""The state file's schema: what its tables are, and every forward step from an older file.

A file is swarmdeck's when its header carries APPLICATION_ID and its `swarmdeck_meta` table says
so; anything else is refused before a byte is written (`stored_version`). The jobs table's own
shape lives with the rest of the jobs table, in the ledger package.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from swarmdeck.errors import StateError

# APPLICATION_ID is written to the SQLite header (`PRAGMA application_id`) so the file says
# whose it is; its home is the light hook writer, which checks it without importing this.
from swarmdeck.hook_spool import APPLICATION_ID
from swarmdeck.ledger.schema import (
    JOBS_V1,
    JOBS_V2,
    JOBS_V3,
    JOBS_V4,
    JOBS_V5,
    JOBS_V10,
    JOBS_V13,
    JOBS_V15,
    NOW_SQL,
)
from swarmdeck.state.refusals import MOVE_ASIDE, corrupt

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

APPLICATION_NAME = "swarmdeck"
"""Written to `swarmdeck_meta` under key `application`."""


@dataclass(frozen=True)
class Migration:
    """One forward step of the schema.

    `apply` is SQL (several statements allowed) or a callable given the connection. It runs
    inside the migration's own `BEGIN IMMEDIATE` transaction with foreign keys off (checked
    with `PRAGMA foreign_key_check` before commit), so a table can be rebuilt the SQLite way.
    """

    version: int
    description: str
    apply: str | Callable[[sqlite3.Connection], None]


# Job ids in dispatches, kill requests and peaks may name a job in another host's ledger,
# so they carry no foreign key.
SCHEMA_V1 = JOBS_V1 + f"""
CREATE TABLE peaks (
    fingerprint TEXT NOT NULL,
    job_id INTEGER,
    peak INTEGER NOT NULL,
    hit_ceiling INTEGER DEFAULT 0 CHECK (hit_ceiling IN (0, 1)),
    cap INTEGER,
    duration REAL,
    outcome TEXT,
    recorded_at REAL NOT NULL DEFAULT {NOW_SQL}
);
CREATE INDEX peaks_by_fingerprint ON peaks (fingerprint, recorded_at);

CREATE TABLE alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    level TEXT,
    source TEXT,
    host TEXT,
    message TEXT NOT NULL,
    created_at REAL NOT NULL DEFAULT {NOW_SQL},
    last_seen_at REAL NOT NULL DEFAULT {NOW_SQL},
    count INTEGER NOT NULL DEFAULT 1,
    acknowledged_at REAL,
    resolved_at REAL
);
CREATE INDEX alerts_by_resolved_at ON alerts (resolved_at);

CREATE TABLE findings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    rule TEXT NOT NULL,
    subject TEXT,
    severity TEXT,
    message TEXT,
    first_seen_at REAL NOT NULL DEFAULT {NOW_SQL},
    last_seen_at REAL NOT NULL DEFAULT {NOW_SQL},
    count INTEGER NOT NULL DEFAULT 1,
    acknowledged_at REAL,
    resolved_at REAL
);
CREATE INDEX findings_by_rule ON findings (rule);
CREATE INDEX findings_by_resolved_at ON findings (resolved_at);

CREATE TABLE kill_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER,
    host TEXT,
    pid INTEGER NOT NULL,
    start_ticks INTEGER NOT NULL,
    user TEXT,
    command TEXT,
    reason TEXT,
    finding_key TEXT,
    state TEXT NOT NULL,
    requested_at REAL NOT NULL DEFAULT {NOW_SQL},
    decided_at REAL,
    decided_by TEXT,
    result TEXT
);
CREATE INDEX kill_requests_by_state ON kill_requests (state);
CREATE INDEX kill_requests_by_finding_key ON kill_requests (finding_key);

CREATE TABLE dispatches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    argv TEXT NOT NULL CHECK (json_valid(argv)),
    host TEXT,
    reason TEXT,
    job_id INTEGER,
    created_at REAL NOT NULL DEFAULT {NOW_SQL},
    exit_code INTEGER
);
CREATE INDEX dispatches_by_created_at ON dispatches (created_at);

CREATE TABLE hook_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event TEXT NOT NULL,
    session_id TEXT,
    agent_id TEXT,
    tool_name TEXT,
    cwd TEXT,
    payload TEXT CHECK (payload IS NULL OR json_valid(payload)),
    received_at REAL NOT NULL DEFAULT {NOW_SQL}
);
CREATE INDEX hook_events_by_session ON hook_events (session_id, received_at);
CREATE INDEX hook_events_by_received_at ON hook_events (received_at);
"""

LEDGER_ID_SQL = (
    "INSERT OR IGNORE INTO swarmdeck_meta (key, value)"
    " VALUES ('ledger_id', lower(hex(randomblob(16))));"
)
"""Give the store its ledger id: a new file when it is set up, an older one by migration 11."""

MIGRATIONS: list[Migration] = [
    Migration(
        1, "jobs, peaks, alerts, findings, kill requests, dispatches, hook events", SCHEMA_V1
    ),
    Migration(
        2,
        "jobs: when a job's booking was admitted (a queued row exists before it)",
        JOBS_V2,
    ),
    Migration(
        3,
        "watchdog: jobs name the Claude Code session and subagent that started them; findings "
        "get their subject's process and session, advice, when they fired; kill "
        "requests say who asked; the watchdog writer's lease",
        JOBS_V3
        + """
        ALTER TABLE findings ADD COLUMN host TEXT;
        ALTER TABLE findings ADD COLUMN session_id TEXT;
        ALTER TABLE findings ADD COLUMN job_id INTEGER;
        ALTER TABLE findings ADD COLUMN pid INTEGER;
        ALTER TABLE findings ADD COLUMN start_ticks INTEGER;
        ALTER TABLE findings ADD COLUMN advice TEXT;
        ALTER TABLE findings ADD COLUMN fired_at REAL;
        CREATE INDEX findings_by_session ON findings (session_id, resolved_at);
        ALTER TABLE kill_requests ADD COLUMN requested_by TEXT;
        CREATE TABLE watchdog_lease (
            name TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at REAL NOT NULL
        );
        """,
    ),
    Migration(
        4,
        "jobs: the run directory of a job run on a peer; dispatches: the memory each booked",
        JOBS_V4 + " ALTER TABLE dispatches ADD COLUMN booked INTEGER;",
    ),
    Migration(
        5,
        "jobs: the Slurm job id of a job submitted to the cluster (NULL for a local run)",
        JOBS_V5,
    ),
    Migration(
        6,
        "kill requests: the Slurm job id of a cluster job, which is stopped by scancel, never by"
        " a signal to a pid",
        "ALTER TABLE kill_requests ADD COLUMN slurm_job_id INTEGER;",
    ),
    Migration(
        7,
        "hook events: an index by event, so a refresh finds the few Notification and subagent"
        " events of the day without reading every tool call's row",
        "CREATE INDEX hook_events_by_event ON hook_events (event, received_at);",
    ),
    Migration(
        8,
        "alerts: who acknowledged an alert (acknowledged_at says when)",
        "ALTER TABLE alerts ADD COLUMN acknowledged_by TEXT;",
    ),
    Migration(
        9,
        "findings: who acknowledged a finding (acknowledged_at says when)",
        "ALTER TABLE findings ADD COLUMN acknowledged_by TEXT;",
    ),
    Migration(
        10,
        "jobs: the --cap as the person gave it ('8G', '70%'; '' when none was given), so a"
        " rerun repeats it; rows from before read NULL: their cap is the cage's, not what was"
        " declared",
        JOBS_V10,
    ),
    Migration(
        11,
        "meta: the ledger's own id, random, so that an emptied or replaced state file is told"
        " from the ledger it was (ledger_mark.py)",
        LEDGER_ID_SQL,
    ),
    Migration(
        12,
        "input runs: the fingerprint of a run's --inputs and the job that ran with them, so a"
        " rerun with nothing changed since a success is refused (actions/preflight.py)",
        "CREATE TABLE input_runs (fingerprint TEXT NOT NULL, job_id INTEGER NOT NULL,"
        " recorded_at REAL NOT NULL);"
        " CREATE INDEX input_runs_by_fingerprint ON input_runs (fingerprint, job_id);",
    ),
    Migration(
        13,
        "jobs: the run-scope declaration (SWARMDECK_SCOPE='kind=…; what=…; scope=…; why=…')"
        " the job was started with; NULL when none was",
        JOBS_V13,
    ),
    Migration(
        14,
        "session titles: the last title each Claude Code session's pid file gave, shown once"
        " its process and pid file are gone (probes/claude/session_titles.py)",
        "CREATE TABLE session_titles (session_id TEXT PRIMARY KEY, title TEXT NOT NULL,"
        " seen_at REAL NOT NULL);"
        " CREATE INDEX session_titles_by_seen_at ON session_titles (seen_at);",
    ),
    Migration(
        15,
        "jobs and peaks: indexes by host and state, by folder and by job, so that a refresh"
        " counts the host's ended jobs and a job's priors read its folder's newest runs"
        " without reading every row the ledger ever kept",
        JOBS_V15 + " CREATE INDEX peaks_by_job ON peaks (job_id);",
    ),
    Migration(
        16,
        "peaks: seconds from a run's start to when its working set reached its peak, so a"
        " running job books its working set once its runs show it has peaked"
        " (booking.settled_booking); NULL for the runs recorded before and those measured"
        " elsewhere",
        "ALTER TABLE peaks ADD COLUMN peak_at REAL;",
    ),
]
"""Every schema step, in increasing version order. Append; never edit a released step."""


def latest_version() -> int:
    """The schema version this code writes: the highest in MIGRATIONS."""
    return max(m.version for m in MIGRATIONS)


def pending_migrations(stored: int) -> list[Migration]:
    """The steps above schema `stored`, in order. A misordered MIGRATIONS would skip steps
    silently on some databases: it is refused loudly."""
    versions = [m.version for m in MIGRATIONS]
    if not versions or versions[0] < 1 or any(b <= a for a, b in pairwise(versions)):
        raise RuntimeError(f"state.MIGRATIONS must be strictly increasing from 1, got {versions}")
    return [m for m in MIGRATIONS if m.version > stored]


def sql_statements(script: str) -> Iterator[str]:
    """Split a script into statements; `executescript` would commit the open transaction."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                yield pending
            pending = ""
    if pending.strip(" \t\r\n;"):
        raise ValueError(f"incomplete SQL statement in migration: {pending.strip()[:60]!r}")


def newer(path: str, stored: int) -> StateError:
    return StateError(
        f"state database {path} was made by a newer swarmdeck "
        f"(schema {stored} > {latest_version()}); upgrade swarmdeck"
    )


def foreign(path: str, app_id: int, tables: list[str]) -> StateError:
    shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
    return StateError(
        f"{path} is another program's SQLite database (application_id {app_id:#x}, "
        f"tables: {shown or 'none'}); swarmdeck left it untouched: {MOVE_ASIDE}"
    )


def user_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name"
    ).fetchall()
    return [row[0] for row in rows]


def meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM swarmdeck_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def stored_version(conn: sqlite3.Connection, path: str) -> int:
    """The schema version in the file: 0 for a database swarmdeck has not set up yet.

    Refuses a file with tables that are not ours, so setup never writes into someone else's.
    """
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = user_tables(conn)
    if app_id not in (0, APPLICATION_ID):
        raise foreign(path, app_id, tables)
    if not tables:
        return 0
    if "swarmdeck_meta" not in tables or app_id != APPLICATION_ID:
        raise foreign(path, app_id, tables)
    if meta(conn, "application") != APPLICATION_NAME:
        raise foreign(path, app_id, tables)
    version = meta(conn, "schema_version")
    if version is None or not version.isdigit():
        raise corrupt(path, f"schema_version is {version!r}")
    return int(version)

def set_up_meta(conn: sqlite3.Connection) -> None:
    """Mark a new file as swarmdeck's, in the same transaction as its first tables."""
    conn.execute("CREATE TABLE swarmdeck_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.executemany(
        "INSERT INTO swarmdeck_meta (key, value) VALUES (?, ?)",
        [("application", APPLICATION_NAME), ("created_at", repr(time.time()))],
    )
    conn.execute(LEDGER_ID_SQL)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
