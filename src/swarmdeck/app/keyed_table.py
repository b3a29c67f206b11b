"""A DataTable kept in step with a keyed row set cell by cell, so the cursor never jumps, and
narrowed to its width: the trailing columns give way first and a cut cell ends in `…`; Right
and Left scroll the columns a column at a time, those that gave way coming in at the right
while the fixed leading ones stay, as a process table wider than its screen scrolls.

A cell whose width stays the same is redrawn alone. `DataTable.update_cell` keys every render
cache it has by one update counter and repaints the whole widget, so a runtime ticking in one
row renders every cell of every visible row again; on a table of twenty running jobs that was
most of what the control room cost. Here the changed cell's renders are dropped from the
cache, the row and line caches (cheap to rebuild from cached cells) are emptied, and only that
cell's region is repainted. This reaches into DataTable's caches (the Textual that
constraints.txt pins); tests/app/test_redraw.py checks the screen shows each new value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from rich.text import Text
from textual import events
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import (
    CellDoesNotExist,
    Column,
    ColumnKey,
    RowDoesNotExist,
    RowKey,
)

from swarmdeck.views.cells import Cell

NARROWEST = 6
"""A column's cells are cut no narrower than this; past that the column gives way whole."""


def fitted(cell: Cell) -> Text:
    """A cell as one line that ends in `…` when its column is narrower than it."""
    text = Text(cell) if isinstance(cell, str) else cell.copy()
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


YIELDING_FLOOR = 12
"""A yielding column (a label, a state) is cut to no narrower than this before others go."""


def fitted_widths(
    widths: Sequence[int], space: int, narrowest: int, yielding: Mapping[int, int] | None = None,
    kept: int = -1,
) -> list[int]:
    """How wide each column is drawn (padding included) for all to fit in `space` cells.

    First the yielding columns (index → the narrowest it may be cut to), in their order, are
    cut as far as the leading columns need to fit whole: all of them where cutting the yielding
    ones makes that much space, else as many as it makes space for, and at least those through
    index `kept`. Then the leading columns
    (what a person reads first) are drawn whole, then one cut to what is left (its cells end in
    `…`), then none (0: that column gives way; the table scrolls to it, the detail shows it)."""
    widths = list(widths)
    yielding = yielding or {}
    spare = sum(max(0, widths[index] - floor) for index, floor in yielding.items())
    last = len(widths) - 1
    while last > kept and sum(widths[:last + 1]) - spare > space:
        last -= 1
    excess = sum(widths[:last + 1]) - space
    for index, floor in yielding.items():
        if excess <= 0:
            break
        cut = min(excess, max(0, widths[index] - floor))
        widths[index] -= cut
        excess -= cut
    drawn: list[int] = []
    for width in widths:
        left = space - sum(drawn)
        drawn.append(width if width <= left else (left if left >= narrowest else 0))
        if drawn[-1] < width:
            space = sum(drawn)
    return drawn


class FittedColumn(Column):
    """A column that, given way whole (width 0), takes no space, not even its padding."""

    def get_render_width(self, data_table: DataTable[Any]) -> int:
        if not self.auto_width and self.width == 0:
            return 0
        return super().get_render_width(data_table)


