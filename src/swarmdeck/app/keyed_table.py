"""A DataTable kept in step with a keyed row set cell by cell, so the cursor never jumps, and
narrowed to its width: the trailing columns give way first and a cut cell ends in `…`.

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
    widths: Sequence[int], room: int, narrowest: int, yielding: Mapping[int, int] | None = None,
    kept: int = -1,
) -> list[int]:
    """How wide each column is drawn (padding included) for all to fit in `room` cells.

    First the yielding columns (index → the narrowest it may be cut to), in their order, are
    cut as far as the columns through index `kept` need to fit whole; then the leading columns
    (what a person reads first) are drawn whole, then one cut to what is left (its cells end in
    `…`), then none (0: that column gives way, the detail view shows it)."""
    widths = list(widths)
    excess = sum(widths[:kept + 1]) - room
    for index, floor in (yielding or {}).items():
        if excess <= 0:
            break
        cut = min(excess, max(0, widths[index] - floor))
        widths[index] -= cut
        excess -= cut
    drawn: list[int] = []
    for width in widths:
        left = room - sum(drawn)
        drawn.append(width if width <= left else (left if left >= narrowest else 0))
        if drawn[-1] < width:
            room = sum(drawn)
    return drawn


class FittedColumn(Column):
    """A column that, given way whole (width 0), takes no room, not even its padding."""

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

    DEFAULT_CSS = """
    KeyedTable {
        height: 1fr;
    }
    """

    def __init__(
        self, columns: Sequence[tuple[str, str]], *, id: str | None = None,
        classes: str | None = None, yielding: Sequence[str] = (), kept: str | None = None,
        yielding_floor: int = YIELDING_FLOOR,
    ) -> None:
        """Args:
            columns: (key, label) pairs, in display order.
            id: The widget id.
            classes: CSS classes.
            yielding: Keys of the columns of long free text cut first (down to
                `yielding_floor`), in that order, so that the columns through `kept` fit.
            kept: The last column that yielding ones make room for.
            yielding_floor: The narrowest a yielding column is cut to.
        """
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self._column_keys = [key for key, _ in columns]
        self._column_labels = [label for _, label in columns]
        self._yielding = [self._column_keys.index(key) for key in yielding]
        self._kept = self._column_keys.index(kept) if kept is not None else -1
        self._yielding_floor = yielding_floor

    def on_mount(self) -> None:
        for key, label in zip(self._column_keys, self._column_labels, strict=True):
            column_key = self.add_column(fitted(label), key=key)
            self.columns[column_key] = FittedColumn(**asdict(self.columns[column_key]))

    def on_resize(self, _event: events.Resize) -> None:
        self.fit()

    def fit(self) -> None:
        """Draw the leading columns whole and cut the rest to the width: no line is cut at the
        table's edge mid-word."""
        columns = self.ordered_columns
        if not columns:
            return
        widths = fitted_widths(
            [width + 2 * self.cell_padding for width in self._natural_widths()],
            self.scrollable_content_region.width,
            NARROWEST + 2 * self.cell_padding,
            {index: self._yielding_floor + 2 * self.cell_padding for index in self._yielding},
            self._kept,
        )
        changed = False
        for column, drawn in zip(columns, widths, strict=True):
            width = max(0, drawn - 2 * self.cell_padding)
            if column.auto_width or column.width != width:
                column.auto_width, column.width = False, width
                changed = True
        if changed:
            self._require_update_dimensions = True
            self.refresh()
            # Textual looks again at whether a scrollbar is needed only when the table's
            # size changes: a table fitted to a narrower screen would keep the horizontal
            # scrollbar (a blank row) its wider columns once needed. Look once the new
            # widths are laid out.
            self.call_after_refresh(self._refresh_scrollbars)

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
