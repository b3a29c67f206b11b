"""Every read of the jobs table, each a named question.

Each function runs inside the caller's `store.read()` or `store.transaction()` block (it takes
the connection), so the caller keeps its transaction exactly as strong as it needs: admission
reads and writes in one BEGIN IMMEDIATE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swarmdeck.ledger.schema import ACTIVE, DONE, QUEUED, RUNNING

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Collection

FINDING_JOB_ENDED = (
    "(job_id IS NOT NULL AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = findings.job_id"
    f" AND jobs.state NOT IN ({', '.join(repr(state) for state in ACTIVE)})))"
)
"""SQL, true for a finding about a ledger job that has ended: the watchdog closes it at once."""


def _marks(values: Collection[object]) -> str:
    return ",".join("?" * len(values))


def job_row(conn: sqlite3.Connection, job_id: int) -> sqlite3.Row | None:
    """The job's row; None when the ledger has none of that id."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM jobs WHERE id = ?", (job_id,)
    ).fetchone()
    return row


def rows_in_states(
    conn: sqlite3.Connection, host: str, states: Collection[str]
) -> list[sqlite3.Row]:
    """The host's rows in one of `states`, oldest first."""
    return conn.execute(
        f"SELECT * FROM jobs WHERE host = ? AND state IN ({_marks(states)}) ORDER BY id",
        (host, *states),
    ).fetchall()


def finished_rows(conn: sqlite3.Connection, host: str, limit: int | None) -> list[sqlite3.Row]:
    """The host's rows no longer active, newest first, at most `limit` (None: all).

    `+host` keeps SQLite off the host-and-state index here: through it, every ended row of
    the host would be read and sorted to give the newest few; walking the ids down from the
    newest stops at the `limit`-th."""
    return conn.execute(
        f"SELECT * FROM jobs WHERE +host = ? AND state NOT IN ({_marks(ACTIVE)})"
        " ORDER BY id DESC LIMIT ?",
        (host, *ACTIVE, -1 if limit is None else limit),
    ).fetchall()


def finished_count(conn: sqlite3.Connection, host: str) -> int:
    """How many of the host's rows are no longer active."""
    row = conn.execute(
        f"SELECT COUNT(*) FROM jobs WHERE host = ? AND state NOT IN ({_marks(ACTIVE)})",
        (host, *ACTIVE),
    ).fetchone()
    return int(row[0])


def rows_on_host(conn: sqlite3.Connection, host: str) -> list[sqlite3.Row]:
    """Every row of the host, whatever its state."""
    return conn.execute("SELECT * FROM jobs WHERE host = ?", (host,)).fetchall()


def queued_rows(conn: sqlite3.Connection, host: str) -> list[sqlite3.Row]:
    """The host's queued rows: id, created_at, booked, fingerprint (admission's queue)."""
    return conn.execute(
        "SELECT id, created_at, booked, fingerprint FROM jobs WHERE host = ? AND state = ?",
        (host, QUEUED),
    ).fetchall()


def live_rows_labelled(conn: sqlite3.Connection, label: str, host: str) -> list[sqlite3.Row]:
    """The host's active rows with this label, oldest first: id and their runner."""
    return conn.execute(
        "SELECT id, runner_pid, runner_start_ticks FROM jobs WHERE label = ? AND host = ?"
        f" AND state IN ({_marks(ACTIVE)}) ORDER BY id",
        (label, host, *ACTIVE),
    ).fetchall()


def newest_job_of_runner(conn: sqlite3.Connection, pid: int, start_ticks: int) -> int | None:
    """The id of the newest row whose runner is this process; None when it made none."""
    row = conn.execute(
        "SELECT id FROM jobs WHERE runner_pid = ? AND runner_start_ticks = ?"
        " ORDER BY id DESC LIMIT 1",
        (pid, start_ticks),
    ).fetchone()
    return None if row is None else int(row[0])


def last_input_run(
    conn: sqlite3.Connection, fingerprint: str
) -> tuple[int, int | None, float | None] | None:
    """(job id, exit code, ended at) of the newest ended run recorded with these inputs."""
    row = conn.execute(
        "SELECT jobs.id, jobs.exit_code, jobs.ended_at FROM input_runs"
        " JOIN jobs ON jobs.id = input_runs.job_id"
        " WHERE input_runs.fingerprint = ? AND jobs.state = ?"
        " ORDER BY input_runs.job_id DESC LIMIT 1",
        (fingerprint, DONE),
    ).fetchone()
    return None if row is None else (row[0], row[1], row[2])


