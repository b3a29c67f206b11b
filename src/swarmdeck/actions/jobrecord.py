"""The ledger writes of a job's life after admission: started, ended, and its peak remembered.

The peak goes to the peaks table keyed by the workload fingerprint in the same transaction that
closes the job's row, so the next run of the same workload books from it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swarmdeck.actions.booking import (
    FOLDER_LEAST_RUNS,
    HISTORY_WINDOW,
    OOM_ADJ_OUTGROWN,
    PastRun,
    Via,
    folder_growth,
    folder_spread,
    timing,
)
from swarmdeck.actions.oom import squeezed_out
from swarmdeck.hook_events import folded_transaction
from swarmdeck.ledger import (
    declared_cap_peaks,
    family_peaks,
    folder_peaks,
    job_row,
    record_ending,
    running_past_standing,
)
from swarmdeck.ledger import mark_running as ledger_running
from swarmdeck.probes.peaks import workload_history
from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.state import now

if TYPE_CHECKING:
    from swarmdeck.state import StateStore

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
"""What Claude Code exports into its Bash tool's environment: the session running the command."""
HOOK_LOOKBACK = 3600.0
"""How far back the PreToolUse hook's record of the command that started a job is looked for."""
HOOK_SCAN = 200
"""The session's newest hook rows looked through for that record: the call comes just before
its job starts, and the look, inside the write lock, costs the same however long the session's
history (bench/bench_hook_spool.py)."""


@dataclass(frozen=True)
class Ending:
    """How a job ended, as the ledger keeps it."""

    exit_code: int
    outcome: str
    peak: int | None
    """Working-set peak; None when the command never ran."""
    kernel_peak: int | None
    hit_ceiling: bool
    duration: float | None
    peak_at: float | None = None
    """Seconds from its start to when its working set reached its peak (jobwatch.Watched)."""


FAMILY_LOOKBACK = 200
"""Recent runs of the same program in the same folder looked through for a family's runs."""
FOLDER_WINDOW = 20
"""Recent capped runs in a folder whose share of their caps sets a prior (booking.folder_share):
more than a workload's window, as they are different commands."""


def family_runs(store: StateStore, argv: list[str], cwd: str) -> list[PastRun]:
    """The recent runs of the command's family (actions/fingerprint.family_of: the same program
    and subcommand with other arguments) in the same folder, newest first, as many as the
    prediction looks at: the prior of a command with no history of its own."""
    from swarmdeck.actions.fingerprint import family_of

    family = family_of(argv)
    if not family:
        return []
    with store.read() as conn:
        rows = family_peaks(conn, str(cwd), argv[0], FAMILY_LOOKBACK)
    runs = [
        past_run(row) for row in rows if family_of(json.loads(row["argv"] or "[]")) == family
    ]
    return runs[:HISTORY_WINDOW]


def past_run(row: sqlite3.Row) -> PastRun:
    """A recorded run (ledger.RUN_COLUMNS) as the booking rules read it: with when it reached
    its peak, how long it ran, and whether a full slice squeezed it out past its booking."""
    return PastRun(row["peak"], row["cap"] or 0, bool(row["hit_ceiling"]),
                   peak_at=row["peak_at"], duration=row["duration"],
                   squeezed=squeezed_out(row["outcome"]))


def timing_runs(store: StateStore, cwd: str, family: list[PastRun]) -> list[PastRun]:
    """The runs that say when a job like this one reaches its peak (booking.settled_booking):
    its `family`'s recent runs (family_runs) where enough of them can say it
    (FOLDER_LEAST_RUNS, booking.timing), else its folder's, theirs among them."""
    if len(timing(family)) >= FOLDER_LEAST_RUNS:
        return family
    with store.read() as conn:
        return [past_run(row) for row in folder_peaks(conn, str(cwd), FOLDER_WINDOW)]


def folder_runs(store: StateStore, cwd: str) -> list[PastRun]:
    """The recent runs in the folder of jobs that declared a cap, newest first: how far what
    agents declare there is from what their jobs take."""
    with store.read() as conn:
        rows = declared_cap_peaks(conn, str(cwd), FOLDER_WINDOW)
    return [past_run(row) for row in rows]