class KeyedTable(DataTable[Cell]):
    """Rows are identified by a stable key (job id, pid, session id) across refreshes.

    `sync` removes rows whose key is gone, updates only the cells that changed and appends new
    rows; it never calls `clear()`, which would reset the cursor and scroll position. A changed
    cell of the same width is repainted alone (see the module docstring).
    """

    class Scrolled(Message):
        """Which way the columns can scroll changed: the panel says so in its border."""

        def __init__(self, passed: bool, more: bool, table: KeyedTable | None = None) -> None:
            """Args:
                passed: Columns are scrolled out at the left (Left brings them back).
                more: Columns give way at the right (Right brings them in).
                table: The table whose columns these are.
            """
            super().__init__()
            self.passed = passed
            self.more = more
            self.table = table

        @property
        def control(self) -> KeyedTable | None:
            """The table whose columns these are (a panel with two tells them apart)."""
            return self.table

    DEFAULT_CSS = """
    KeyedTable {
        height: 1fr;
    }
    """

    def __init__(
        self, columns: Sequence[tuple[str, str]], *, id: str | None = None,
        classes: str | None = None, yielding: Sequence[str] = (), kept: str | None = None,
        fixed: int = 0,
        yielding_floor: int = YIELDING_FLOOR,
        least_widths: Mapping[str, int] | None = None,
    ) -> None:
        """Args:
            columns: (key, label) pairs, in display order.
            id: The widget id.
            classes: CSS classes.
            yielding: Keys of the columns of long free text cut first (down to
                `yielding_floor`), in that order, so that the columns through `kept` fit.
            kept: The last column that yielding ones make space for.
            fixed: How many leading columns stay in place while Right and Left scroll the
                others (the Jobs panel's label, which names the row).
            yielding_floor: The narrowest a yielding column is cut to.
            least_widths: Cells the columns named take at least, whatever their cells now; given,
                no column is laid out narrower than it has been since the table was made,
                so a row whose state or figure changes never moves the columns after it.
        """
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self._column_keys = [key for key, _ in columns]
        self._column_labels = [label for _, label in columns]
        self._yielding = [self._column_keys.index(key) for key in yielding]
        self._kept = self._column_keys.index(kept) if kept is not None else -1
        self._fixed = fixed
        self._yielding_floor = yielding_floor
        self._steady = least_widths is not None
        self._widest = [(least_widths or {}).get(key, 0) for key in self._column_keys]
        """Each column's widest natural width so far (from `least_widths` on), when steady."""
        self.shifted = 0
        """How many columns after the fixed ones Right has scrolled out at the left."""
        self._scrolls: tuple[bool, bool] = (False, False)
        """(passed, more) as last told (Scrolled)."""

    def on_mount(self) -> None:
        for key, label in zip(self._column_keys, self._column_labels, strict=True):
            column_key = self.add_column(fitted(label), key=key)
            self.columns[column_key] = FittedColumn(**asdict(self.columns[column_key]))

    def on_resize(self, _event: events.Resize) -> None:
        self.fit()

    def action_cursor_right(self) -> None:
        """Right scrolls the columns one to the left, a column that gave way at the right
        coming in; the fixed ones stay (the rows are chosen whole: there is no cell cursor)."""
        if self._more_at_right(self.shifted):
            self.shifted += 1
            self.fit()

    def action_cursor_left(self) -> None:
        """Left scrolls back the columns Right scrolled out, one at a time."""
        if self.shifted > 0:
            self.shifted -= 1
            self.fit()

    def fit(self) -> None:
        """Draw the leading columns whole and cut the rest to the width: no line is cut at the
        table's edge mid-word. Scrolled (`shifted`), the columns Right passed give way first,
        then the fixed ones and those after the passed ones are fitted alike; a table widened
        until the passed columns fit again scrolls back to them."""
        columns = self.ordered_columns
        if not columns:
            return
        self.shifted = min(self.shifted, max(0, len(columns) - self._fixed - 1))
        while self.shifted > 0 and not self._more_at_right(self.shifted - 1):
            self.shifted -= 1
        changed = False
        for column, drawn in zip(columns, self._drawn_widths(self.shifted), strict=True):
            width = max(0, drawn - 2 * self.cell_padding)
            if column.auto_width or column.width != width:
                column.auto_width, column.width = False, width
                changed = True
        scrolls = (self.shifted > 0, self._more_at_right(self.shifted))
        if scrolls != self._scrolls:
            self._scrolls = scrolls
            self.post_message(self.Scrolled(*scrolls, table=self))
        if changed:
            # Renders are cached by cell, not by width: a column of a new width (scrolled in,
            # or out) is rendered again, not drawn from its old cells.
            self._clear_caches()
            self._require_update_dimensions = True
            self.refresh()
            # Textual looks again at whether a scrollbar is needed only when the table's
            # size changes: a table fitted to a narrower screen would keep the horizontal
            # scrollbar (a blank row) its wider columns once needed. Look once the new
            # widths are laid out.
            self.call_after_refresh(self._refresh_scrollbars)

    def _drawn_widths(self, shifted: int) -> list[int]:
        """Each column's drawn width (padding included) with `shifted` columns after the fixed
        ones scrolled out (0)."""
        padding = 2 * self.cell_padding
        natural = [width + padding for width in self._natural_widths()]
        shown = [index for index in range(len(natural))
                 if index < self._fixed or index >= self._fixed + shifted]
        kept = sum(1 for index in shown if index <= self._kept) - 1 if self._kept >= 0 else -1
        widths = fitted_widths(
            [natural[index] for index in shown],
            self.scrollable_content_region.width,
            NARROWEST + padding,
            {shown.index(index): self._yielding_floor + padding
             for index in self._yielding if index in shown},
            kept,
        )
        drawn = [0] * len(natural)
        for index, width in zip(shown, widths, strict=True):
            drawn[index] = width
        return drawn

    def _more_at_right(self, shifted: int) -> bool:
        """Whether, scrolled by `shifted`, a column at the right gives way or is cut: there is
        more for Right to bring in."""
        if not self.ordered_columns:
            return False
        last = len(self.ordered_columns) - 1
        drawn = self._drawn_widths(shifted)[last]
        whole = self._natural_widths()[last] + 2 * self.cell_padding
        return drawn == 0 or (drawn < whole and last not in self._yielding)

    def _natural_widths(self) -> list[int]:
        """Each column's width whole: its label's or its widest cell's.

        Measured from the cells themselves, not DataTable's content widths, which it measures
        from cells as drawn: a column once cut would be believed that narrow ever after, and a
        cell that grows in it (a peak reaching its ceiling) would stay cut.
        """
        widths = [column.label.cell_len for column in self.ordered_columns]
        for cells in self._data.values():
            for index, column in enumerate(self.ordered_columns):
                cell = cells.get(column.key)
                if cell is not None:
                    widths[index] = max(widths[index], cell.cell_len)
        if self._steady and len(widths) == len(self._widest):
            self._widest = [max(pair) for pair in zip(widths, self._widest, strict=True)]
            return list(self._widest)
        return widths

    def sync(self, rows: Mapping[str, Sequence[Cell]]) -> None:
        """Make the table show exactly `rows` (key → cells in column order), in their order."""
        with self.app.batch_update():
            # Widths change only with a row come or gone or a cell of another width: only
            # then are the columns fitted again.
            resized = False
            for stale in [key.value for key in self.rows if key.value not in rows]:
                self.remove_row(stale)
                resized = True
            alone: list[tuple[str, str]] = []
            for key, cells in rows.items():
                shown = [fitted(cell) for cell in cells]
                try:
                    current = self.get_row(key)
                except RowDoesNotExist:
                    self.add_row(*shown, key=key)
                    resized = True
                    continue
                for column, old, new in zip(self._column_keys, current, shown, strict=True):
                    if old == new:
                        continue
                    if old.cell_len == new.cell_len:
                        self._data[RowKey(key)][ColumnKey(column)] = new
                        alone.append((key, column))
                    else:
                        self.update_cell(key, column, new, update_width=True)
                        resized = True
            self._repaint_cells(alone)
            if self._keys_in_order() != list(rows):
                self._reorder(rows)
            if resized:
                self.fit()

    def _repaint_cells(self, cells: list[tuple[str, str]]) -> None:
        """Repaint only these (row key, column key) cells, whose content was just replaced."""
        if not cells:
            return
        changed = {(RowKey(row), ColumnKey(column)) for row, column in cells}
        cache, count = self._cell_render_cache, self._update_count
        # A cell render is keyed (row, column, style, cursor, hover, hover shown, update count,
        # pseudo-classes); one of an older count is never looked up again, so it goes too.
        keys = cache.keys()  # an LRUCache, not a dict: it cannot be iterated itself
        for cached in [key for key in keys if key[:2] in changed or key[6] != count]:
            cache.discard(cached)
        self._row_renderable_cache.clear()
        self._row_render_cache.clear()
        self._line_cache.clear()
        for row, column in cells:
            self.refresh_coordinate(
                Coordinate(self.get_row_index(row), self.get_column_index(column))
            )

    def _keys_in_order(self) -> list[str]:
        return [str(row.key.value) for row in self.ordered_rows]

    def _reorder(self, rows: Mapping[str, Sequence[Cell]]) -> None:
        """Lay the rows out again in the wanted order, the cursor staying on its row.

        Only a newcomer that does not belong at the end (a new job above the finished ones)
        moves rows, so this is rare; a table rebuilt this way keeps its scroll position too.
        """
        cursor_key = self.cursor_key()
        scroll = self.scroll_offset
        self.clear()
        for key, cells in rows.items():
            self.add_row(*(fitted(cell) for cell in cells), key=key)
        if cursor_key is not None and cursor_key in rows:
            self.move_cursor(row=self.get_row_index(cursor_key), scroll=False)
        self.scroll_to(scroll.x, scroll.y, animate=False)

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor; None while the table has no row there."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except CellDoesNotExist:
            return None
        return None if key.value is None else str(key.value)
