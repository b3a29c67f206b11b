"""The skeleton every panel shares: a bordered box fed the app's snapshot by data binding.

`SnapshotPanel` holds the `snapshot` reactive that the app binds (`data_bind`) in compose, so
a panel never reaches for the app. `TablePanel` adds what the table panels (Jobs, Alerts,
Locks, GPUs) repeat: one keyed table, one line saying where it looked when there is nothing
to show, and rows made from the snapshot. An empty panel carries the `-empty` class, and the
stylesheet shrinks it to that line so the panels with something to say keep the room.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Label

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import Cell, Columns

Rows = dict[str, tuple[Cell, ...]]
"""Row key → cells in column order."""


class SnapshotPanel(Vertical):
    """A titled panel that redraws from each snapshot it is given."""

    TITLE: ClassVar[str] = ""

    snapshot: reactive[Snapshot | None] = reactive(None)
    """The latest snapshot of the whole room, bound to the app's."""

    def __init__(self, *, id: str) -> None:
        """Args:
        id: The widget id (also what the number keys and the stylesheet name it by).
        """
        super().__init__(id=id, classes="panel")
        self.border_title = self.TITLE

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is not None:
            self.show(snapshot)

    def show(self, snapshot: Snapshot) -> None:
        """Draw what this snapshot says; only what changed is touched."""
        raise NotImplementedError


class TablePanel(SnapshotPanel):
    """A panel of one keyed table; subclasses say its columns, its empty line and its rows."""

    COLUMNS: ClassVar[Columns] = ()
    EMPTY: ClassVar[str] = ""
    """What the panel says when it has no rows; it names where it looked."""

    def compose(self) -> ComposeResult:
        yield from self.compose_above()
        yield Label(self.empty_text(), classes="empty")
        yield KeyedTable(self.COLUMNS, id=f"{self.id}-table")

    def compose_above(self) -> ComposeResult:
        """Widgets shown above the table (the GPU cards); none by default."""
        yield from ()

    def empty_text(self) -> str:
        return self.EMPTY

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        """The rows this snapshot gives, in display order."""
        raise NotImplementedError

    def subtitle(self, snapshot: Snapshot, rows: Rows) -> str:
        """The figures in the bottom border; none by default."""
        return ""

    def show(self, snapshot: Snapshot) -> None:
        rows = self.rows(snapshot, time.time())
        self.set_class(not rows, "-empty")
        self.query_one(".empty", Label).display = not rows
        table = self.query_one(KeyedTable)
        table.display = bool(rows)
        table.sync(rows)
        self.border_subtitle = self.subtitle(snapshot, rows)