_FOLDER_NEWEST_FIRST = "FROM jobs j JOIN peaks p ON p.job_id = j.id WHERE j.cwd = ?"
"""The recorded runs of a folder, for a query that orders them by `j.id DESC`: SQLite walks the
folder's jobs down the jobs_by_cwd index, newest first, and stops at the LIMIT; ordered by
when each peak was recorded, it would read and sort every run of the folder, or of the whole
ledger, at each look (a running job not yet settled looks once a second)."""


RUN_COLUMNS = "p.peak, p.cap, p.hit_ceiling, p.outcome, p.peak_at, p.duration"
"""What the booking rules read of a recorded run (actions/jobrecord.past_run)."""


def family_peaks(
    conn: sqlite3.Connection, cwd: str, program: str, limit: int
) -> list[sqlite3.Row]:
    """Recorded peaks (RUN_COLUMNS, argv) of runs of `program` in `cwd`, the newest started
    first."""
    return conn.execute(
        f"SELECT {RUN_COLUMNS}, j.argv"
        f" {_FOLDER_NEWEST_FIRST}"
        " AND json_extract(j.argv, '$[0]') = ? ORDER BY j.id DESC LIMIT ?",
        (cwd, program, limit),
    ).fetchall()


def declared_cap_peaks(conn: sqlite3.Connection, cwd: str, limit: int) -> list[sqlite3.Row]:
    """Recorded peaks (RUN_COLUMNS) of runs in `cwd` that declared a cap, the newest started
    first."""
    return conn.execute(
        f"SELECT {RUN_COLUMNS} {_FOLDER_NEWEST_FIRST}"
        " AND j.declared_cap != '' ORDER BY j.id DESC LIMIT ?",
        (cwd, limit),
    ).fetchall()


def running_past_standing(
    conn: sqlite3.Connection, cwd: str, fingerprint: str, via: str, adj: int
) -> int:
    """How many workloads other than `fingerprint` have a job running in `cwd`, admitted on
    `via`, that stands at `adj` or above now: the runner raises a job whose working set passed
    its booking."""
    return int(conn.execute(
        "SELECT COUNT(DISTINCT fingerprint) FROM jobs WHERE cwd = ? AND state = ?"
        " AND fingerprint != ? AND admitted_via = ? AND oom_score_adj >= ?",
        (cwd, RUNNING, fingerprint, via, adj),
    ).fetchone()[0])


def folder_peaks(conn: sqlite3.Connection, cwd: str, limit: int) -> list[sqlite3.Row]:
    """Recorded peaks (fingerprint, RUN_COLUMNS) of runs in `cwd`, the newest started
    first."""
    return conn.execute(
        f"SELECT p.fingerprint, {RUN_COLUMNS} {_FOLDER_NEWEST_FIRST}"
        " ORDER BY j.id DESC LIMIT ?",
        (cwd, limit),
    ).fetchall()


def open_cluster_rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Active rows of jobs submitted to a Slurm cluster."""
    return conn.execute(
        "SELECT * FROM jobs WHERE slurm_job_id IS NOT NULL"
        f" AND state IN ({_marks(ACTIVE)})",
        ACTIVE,
    ).fetchall()


def open_cluster_row(conn: sqlite3.Connection, job_id: int) -> sqlite3.Row | None:
    """The job's row while it is an active job on a Slurm cluster; else None."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM jobs WHERE id = ? AND slurm_job_id IS NOT NULL"
        f" AND state IN ({_marks(ACTIVE)})",
        (job_id, *ACTIVE),
    ).fetchone()
    return row


def running_cluster_hosts(conn: sqlite3.Connection) -> list[str]:
    """The Slurm nodes on which a job of ours runs."""
    return [row[0] for row in conn.execute(
        "SELECT DISTINCT host FROM jobs WHERE slurm_job_id IS NOT NULL AND state = ?",
        (RUNNING,),
    )]


def threads_declared(conn: sqlite3.Connection, host: str) -> int:
    """Threads that the host's running jobs said they would use."""
    row = conn.execute(
        "SELECT COALESCE(SUM(threads), 0) FROM jobs WHERE state = ? AND host = ?",
        (RUNNING, host),
    ).fetchone()
    return int(row[0])


def running_processes(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Running rows that name their process: id, pid, start_ticks, runner and cgroup."""
    return conn.execute(
        "SELECT id, pid, start_ticks, runner_pid, runner_start_ticks, cgroup FROM jobs"
        " WHERE state = ? AND pid IS NOT NULL AND start_ticks IS NOT NULL",
        (RUNNING,),
    ).fetchall()

