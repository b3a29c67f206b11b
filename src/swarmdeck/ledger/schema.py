"""The jobs table: its columns, its indexes, the states a row goes through.

The state store's migrations (state/schema.py) apply these steps in their order; nothing else
spells the table's shape. A row is one job on one host (this one, a peer, a Slurm node).
"""

from __future__ import annotations

QUEUED = "queued"
ADMITTED = "admitted"
RUNNING = "running"
DONE = "done"
LOST = "lost"
REFUSED = "refused"
MOVED = "moved"
"""Withdrawn while queued, because it was moved to another host (actions/migration.py)."""
HOLDS_BOOKING = (ADMITTED, RUNNING)
"""Rows whose booking counts in the book."""
ACTIVE = (QUEUED, ADMITTED, RUNNING)
"""Rows with a runner that should still be alive."""

NOW_SQL = "((julianday('now') - 2440587.5) * 86400.0)"
"""The current time as epoch seconds (REAL), the unit of every time column of the store."""

JOBS_V1 = f"""
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT,
    host TEXT,
    fingerprint TEXT,
    argv TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(argv)),
    cwd TEXT,
    state TEXT NOT NULL,
    pid INTEGER,
    start_ticks INTEGER,
    runner_pid INTEGER,
    runner_start_ticks INTEGER,
    booked INTEGER,
    cap INTEGER,
    admitted_via TEXT,
    oom_score_adj INTEGER,
    threads INTEGER,
    cgroup TEXT,
    created_at REAL NOT NULL DEFAULT {NOW_SQL},
    started_at REAL,
    ended_at REAL,
    exit_code INTEGER,
    outcome TEXT,
    peak INTEGER,
    kernel_peak INTEGER,
    hit_ceiling INTEGER DEFAULT 0 CHECK (hit_ceiling IN (0, 1)),
    output_path TEXT,
    serial_marker_path TEXT,
    detached INTEGER DEFAULT 0 CHECK (detached IN (0, 1)),
    timeout REAL
);
CREATE INDEX jobs_by_state ON jobs (state);
CREATE INDEX jobs_by_fingerprint ON jobs (fingerprint);
CREATE INDEX jobs_by_created_at ON jobs (created_at);
"""
"""The table as schema version 1 made it."""

JOBS_V2 = "ALTER TABLE jobs ADD COLUMN admitted_at REAL;"
"""When a job's booking was admitted (a queued row exists before it)."""

JOBS_V3 = """
ALTER TABLE jobs ADD COLUMN session_id TEXT;
ALTER TABLE jobs ADD COLUMN agent_id TEXT;
CREATE INDEX jobs_by_session ON jobs (session_id);
"""
"""The Claude Code session and subagent that started a job."""

JOBS_V4 = "ALTER TABLE jobs ADD COLUMN run_dir TEXT;"
"""The run directory of a job run on a peer."""

JOBS_V5 = (
    "ALTER TABLE jobs ADD COLUMN slurm_job_id INTEGER;"
    " CREATE INDEX jobs_by_slurm_job_id ON jobs (slurm_job_id);"
)
"""The Slurm job id of a job submitted to the cluster (NULL for a local run)."""

JOBS_V10 = "ALTER TABLE jobs ADD COLUMN declared_cap TEXT;"
"""The --cap as the person gave it ('8G', '70%'; '' when none was given)."""

JOBS_V13 = "ALTER TABLE jobs ADD COLUMN scope TEXT;"
"""The run-scope declaration (SWARMDECK_SCOPE) the job was started with; NULL when none was."""

JOBS_V15 = """
CREATE INDEX jobs_by_host_state ON jobs (host, state);
CREATE INDEX jobs_by_cwd ON jobs (cwd);
"""
"""Each refresh counts the host's ended jobs in the first, and a job's priors walk its folder's
newest jobs down the second: neither reads every row the ledger ever kept."""
