"""The Jobs panel: the memory ledger's jobs, one row each, keyed by job id, newest first.

A running job's runtime is shown to the minute (`running_runtime_text`): to the second, every
running row would change, and be drawn again, at every refresh. A job run on a peer (its row in
this host's ledger under the peer's name) says where in its state, the column never cut, so it
never reads as one of this host's; while it runs, its memory is read on the peer, not here."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.text import Text
from textual import work
from textual.message import Message

from swarmdeck.actions.migration import refusal
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.app import commands
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.launch import LaunchScreen, Preview, form_values, request_preview
from swarmdeck.app.migrate import MigrateScreen
from swarmdeck.app.more_room import MoreRoom, more_room
from swarmdeck.app.panel import Rows, TablePanel
from swarmdeck.config import Config
from swarmdeck.durations import running_runtime_text
from swarmdeck.ledger.schema import RUNNING
from swarmdeck.probes.memory_book import LedgerJob, MemoryBook
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.cells import SIZE_WIDTH, Cell, in_order
from swarmdeck.views.jobs import (
    BRIEF_STATE_WIDTH,
    CEILING_MARK,
    PANEL_COLUMNS,
    job_cells,
    panel_order,
)
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
    before any later column gives way where that cut makes space for it whole. The label stays
    while Right and Left scroll the other columns: it names the row."""
    LEAST_WIDTHS = {"state": BRIEF_STATE_WIDTH, "booked": SIZE_WIDTH,
                    "peak": len(f"5.5G {CEILING_MARK}"), "cap": SIZE_WIDTH,
                    "runtime": len("12m34s")}
    """The columns are as wide from the start as a job's states in brief and its figures make
    them (and never narrow while the room runs): a job that ends, or grows, moves no column."""
    GAP = 1
    """One blank cell between columns of short figures: at 100×30 the panel draws label,
    state, booked, peak, cap and runtime whole, the label cut to no narrower than 12."""
    EMPTY = "no caged jobs — start one: swarmdeck run -- CMD"

    class LaunchAsked(Message):
        """A rerun the person confirmed: the app starts it detached."""

        def __init__(self, request: RunRequest, what: str) -> None:
            """Args:
                request: The run to start.
                what: How the notifications name it ("rerun of job 12").
            """
            super().__init__()
            self.request = request
            self.what = what

    def __init__(self, config: Config, store: StateStore) -> None:
        """Args:
            config: The effective configuration (the cap factor, the peers).
            store: The state store a rerun's booking is worked out in.
        """
        super().__init__(id="jobs")
        self.config = config
        self.store = store

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


    def selected_job(self) -> LedgerJob | None:
        """The job under the table's cursor; None when the cursor is on no job's row."""
        key = self.query_one(KeyedTable).cursor_key()
        if self.snapshot is None or key is None:
            return None
        return next((job for job in self.snapshot.jobs if str(job.id) == key), None)

    def local_book(self) -> MemoryBook | None:
        """This host's memory book as last read: what a launch or rerun here is booked in."""
        snapshot = self.snapshot
        host = snapshot.hosts[0] if snapshot and snapshot.hosts else None
        return snapshot.book_of(host.name) if snapshot and host else None

    def local_cores(self) -> int | None:
        """This host's cores as last read, for the launch form's threads range."""
        snapshot = self.snapshot
        return snapshot.hosts[0].cores.count if snapshot and snapshot.hosts else None

    def action_rerun(self) -> None:
        """Rerun the selected finished job: as it was, or with more room when the same run
        would end the same way."""
        job = self.selected_job()
        if job is None:
            self.notify("select a finished job in the Jobs panel (2) first", severity="warning")
            return
        why = commands.why_not_rerun(job, self.snapshot.jobs if self.snapshot else ())
        if why:
            self.notify(f"not rerun: {why}", severity="error")
            return
        room = more_room(job, self.config.memory.cap_factor)
        if room is not None:
            self._rerun_with_more_room(job, room)
            return
        self._offer_rerun(job, self.local_book())

    @work(thread=True, exclusive=True, group="rerun-offer", exit_on_error=False)
    def _offer_rerun(self, job: LedgerJob, book: MemoryBook | None) -> None:
        """Work out the rerun's booking as the runner will (it reads the recorded peaks: off
        the UI loop), then ask."""
        request = commands.rerun_request(job, self.config.memory.cap_factor)
        said = request_preview(self.config, self.store, book, request)
        self.app.call_from_thread(self._ask_rerun, job, request, said)

    def _ask_rerun(self, job: LedgerJob, request: RunRequest, said: Preview) -> None:
        """The rerun modal: the command line and how it will be booked, or what stands in its
        way (the runner has the last word, and its refusal comes back as a notification)."""
        booking = [f"✗ {said.problem}"] if said.problem else [
            line for line in said.lines[:2] if line
        ]
        lines = [f"job {job.id}: {job.label}", "", commands.command_line(request), "",
                 *booking, "it runs detached"]

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(self.LaunchAsked(request, f"rerun of job {job.id}"))

        self.app.push_screen(commands.ConfirmScreen("Rerun this job?", lines, "Rerun"), answered)

    def _rerun_with_more_room(self, job: LedgerJob, room: MoreRoom) -> None:
        """A job the same rerun would end the same way (its own cap, or a slice it filled with
        its own growth): the launch form opens filled in with what it declared (command, label,
        threads, --timeout) and a cap with more room, for the person to set."""

        def answered(request: RunRequest | None) -> None:
            if request is not None:
                self.post_message(self.LaunchAsked(request, f"rerun of job {job.id}"))

        self.app.push_screen(
            LaunchScreen(self.config, self.store, self.local_book, Path(job.cwd),
                         form_values(room.request), room.title, cores=self.local_cores(),
                         unbounded=room.request.unbounded),
            answered,
        )

    def action_migrate(self) -> None:
        """The migrate pane for the job under the cursor."""
        job = self.selected_job()
        if job is None:
            self.notify("select a job row in the Jobs panel first", severity="warning")
            return
        refused = refusal(job, self.snapshot.jobs if self.snapshot else ())
        if refused is not None:
            self.notify(refused, severity="warning")
            return
        if not any(host.enabled and host.name != job.host for host in self.config.hosts):
            self.notify("no enabled peer: add a [[hosts]] entry to the config", severity="warning")
            return
        self.app.push_screen(MigrateScreen(self.config, job), self._migrated)

    def _migrated(self, line: str | None) -> None:
        if line:
            self.notify(line, timeout=8)


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