SPREAD_LOOKBACK = 200
"""Recent runs in a folder looked through for its workloads' spread (booking.folder_spread)."""


@dataclass(frozen=True)
class FolderShows:
    """What the other workloads of a folder show a workload with a single run, in percent: the
    margin their spread gives (booking.folder_spread) and the growth they all took on their
    latest run (booking.folder_growth); None where they show none."""

    spread: int | None
    growth: int | None


NOTHING_SHOWN = FolderShows(None, None)


def folder_shows(store: StateStore, cwd: str, fingerprint: str) -> FolderShows:
    """What the folder's other workloads show, from one read: their recent runs, and how many
    of them run past the bookings of their predictions now."""
    with store.read() as conn:
        rows = folder_peaks(conn, str(cwd), SPREAD_LOOKBACK)
        outgrowing = running_past_standing(
            conn, str(cwd), fingerprint, Via.HISTORY.value, OOM_ADJ_OUTGROWN
        )
    workloads: dict[str, list[PastRun]] = {}
    for row in rows:
        if row["fingerprint"] != fingerprint:
            workloads.setdefault(row["fingerprint"], []).append(past_run(row))
    runs = list(workloads.values())
    return FolderShows(folder_spread(runs), folder_growth(runs, outgrowing))


def past_runs(store: StateStore, fingerprint: str) -> list[PastRun]:
    """The workload's recorded runs, newest first, as many as the prediction looks at."""
    history = workload_history(store, fingerprint, HISTORY_WINDOW)
    return [PastRun(run.peak, run.cap or 0, run.hit_ceiling, squeezed=squeezed_out(run.outcome))
            for run in history.runs]


def mark_running(
    store: StateStore,
    job_id: int,
    job: ProcessIdentity,
    output_path: str | None,
    serial_marker: str | None = None,
) -> float:
    """The job's process exists: record its identity, when it started, and the file in which
    it may say it is serial on purpose."""
    started_at = now()
    session = os.environ.get(SESSION_ENV) or None
    # Folded: the Bash call that started this job was likely light, and waits in the spool.
    with folded_transaction(store) as conn:
        agent = started_by_agent(conn, job_id, session, started_at) if session else None
        ledger_running(
            conn, job_id, job.pid, job.start_ticks, started_at, output_path,
            str(serial_marker) if serial_marker else None, session, agent,
        )
    return started_at


def started_by_agent(
    conn: sqlite3.Connection, job_id: int, session: str, at: float
) -> str | None:
    """The subagent of `session` whose Bash call holds this job's command, as the PreToolUse
    hook recorded it (the newest such call among the session's HOOK_SCAN newest rows); None for
    the main thread or when none was seen."""
    import shlex  # only a job started from an agent's session gets here

    row = job_row(conn, job_id)
    command = shlex.join(json.loads(row["argv"] or "[]")) if row is not None else ""
    if not command:
        return None
    found = conn.execute(
        "SELECT agent_id FROM (SELECT id, event, agent_id, tool_name, payload, received_at"
        " FROM hook_events WHERE session_id = ? AND received_at >= ?"
        " ORDER BY received_at DESC LIMIT ?)"
        " WHERE event = 'PreToolUse' AND tool_name = 'Bash'"
        " AND instr(json_extract(payload, '$.tool_input.command'), ?) > 0"
        " ORDER BY received_at DESC, id DESC LIMIT 1",
        (session, at - HOOK_LOOKBACK, HOOK_SCAN, command),
    ).fetchone()
    return found["agent_id"] if found is not None else None


def record_end(
    store: StateStore, job_id: int, fingerprint: str, cap: int, ending: Ending
) -> None:
    """Close the job's row and, when it ran, remember its peak for the next booking."""
    with store.transaction() as conn:
        record_ending(
            conn, job_id, now(), ending.exit_code, ending.outcome, ending.peak,
            ending.kernel_peak, ending.hit_ceiling,
        )
        if ending.peak is not None:
            conn.execute(
                "INSERT INTO peaks (fingerprint, job_id, peak, hit_ceiling, cap, duration,"
                " outcome, peak_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fingerprint, job_id, ending.peak, int(ending.hit_ceiling), cap,
                    ending.duration, ending.outcome, ending.peak_at,
                ),
            )
