"""The small formats every table shares: sizes, runtimes, ages, and cells in column order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from rich.text import Text

from swarmdeck.durations import NONE
from swarmdeck.printable import printable_cell
from swarmdeck.sizes import format_size

Cell = str | Text
Columns = Sequence[tuple[str, str]]
"""(key, label) pairs in display order."""


SIZE_CELLS_KEPT = 4096
"""Size cells kept formatted: every refresh writes the same few sizes of every job row (caps,
peaks, memory held), and formatting one exactly takes fraction arithmetic, far dearer than a
look-up."""


SIZE_WIDTH = len("1023M")
"""The widest a size is as a cell: at most 3 significant digits and a unit (format_size)."""


@lru_cache(maxsize=SIZE_CELLS_KEPT)
def size_cell(value: int | None) -> str:
    """A byte count as 1.5G; a dash when there is none."""
    return NONE if value is None else format_size(value)


def in_order(cells: Mapping[str, Cell], columns: Columns) -> tuple[Cell, ...]:
    """A row's cells for the given columns, in their order: a face may show fewer columns.
    Every face draws its tables' cells from here, so here their text is made printable."""
    return tuple(printable_cell(cells[key]) for key, _ in columns)


def pick(columns: Columns, keys: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The columns named by `keys`, in the order of `keys`."""
    labels = dict(columns)
    return tuple((key, labels[key]) for key in keys)
