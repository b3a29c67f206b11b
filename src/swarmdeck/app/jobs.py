"""The Jobs panel: the memory ledger's jobs, one row each, keyed by job id, newest first.

A running job's runtime is shown to the minute (`running_runtime_text`): to the second, every
running row would change, and be drawn again, at every refresh."""

from __future__ import annotations

from swarmdeck.app.panel import Rows, TablePanel
from swarmdeck.durations import running_runtime_text
from swarmdeck.probes.ledger import RUNNING, LedgerJob
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import Cell, in_order
from swarmdeck.views.jobs import PANEL_COLUMNS, job_cells, panel_order
from swarmdeck.views.slurm import cluster_job_cells, cluster_job_key


class JobsPanel(TablePanel):
    """Caged jobs as the ledger knows them."""

    TITLE = "Jobs"
    COLUMNS = PANEL_COLUMNS
    YIELDING = ("label",)
    KEPT = "peak"
    """A long label is cut before the state (never cut: how a job stands is what its row is
    for) or the memory figures after it give way."""
    EMPTY = "no caged jobs — start one: swarmdeck run -- CMD"

    def __init__(self) -> None:
        super().__init__(id="jobs")

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        rows = {
            str(job.id): in_order(panel_cells(job, now), PANEL_COLUMNS)
            for job in panel_order(snapshot.jobs)
        }
        cluster_jobs = snapshot.cluster.jobs if snapshot.cluster is not None else []
        rows.update(
            {
                cluster_job_key(job): in_order(cluster_job_cells(job, now), PANEL_COLUMNS)
                for job in cluster_jobs
            }
        )
        return rows

    def subtitle(self, snapshot: Snapshot, rows: Rows) -> str:
        if not rows:
            return ""
        states = [job.state for job in snapshot.jobs]
        return f"{states.count('running')} running, {states.count('queued')} queued"


def panel_cells(job: LedgerJob, now: float) -> dict[str, Cell]:
    """A job's cells as the panel shows them: a running job's runtime to the minute."""
    cells = job_cells(job, now)
    if job.state == RUNNING:
        cells["runtime"] = running_runtime_text(job.runtime(now))
    return cells
