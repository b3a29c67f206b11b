"""The skeleton every panel shares: a bordered box fed the app's snapshot by data binding.

`SnapshotPanel` holds the `snapshot` reactive that the app binds (`data_bind`) in compose, so a
panel never reaches for the app; one not visible keeps the latest snapshot and draws it when it
shows again. `DrawnPanel` draws only when what it would draw differs from what it drew last:
finding a widget walks the DOM, and most refreshes change most panels not at all. `TablePanel`
is what the table panels (Jobs, Alerts, Locks, GPUs) share; `StorePanel` is for a panel whose
keys change the state store (read-only, those keys are neither offered nor run).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import Label

from swarmdeck.app.keyed_table import GAP, KeyedTable
from swarmdeck.app.quiet import show_subtitle
from swarmdeck.app.readonly import WriteGate
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.cells import Cell, Columns

Rows = dict[str, tuple[Cell, ...]]
"""Row key → cells in column order."""


class SnapshotPanel(Vertical, can_focus=True):
    """A titled panel that redraws from each snapshot it is given; it takes the focus itself
    when it has no table to focus (empty, or a panel of cards)."""

    TITLE: ClassVar[str] = ""

    snapshot: var[Snapshot | None] = var(None)
    """The latest snapshot of the whole room, bound to the app's."""
    collapsed: var[bool] = var(False)
    """Drawn as its title line alone (a short screen: app/collapse.py); the title then says how
    many items the panel holds, which its collapsed lines do not show."""

    class Changed(Message):
        """A key of the panel's changed something (started a job, released a lock): the
        room is probed again at once."""

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

    def watch_collapsed(self, collapsed: bool) -> None:
        self.set_class(collapsed, "-collapsed")
        self.show_title()

    def tally(self) -> str:
        """What the collapsed title adds after the panel's name (how many items it holds); the
        base adds nothing."""
        return ""

    def show_title(self) -> None:
        """The name in the top border, and while collapsed the tally after it."""
        tally = self.tally() if self.collapsed else ""
        title = f"{self.TITLE} · {tally}" if tally else self.TITLE
        if self.border_title != title:
            self.border_title = title

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        if snapshot is None or not self.is_attached:
            # Not attached: the app is ending (told to exit, its screen going), and a panel
            # that drew now would mount into a room that is no longer there (MountError).
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
        if self._behind is None or not self.is_attached or not self._can_be_seen():
            return
        behind, self._behind = self._behind, None
        self.show(behind)

    def show(self, snapshot: Snapshot) -> None:
        """Draw what this snapshot says; only what changed is touched. Each panel says how;
        the base draws nothing."""

    def action_nothing_to_open(self) -> None:
        """`enter` on a panel with no rows to open (it holds the focus itself): say so."""
        if self.has_class("-empty"):
            self.notify(f"nothing to open: {self.query_one('.empty', Label).content}",
                        severity="warning")


Drawing = TypeVar("Drawing")
"""What a panel draws from one snapshot, as a value: compared with what it drew last."""


class DrawnPanel(SnapshotPanel, Generic[Drawing]):
    """A panel that draws a snapshot only when what it would draw differs from what it drew
    last: the same again touches no widget."""

    _drawn: Drawing | None = None
    """What was drawn last."""
    drawing: Callable[[Snapshot], Drawing]
    """What this snapshot would draw, as a value: each panel's own method."""

    def draw(self, snapshot: Snapshot, drawing: Drawing) -> None:
        """Draw `drawing`, made from `snapshot`; each panel says how."""

    def show(self, snapshot: Snapshot) -> None:
        drawing = self.drawing(snapshot)
        if drawing == self._drawn:
            return
        self._drawn = drawing
        self.draw(snapshot, drawing)


@dataclass(frozen=True)
class TableDrawing:
    """What a table panel draws from one snapshot."""

    rows: Rows
    subtitle: str
    above: object = None
    """What the widgets above the table show (the GPU cards' reading); None without them."""


NOTHING_TO_OPEN = Binding("enter", "nothing_to_open", show=False)
"""`enter` reaches an empty table panel itself (its table is hidden): it says so."""


