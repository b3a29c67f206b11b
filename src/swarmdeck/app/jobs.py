"""The Jobs panel: the memory ledger's jobs, one row each, keyed by job id."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.app.keyed_table import Cell, KeyedTable
from swarmdeck.probes.ledger import LedgerJob
from swarmdeck.sizes import format_size
from swarmdeck.snapshot import Snapshot

COLUMNS = (
    ("label", "label"),
    ("host", "host"),
    ("state", "state"),
    ("booked", "booked"),
    ("current", "current"),
    ("peak", "peak"),
    ("cap", "cap"),
    ("via", "admitted via"),
    ("adj", "oom adj"),
    ("runtime", "runtime"),
    ("exit", "exit"),
)

STATE_STYLES = {
    "running": "bold green",
    "admitted": "green",
    "queued": "yellow",
    "lost": "bold red",
    "refused": "red",
    "done": "",
}
EXIT_STYLES = {250: "bold red", 254: "bold magenta", 253: "yellow", 252: "red"}


def size_cell(value: int | None) -> str:
    return "–" if value is None else format_size(value)


def runtime_text(seconds: float | None) -> str:
    """A runtime as 42s, 7m05s, 3h12m."""
    if seconds is None:
        return "–"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def state_cell(job: LedgerJob) -> Text:
    if job.stale:
        return Text(f"{job.state}, runner gone", style="bold red")
    return Text(job.state, style=STATE_STYLES.get(job.state, ""))


def exit_cell(job: LedgerJob) -> Text:
    if job.exit_code is None:
        return Text("–")
    label = str(job.exit_code)
    if job.outcome and job.outcome not in ("ok", f"exit {job.exit_code}"):
        label += f" {job.outcome}"
    return Text(label, style=EXIT_STYLES.get(job.exit_code, "red" if job.exit_code else "green"))


def peak_cell(job: LedgerJob) -> Text:
    text = Text(size_cell(job.peak))
    if job.hit_ceiling:
        text.append(" ceiling", style="bold red")
    return text


def job_cells(job: LedgerJob, now: float) -> tuple[Cell, ...]:
    """One ledger row as the panel shows it, in COLUMNS order."""
    return (
        job.label,
        job.host,
        state_cell(job),
        size_cell(job.booked),
        size_cell(job.current),
        peak_cell(job),
        size_cell(job.cap),
        job.admitted_via or "–",
        "–" if job.oom_score_adj is None else str(job.oom_score_adj),
        runtime_text(job.runtime(now)),
        exit_cell(job),
    )


class JobsPanel(Vertical):
    """Caged jobs as the ledger knows them."""

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room."""

    def __init__(self) -> None:
        super().__init__(id="jobs", classes="panel")
        self.border_title = "Jobs"

    def compose(self) -> ComposeResult:
        yield Label("no caged jobs — start one with: swarmdeck run -- CMD", classes="empty")
        yield KeyedTable(COLUMNS, id="jobs-table")

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        jobs = [job for job in snapshot.jobs if isinstance(job, LedgerJob)]
        self.query_one(".empty", Label).display = not jobs
        table = self.query_one(KeyedTable)
        table.display = bool(jobs)
        now = time.time()
        table.sync({str(job.id): job_cells(job, now) for job in jobs})
        running = sum(1 for job in jobs if job.state == "running")
        queued = sum(1 for job in jobs if job.state == "queued")
        self.border_subtitle = f"{running} running, {queued} queued" if jobs else ""
