"""A DataTable kept in step with a keyed row set cell by cell, so the cursor never jumps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

from swarmdeck.views.cells import Cell


class KeyedTable(DataTable[Cell]):
    """Rows are identified by a stable key (job id, pid, session id) across refreshes.

    `sync` removes rows whose key is gone, updates only the cells that changed and appends new
    rows; it never calls `clear()`, which would reset the cursor and scroll position.
    """

    DEFAULT_CSS = """
    KeyedTable {
        height: 1fr;
    }
    """

    def __init__(
        self, columns: Sequence[tuple[str, str]], *, id: str | None = None,
        classes: str | None = None
    ) -> None:
        """Args:
            columns: (key, label) pairs, in display order.
            id: The widget id.
            classes: CSS classes.
        """
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self._column_keys = [key for key, _ in columns]
        self._column_labels = [label for _, label in columns]

    def on_mount(self) -> None:
        for key, label in zip(self._column_keys, self._column_labels, strict=True):
            self.add_column(label, key=key)

    def sync(self, rows: Mapping[str, Sequence[Cell]]) -> None:
        """Make the table show exactly `rows` (key → cells in column order), in their order."""
        with self.app.batch_update():
            for stale in [key.value for key in self.rows if key.value not in rows]:
                self.remove_row(stale)
            for key, cells in rows.items():
                try:
                    current = self.get_row(key)
                except RowDoesNotExist:
                    self.add_row(*cells, key=key)
                    continue
                for column, old, new in zip(self._column_keys, current, cells, strict=True):
                    if old != new:
                        self.update_cell(key, column, new, update_width=True)
            if self._keys_in_order() != list(rows):
                self._reorder(rows)

    def _keys_in_order(self) -> list[str]:
        return [str(row.key.value) for row in self.ordered_rows]

    def _reorder(self, rows: Mapping[str, Sequence[Cell]]) -> None:
        """Lay the rows out again in the wanted order, the cursor staying on its row.

        Only a newcomer that does not belong at the end (a new job above the finished ones)
        moves rows, so this is rare; a table rebuilt this way keeps its scroll position too.
        """
        cursor_key = self._cursor_key()
        scroll = self.scroll_offset
        self.clear()
        for key, cells in rows.items():
            self.add_row(*cells, key=key)
        if cursor_key is not None and cursor_key in rows:
            self.move_cursor(row=self.get_row_index(cursor_key), scroll=False)
        self.scroll_to(scroll.x, scroll.y, animate=False)

    def _cursor_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except (RowDoesNotExist, LookupError):
            return None
        return None if key.value is None else str(key.value)
