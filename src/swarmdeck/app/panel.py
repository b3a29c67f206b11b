"""The skeleton every panel shares: a bordered box fed the app's snapshot by data binding.

`SnapshotPanel` holds the `snapshot` reactive that the app binds (`data_bind`) in compose, so
a panel never reaches for the app. A panel that is not visible (another screen covers it, it
is scrolled away) is not redrawn: it keeps the latest snapshot and draws that when it shows
again. `TablePanel` adds what the table panels (Jobs, Alerts, Locks, GPUs) repeat: one keyed
table, one line saying where it looked when there is nothing to show, and rows made from the
snapshot. An empty panel carries the `-empty` class, and the stylesheet shrinks it to that
line so the panels with something to say keep the room. A panel given what it drew last
touches no widget: finding one walks the DOM, and most refreshes change most panels not at all.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import Label

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.quiet import show_subtitle
from swarmdeck.snapshot import Snapshot
from swarmdeck.views.cells import Cell, Columns

Rows = dict[str, tuple[Cell, ...]]
"""Row key → cells in column order."""


class SnapshotPanel(Vertical, can_focus=True):
    """A titled panel that redraws from each snapshot it is given; it takes the focus itself
    when it has no table to focus (empty, or a panel of cards)."""

    TITLE: ClassVar[str] = ""

    snapshot: var[Snapshot | None] = var(None)
    """The latest snapshot of the whole room, bound to the app's."""

    def __init__(self, *, id: str) -> None:
        """Args:
        id: The widget id (also what the number keys and the stylesheet name it by).
        """
        super().__init__(id=id, classes="panel")
        self.border_title = self.TITLE
        self._hidden = False
        self._behind: Snapshot | None = None
        """The snapshot that came while hidden, drawn when the panel shows again."""

    def on_mount(self) -> None:
        self.app.screen_change_signal.subscribe(self, self._screen_changed)

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        if not self._can_be_seen():
            self._behind = snapshot
            return
        self.show(snapshot)

    def on_hide(self) -> None:
        self._hidden = True

    def on_show(self) -> None:
        self._hidden = False
        self._catch_up()

    def _screen_changed(self, _screen: object) -> None:
        self._catch_up()

    def _can_be_seen(self) -> bool:
        """Shown, on the top screen or right behind a modal one (which lets it show through)."""
        if self._hidden:
            return False
        top = self.app.screen
        return top is self.screen or (isinstance(top, ModalScreen) and self.screen.is_current)

    def _catch_up(self) -> None:
        """Draw the snapshot that came while this panel could not be seen."""
        if self._behind is None or not self._can_be_seen():
            return
        behind, self._behind = self._behind, None
        self.show(behind)

    def show(self, snapshot: Snapshot) -> None:
        """Draw what this snapshot says; only what changed is touched. Each panel says how;
        the base draws nothing."""


class TablePanel(SnapshotPanel):
    """A panel of one keyed table; subclasses say its columns, its empty line and its rows."""

    COLUMNS: ClassVar[Columns] = ()
    EMPTY: ClassVar[str] = ""
    """What the panel says when it has no rows; it names where it looked."""
    YIELDING: ClassVar[tuple[str, ...]] = ()
    """Columns of free text cut first so the columns through KEPT fit (KeyedTable's)."""
    KEPT: ClassVar[str | None] = None

    _drawn: tuple[Rows, str] | None = None
    """The rows and subtitle drawn last: the same again touches no widget."""

    def compose(self) -> ComposeResult:
        yield from self.compose_above()
        yield Label(self.empty_text(), classes="empty")
        yield KeyedTable(
            self.COLUMNS, id=f"{self.id}-table", yielding=self.YIELDING, kept=self.KEPT
        )

    def compose_above(self) -> ComposeResult:
        """Widgets shown above the table (the GPU cards); none by default."""
        yield from ()

    def empty_text(self) -> str:
        return self.EMPTY

    def rows(self, snapshot: Snapshot, now: float) -> Rows:
        """The rows this snapshot gives, in display order; each table panel says which (the
        base has none)."""
        return {}

    def subtitle(self, snapshot: Snapshot, rows: Rows) -> str:
        """The figures in the bottom border; none by default."""
        return ""

    def show(self, snapshot: Snapshot) -> None:
        rows = self.rows(snapshot, time.time())
        drawn = (rows, self.subtitle(snapshot, rows))
        if drawn == self._drawn:
            return
        self._drawn = drawn
        self.set_class(not rows, "-empty")
        self.query_one(".empty", Label).display = not rows
        table = self.query_one(KeyedTable)
        table.display = bool(rows)
        table.sync(rows)
        show_subtitle(self, drawn[1])
