"""The ledger writes of a job's life after admission: started, ended, and its peak remembered.

The peak goes to the peaks table keyed by the workload fingerprint in the same transaction that
closes the job's row, so the next run of the same workload books from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from swarmdeck.actions.booking import HISTORY_WINDOW, PastRun
from swarmdeck.probes.ledger import DONE, RUNNING
from swarmdeck.probes.peaks import workload_history
from swarmdeck.probes.procs import ProcessIdentity
from swarmdeck.state import now

if TYPE_CHECKING:
    from swarmdeck.state import StateStore


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


def past_runs(store: StateStore, fingerprint: str) -> list[PastRun]:
    """The workload's recorded runs, newest first, as many as the prediction looks at."""
    history = workload_history(store, fingerprint, HISTORY_WINDOW)
    return [PastRun(run.peak, run.cap or 0, run.hit_ceiling) for run in history.runs]


def mark_running(
    store: StateStore,
    job_id: int,
    job: ProcessIdentity,
    output_path: str | None,
    serial_marker: Path | None = None,
) -> float:
    """The job's process exists: record its identity, when it started, and the file in which
    it may say it is serial on purpose."""
    started_at = now()
    with store.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET state = ?, pid = ?, start_ticks = ?, started_at = ?,"
            " output_path = COALESCE(?, output_path), serial_marker_path = ? WHERE id = ?",
            (
                RUNNING, job.pid, job.start_ticks, started_at, output_path,
                str(serial_marker) if serial_marker else None, job_id,
            ),
        )
    return started_at


def record_end(
    store: StateStore, job_id: int, fingerprint: str, cap: int, ending: Ending
) -> None:
    """Close the job's row and, when it ran, remember its peak for the next booking."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE jobs SET state = ?, ended_at = ?, exit_code = ?, outcome = ?, peak = ?,"
            " kernel_peak = ?, hit_ceiling = ? WHERE id = ?",
            (
                DONE, now(), ending.exit_code, ending.outcome, ending.peak, ending.kernel_peak,
                int(ending.hit_ceiling), job_id,
            ),
        )
        if ending.peak is not None:
            conn.execute(
                "INSERT INTO peaks (fingerprint, job_id, peak, hit_ceiling, cap, duration,"
                " outcome) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    fingerprint, job_id, ending.peak, int(ending.hit_ceiling), cap,
                    ending.duration, ending.outcome,
                ),
            )
