"""Every change to the jobs table, each a named step of a job's life.

Each function runs inside the caller's `store.transaction()` (it takes the connection), so
the caller decides what else commits with it: admission's check and insert share one
BEGIN IMMEDIATE, a job's end and its peak share one commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swarmdeck.ledger.schema import ADMITTED, DONE, QUEUED, RUNNING

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Collection, Mapping


def add_job(conn: sqlite3.Connection, values: Mapping[str, object]) -> int:
    """Insert one row (column: value); its new id."""
    columns = ", ".join(values)
    marks = ", ".join("?" * len(values))
    cursor = conn.execute(
        f"INSERT INTO jobs ({columns}) VALUES ({marks})", tuple(values.values())
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def close_job(
    conn: sqlite3.Connection,
    job_id: int,
    state: str,
    outcome: str,
    exit_code: int,
    at: float,
    only_from: Collection[str] | None = None,
) -> bool:
    """End the row as `state` with `outcome` and `exit_code` at `at`; with `only_from`, only
    while its state is one of those. Whether a row was changed."""
    sql = "UPDATE jobs SET state = ?, outcome = ?, exit_code = ?, ended_at = ? WHERE id = ?"
    params: tuple[object, ...] = (state, outcome, int(exit_code), at, job_id)
    if only_from is not None:
        sql += f" AND state IN ({','.join('?' * len(only_from))})"
        params += tuple(only_from)
    return bool(conn.execute(sql, params).rowcount)


def rebook_queued(
    conn: sqlite3.Connection,
    job_id: int,
    booked: int,
    cap: int | None,
    via: str,
    oom_score_adj: int | None,
) -> bool:
    """A queued row takes the booking its runner made again while it waits, so every other
    runner orders and sums the queue on the booking this one decides on, and its admission
    (admit_queued_as_booked) keeps it. A row that already has it is not written. Whether it
    changed."""
    return bool(conn.execute(
        "UPDATE jobs SET booked = ?, cap = ?, admitted_via = ?, oom_score_adj = ?"
        " WHERE id = ? AND state = ? AND (booked IS NOT ? OR cap IS NOT ?"
        " OR admitted_via IS NOT ? OR oom_score_adj IS NOT ?)",
        (booked, cap, via, oom_score_adj, job_id, QUEUED, booked, cap, via, oom_score_adj),
    ).rowcount)


def admit_queued_as_booked(conn: sqlite3.Connection, job_id: int, at: float) -> None:
    """A queued row is admitted at `at` on the booking it was queued with."""
    conn.execute(
        "UPDATE jobs SET state = ?, admitted_at = ? WHERE id = ? AND state = ?",
        (ADMITTED, at, job_id, QUEUED),
    )


def lower_booking(
    conn: sqlite3.Connection, job_id: int, booked: int, via: str, oom_score_adj: int
) -> bool:
    """An admitted or running row books less, on what `via` names, standing at
    `oom_score_adj` (booking.lighter_booking); only while it books more. Whether it changed."""
    return bool(conn.execute(
        "UPDATE jobs SET booked = ?, admitted_via = ?, oom_score_adj = ?"
        " WHERE id = ? AND state IN (?, ?) AND booked > ?",
        (booked, via, oom_score_adj, job_id, ADMITTED, RUNNING, booked),
    ).rowcount)


def set_oom_score_adj(conn: sqlite3.Connection, job_id: int, adj: int) -> None:
    """The OOM standing the row's job was given while it ran (one that outgrew its booking)."""
    conn.execute("UPDATE jobs SET oom_score_adj = ? WHERE id = ?", (adj, job_id))


def set_cgroup(conn: sqlite3.Connection, job_id: int, cgroup: str) -> None:
    """The cage the row's runner makes (named at admission, before it exists)."""
    conn.execute("UPDATE jobs SET cgroup = ? WHERE id = ?", (cgroup, job_id))


def mark_running(
    conn: sqlite3.Connection,
    job_id: int,
    pid: int,
    start_ticks: int,
    started_at: float,
    output_path: str | None,
    serial_marker: str | None,
    session_id: str | None,
    agent_id: str | None,
) -> None:
    """The job's process exists: its identity, when it started, where its output goes, the
    file in which it may say it is serial, the session and subagent that started it."""
    conn.execute(
        "UPDATE jobs SET state = ?, pid = ?, start_ticks = ?, started_at = ?,"
        " output_path = COALESCE(?, output_path), serial_marker_path = ?,"
        " session_id = ?, agent_id = ? WHERE id = ?",
        (
            RUNNING, pid, start_ticks, started_at, output_path, serial_marker, session_id,
            agent_id, job_id,
        ),
    )


def record_ending(
    conn: sqlite3.Connection,
    job_id: int,
    at: float,
    exit_code: int,
    outcome: str,
    peak: int | None,
    kernel_peak: int | None,
    hit_ceiling: bool,
) -> None:
    """Close a job that ran here ('done'), with what its cage measured."""
    conn.execute(
        "UPDATE jobs SET state = ?, ended_at = ?, exit_code = ?, outcome = ?, peak = ?,"
        " kernel_peak = ?, hit_ceiling = ? WHERE id = ?",
        (DONE, at, exit_code, outcome, peak, kernel_peak, int(hit_ceiling), job_id),
    )


def set_peak(conn: sqlite3.Connection, job_id: int, peak: int, hit_ceiling: bool) -> None:
    """The peak a job's runner elsewhere measured (a peer's)."""
    conn.execute(
        "UPDATE jobs SET peak = ?, hit_ceiling = ? WHERE id = ?",
        (peak, int(hit_ceiling), job_id),
    )


def mark_started_remote(
    conn: sqlite3.Connection, job_id: int, pid: int, start_ticks: int, run_dir: str, at: float
) -> None:
    """A peer job's process started, in its run directory there."""
    conn.execute(
        "UPDATE jobs SET state = ?, pid = ?, start_ticks = ?, run_dir = ?, started_at = ?"
        " WHERE id = ?",
        (RUNNING, pid, start_ticks, run_dir, at, job_id),
    )


def set_driver(
    conn: sqlite3.Connection, job_id: int, pid: int, start_ticks: int, output: str | None
) -> None:
    """A new driver (a detached one, or one attached again) takes a peer row over."""
    conn.execute(
        "UPDATE jobs SET runner_pid = ?, runner_start_ticks = ?, detached = 1,"
        " output_path = COALESCE(?, output_path) WHERE id = ?",
        (pid, start_ticks, output, job_id),
    )


def mark_submitted(
    conn: sqlite3.Connection, job_id: int, slurm_job_id: int, output_path: str
) -> None:
    """The cluster took the job under this Slurm job id; its output goes to `output_path`."""
    conn.execute(
        "UPDATE jobs SET slurm_job_id = ?, output_path = ? WHERE id = ?",
        (slurm_job_id, output_path, job_id),
    )


def mark_started_on(conn: sqlite3.Connection, job_id: int, node: str, at: float) -> None:
    """A cluster job runs: its row's host becomes its node."""
    conn.execute(
        "UPDATE jobs SET state = ?, host = ?, started_at = ? WHERE id = ?",
        (RUNNING, node, at, job_id),
    )
