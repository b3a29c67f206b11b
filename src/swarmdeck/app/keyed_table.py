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
        """Make the table show exactly `rows` (key → cells in column order)."""
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
