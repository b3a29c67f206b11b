"""The Locks panel: who holds which workspace lock (alive or stale, since when) and who owns
which work directory."""

from __future__ import annotations

from swarmdeck.app.panel import Rows, TablePanel
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import in_order
from swarmdeck.views.locks import COLUMNS, KEPT, YIELDING, lock_table_rows


class LocksPanel(TablePanel):
    """Workspace locks and work-directory owners, one row each, keyed by file or path."""

    TITLE = "Locks"
    COLUMNS = COLUMNS
    YIELDING = YIELDING
    KEPT = KEPT
    EMPTY = "no locks — swarmdeck lock acquire PATH takes one"

    def __init__(self) -> None:
        super().__init__(id="locks")

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        return {
            key: in_order(cells, COLUMNS)
            for key, cells in lock_table_rows(snapshot.locks, now).items()
        }
