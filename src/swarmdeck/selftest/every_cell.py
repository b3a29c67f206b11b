"""Every cell of the selftest's table, the cage's and peer's (cells.py) and the guards'
(guard_cells.py), and each break switch with the cells it must turn red."""

from __future__ import annotations

from swarmdeck.breaks import SWITCHES
from swarmdeck.selftest.cells import CELLS, Cell
from swarmdeck.selftest.guard_cells import guard_cells


def all_cells() -> dict[str, Cell]:
    """Every cell in the table's order: cells.py's, then one per guard."""
    return {**CELLS, **{made.name: made for made in guard_cells()}}


def reddening() -> dict[str, tuple[str, ...]]:
    """Each switch with the cells it must turn red, from the cells' own declarations."""
    cells = all_cells().values()
    return {
        switch: tuple(c.name for c in cells if switch in c.reddened_by) for switch in SWITCHES
    }