class TablePanel(DrawnPanel[TableDrawing]):
    """A panel of one keyed table; subclasses say its columns, its empty line and its rows.

    One line says where it looked when there is nothing to show, and its bottom border says
    which way the table's columns scroll. An empty panel carries the `-empty` class, and the
    stylesheet shrinks it to that line so the panels with something to say keep the room."""

    BINDINGS = [NOTHING_TO_OPEN]

    COLUMNS: ClassVar[Columns] = ()
    EMPTY: ClassVar[str] = ""
    """What the panel says when it has no rows; it names where it looked."""
    YIELDING: ClassVar[tuple[str, ...]] = ()
    """Columns of free text cut first so the columns through KEPT fit (KeyedTable's)."""
    KEPT: ClassVar[str | None] = None
    FIXED: ClassVar[int] = 0
    """Leading columns that stay while Right and Left scroll the others (KeyedTable's)."""
    LEAST_WIDTHS: ClassVar[Mapping[str, int] | None] = None
    """Cells columns take at least, and steady widths (KeyedTable's `least_widths`); None:
    neither."""
    GAP: ClassVar[int] = GAP
    """Blank cells between two columns' texts (KeyedTable's `gap`)."""

    _scroll_hint = ""
    """Which way the table's columns scroll, said after the subtitle ("more columns →")."""

    def compose(self) -> ComposeResult:
        yield from self.compose_above()
        yield Label(self.empty_text(), classes="empty")
        yield KeyedTable(
            self.COLUMNS, id=f"{self.id}-table", yielding=self.YIELDING, kept=self.KEPT,
            fixed=self.FIXED, least_widths=self.LEAST_WIDTHS, gap=self.GAP,
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

    def drawing(self, snapshot: Snapshot) -> TableDrawing:
        rows = self.rows(snapshot, time.time())
        return TableDrawing(rows, self.subtitle(snapshot, rows))

    def draw(self, snapshot: Snapshot, drawing: TableDrawing) -> None:
        rows = drawing.rows
        self.set_class(not rows, "-empty")
        self.query_one(".empty", Label).display = not rows
        table = self.query_one(KeyedTable)
        table.display = bool(rows)
        table.sync(rows)
        self.show_figures()
        self.show_title()

    def show_figures(self) -> None:
        """The drawn figures in the bottom border, then which way the columns scroll: an empty
        panel draws its hint, not its table, so it has no columns to scroll."""
        drawn = self._drawn
        figures = drawn.subtitle if drawn is not None else ""
        hint = self._scroll_hint if drawn is not None and drawn.rows else ""
        show_subtitle(self, " · ".join(part for part in (figures, hint) if part))

    def on_keyed_table_scrolled(self, event: KeyedTable.Scrolled) -> None:
        event.stop()
        if not event.passed and not event.more:
            self._scroll_hint = ""
        else:
            self._scroll_hint = " ".join(
                part for part in ("←" if event.passed else "", "more columns",
                                  "→" if event.more else "") if part
            )
        self.show_figures()

    def tally(self) -> str:
        count = len(self._drawn.rows) if self._drawn is not None else 0
        return str(count) if count else ""


class StorePanel(SnapshotPanel):
    """A panel whose keys change the state store: it is given the store (and whether the app
    is read-only) rather than reaching for the app's."""

    def __init__(self, store: StateStore, *, gate: WriteGate, id: str) -> None:
        """Args:
        store: The state store its keys change.
        gate: Whether the app was started with --readonly: every such key is refused.
        id: The widget id.
        """
        super().__init__(id=id)
        self.store = store
        self.gate = gate

    ELSEWHERE: ClassVar[dict[str, str]] = {}
    """Action → what to select for it, and where ("a finding in the Watchdog panel (6)"):
    what its key says when pressed with the focus elsewhere."""

    def elsewhere(self, key: str) -> str | None:
        """What to select, and where, for this panel's `key`; None when it has no such key."""
        return next((self.ELSEWHERE[b.action] for b in self.BINDINGS
                     if isinstance(b, Binding) and key in b.key.split(",")
                     and b.action in self.ELSEWHERE), None)

    def acts(self, action: str) -> bool:
        """Whether `action` is one of this panel's keys (each changes the store)."""
        return any(isinstance(b, Binding) and b.action == action for b in self.BINDINGS)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only, the panel's keys are not offered: the footer leaves them out (each would
        only refuse); `on_key` still says why such a key does nothing."""
        return self.gate.offers(self.acts(action))

    def on_key(self, event: events.Key) -> None:
        """Read-only, a key of this panel's reaches here unbound: it says why nothing happens
        rather than nothing at all."""
        if self.gate.readonly and any(
            isinstance(b, Binding) and event.key in b.key.split(",") for b in self.BINDINGS
        ):
            event.stop()
            self.writable()

    def writable(self) -> bool:
        """False, after saying so, when the app is read-only."""
        return not self.gate.refuses(self)
