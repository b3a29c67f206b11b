"""The Jobs panel: the memory ledger's jobs, one row each, keyed by job id."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import in_order
from swarmdeck.views.jobs import PANEL_COLUMNS, job_cells


class JobsPanel(Vertical):
    """Caged jobs as the ledger knows them."""

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room."""

    def __init__(self) -> None:
        super().__init__(id="jobs", classes="panel")
        self.border_title = "Jobs"

    def compose(self) -> ComposeResult:
        yield Label("no caged jobs — start one with: swarmdeck run -- CMD", classes="empty")
        yield KeyedTable(PANEL_COLUMNS, id="jobs-table")

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        jobs = snapshot.jobs
        self.query_one(".empty", Label).display = not jobs
        table = self.query_one(KeyedTable)
        table.display = bool(jobs)
        now = time.time()
        table.sync({str(job.id): in_order(job_cells(job, now), PANEL_COLUMNS) for job in jobs})
        running = sum(1 for job in jobs if job.state == "running")
        queued = sum(1 for job in jobs if job.state == "queued")
        self.border_subtitle = f"{running} running, {queued} queued" if jobs else ""
