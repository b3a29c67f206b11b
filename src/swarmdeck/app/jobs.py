"""The Jobs panel: the memory ledger's jobs, one row each, keyed by job id, newest first."""

from __future__ import annotations

from swarmdeck.app.panel import Rows, TablePanel
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import in_order
from swarmdeck.views.jobs import PANEL_COLUMNS, job_cells, panel_order


class JobsPanel(TablePanel):
    """Caged jobs as the ledger knows them."""

    TITLE = "Jobs"
    COLUMNS = PANEL_COLUMNS
    EMPTY = "no caged jobs — start one: swarmdeck run -- CMD"

    def __init__(self) -> None:
        super().__init__(id="jobs")

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        return {
            str(job.id): in_order(job_cells(job, now), PANEL_COLUMNS)
            for job in panel_order(snapshot.jobs)
        }

    def subtitle(self, snapshot: Snapshot, rows: Rows) -> str:
        if not rows:
            return ""
        states = [job.state for job in snapshot.jobs]
        return f"{states.count('running')} running, {states.count('queued')} queued"
