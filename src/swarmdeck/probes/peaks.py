"""What the peaks table remembers of a workload: its recorded runs, newest first.

One reader for the table, so the runner's booking and the heavy-command hook's "last run" line
read the same rows the same way. actions/jobrecord.py writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmdeck.state import StateStore


@dataclass(frozen=True)
class PeakRecord:
    """One recorded run of a workload."""

    peak: int
    """Working-set peak (bytes)."""
    cap: int | None
    hit_ceiling: bool
    duration: float | None
    outcome: str | None


@dataclass(frozen=True)
class WorkloadHistory:
    """The newest runs of a workload and how many are recorded in all."""

    runs: list[PeakRecord]
    recorded: int

    @property
    def last(self) -> PeakRecord | None:
        return self.runs[0] if self.runs else None


def workload_history(store: StateStore, fingerprint: str, limit: int) -> WorkloadHistory:
    """Up to `limit` of the workload's runs, newest first, and the count of all, in one read."""
    with store.read() as conn:
        rows = conn.execute(
            "SELECT peak, cap, hit_ceiling, duration, outcome FROM peaks WHERE fingerprint = ?"
            " ORDER BY recorded_at DESC, rowid DESC LIMIT ?",
            (fingerprint, limit),
        ).fetchall()
        (recorded,) = conn.execute(
            "SELECT COUNT(*) FROM peaks WHERE fingerprint = ?", (fingerprint,)
        ).fetchone()
    runs = [
        PeakRecord(
            peak=row["peak"],
            cap=row["cap"],
            hit_ceiling=bool(row["hit_ceiling"]),
            duration=row["duration"],
            outcome=row["outcome"],
        )
        for row in rows
    ]
    return WorkloadHistory(runs, int(recorded))
