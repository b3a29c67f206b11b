"""The Jobs panel: the memory ledger's jobs, one row each, keyed by job id, newest first.

A running job's runtime is shown to the minute (`running_runtime_text`): to the second, every
running row would change, and be drawn again, at every refresh. A job run on a peer (its row in
this host's ledger under the peer's name) says where in its state, the column never cut, so it
never reads as one of this host's; while it runs, its memory is read on the peer, not here."""

from __future__ import annotations

from collections import Counter

from rich.text import Text

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
    KEPT = "runtime"
    FIXED = 1
    """A long label is cut (to no narrower than YIELDING_FLOOR) before the state (never cut:
    how a job stands is what its row is for) or the memory figures after it give way, and
    before any later column gives way where that cut makes room for it whole. The label stays
    while Right and Left scroll the other columns: it names the row."""
    ROOM = {"state": len("slice full 254"), "booked": 5, "peak": 5, "cap": 5,
            "runtime": len("12m34s")}
    """The columns are as wide from the start as a job's usual states and figures make them
    (and never narrow while the room runs): a job that ends, or grows, moves no column."""
    EMPTY = "no caged jobs — start one: swarmdeck run -- CMD"

    def __init__(self) -> None:
        super().__init__(id="jobs")

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        here = snapshot.hosts[0].name if snapshot.hosts else None
        labels = Counter(job.label for job in snapshot.jobs)
        rows = {
            str(job.id): in_order(panel_cells(job, now, here, labels[job.label] > 1),
                                  PANEL_COLUMNS)
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


ON_PEER = "on peer"
"""A running peer job's memory figure that this host does not read."""


def panel_cells(
    job: LedgerJob, now: float, here: str | None, repeated: bool = False
) -> dict[str, Cell]:
    """A job's cells as the panel shows them: a running job's runtime to the minute; a job on
    another host than `here` (this host) says which in its state; a label other rows have too
    (three runs of `grows`, a job and its migrated copy) starts with the job's id, which a cut
    label keeps."""
    cells = job_cells(job, now, brief=True)
    if repeated:
        cells["label"] = Text.assemble((f"#{job.id} ", "dim"), job.label)
    if job.state == RUNNING:
        cells["runtime"] = running_runtime_text(job.runtime(now))
    if here is None or job.host == here:
        return cells
    state = cells["state"]
    cells["state"] = (state.copy() if isinstance(state, Text) else Text(state)).append(
        f" on {job.host}", style="not bold"
    )
    if job.state == RUNNING:
        for key in ("current", "peak"):
            if getattr(job, key) is None:
                cells[key] = Text(ON_PEER, style="dim")
    return cells
