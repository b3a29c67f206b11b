"""The Locks panel: who holds which workspace lock (alive or stale, since when) and who owns
which work directory."""

from __future__ import annotations

from swarmdeck.actions.lock import release_stale
from swarmdeck.app import commands
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.panel import Rows, TablePanel
from swarmdeck.errors import SwarmdeckError
from swarmdeck.printable import printable
from swarmdeck.probes.locks import LockState
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

    def action_release_lock(self) -> None:
        """Release the selected lock, once the person confirms, when its holder is gone."""
        key = self.query_one(KeyedTable).cursor_key()
        found = self.snapshot.locks if self.snapshot else []
        lock = next(
            (item for item in found
             if isinstance(item, LockState) and f"lock:{item.lock_file}" == key),
            None,
        )
        if lock is None:
            self.notify("select a lock in the Locks panel (5) first", severity="warning")
            return
        why = commands.why_not_release(lock)
        if why:
            self.notify(f"not released: {why}", severity="error")
            return
        lines = [printable(lock.path or str(lock.lock_file)),
                 f"{lock.state}: {printable(lock.reason)}", "", f"removes {lock.lock_file}"]

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                release_stale(lock.lock_file)
            except SwarmdeckError as error:
                self.notify(f"not released: {error}", severity="error")
                return
            self.notify(f"released the stale lock of {lock.path or lock.lock_file}")
            self.post_message(self.Changed())

        self.app.push_screen(
            commands.ConfirmScreen("Release this stale lock?", lines, "Release"), answered
        )
