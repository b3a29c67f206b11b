"""The small formats every table shares: sizes, runtimes, ages, and cells in column order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text

from swarmdeck.sizes import format_size

Cell = str | Text
Columns = Sequence[tuple[str, str]]
"""(key, label) pairs in display order."""
NONE = "–"


def size_cell(value: int | None) -> str:
    """A byte count as 1.5G; a dash when there is none."""
    return NONE if value is None else format_size(value)


def runtime_text(seconds: float | None) -> str:
    """A runtime as 42s, 7m05s, 3h12m."""
    if seconds is None:
        return NONE
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def age_text(seconds: float) -> str:
    """A short age: 42s, 7m, 3h, 2d."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def in_order(cells: Mapping[str, Cell], columns: Columns) -> tuple[Cell, ...]:
    """A row's cells for the given columns, in their order: a face may show fewer columns."""
    return tuple(cells[key] for key, _ in columns)


def pick(columns: Columns, keys: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The columns named by `keys`, in the order of `keys`."""
    labels = dict(columns)
    return tuple((key, labels[key]) for key in keys)
