"""The Jobs panel: the memory ledger's jobs, one row each, keyed by job id."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.app.keyed_table import KeyedTable
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
        self.query_one(".empty", Label).display = not snapshot.jobs
        self.query_one(KeyedTable).display = bool(snapshot.jobs)
