"""The Locks panel: who holds which workspace lock (alive or stale, since when) and who owns
which work directory."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import in_order
from swarmdeck.views.locks import COLUMNS, lock_table_rows


class LocksPanel(Vertical):
    """Workspace locks and work-directory owners, one row each, keyed by file or path."""

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room."""

    def __init__(self) -> None:
        super().__init__(id="locks", classes="panel")
        self.border_title = "Locks"

    def compose(self) -> ComposeResult:
        yield Label(
            "no workspace locks — take one with: swarmdeck lock acquire PATH", classes="empty"
        )
        yield KeyedTable(COLUMNS, id="locks-table")

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        rows = {
            key: in_order(cells, COLUMNS)
            for key, cells in lock_table_rows(snapshot.locks, time.time()).items()
        }
        self.query_one(".empty", Label).display = not rows
        table = self.query_one(KeyedTable)
        table.display = bool(rows)
        table.sync(rows)
