"""Which panels fold to their title line on a short screen, so the control room fits a small
tmux pane without the screen scrolling.

Below SHORT_HEIGHT rows every panel cannot have its room: the Jobs and Agents row (the room that
is left) stays open, and so does the focused panel's row; every other panel is drawn as its
title line alone (class `-folded`). With nothing focused, or the Hosts card focused (as the app
starts), the card stays open above Jobs and Agents: what a person watching reads first.
"""

from __future__ import annotations

from collections.abc import Sequence

SHORT_HEIGHT = 35
"""Screens fewer rows tall than this fold panels (the breakpoint class `-short`)."""

Rows = Sequence[Sequence[str]]
"""Panel ids, row by row from the top, as the main screen lays them out."""


def folded_panels(rows: Rows, open_row: int, focused: str | None) -> frozenset[str]:
    """The panels folded to their title line: all but the row `open_row` (the room that is
    left) and the focused panel's row (the first row while nothing is focused)."""
    focused_row = next((n for n, row in enumerate(rows) if focused in row), 0)
    return frozenset(
        panel for n, row in enumerate(rows) if n not in (open_row, focused_row) for panel in row
    )
