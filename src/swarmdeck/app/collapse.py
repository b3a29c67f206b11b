"""Which panels collapse to their title line on a short screen, so the control room fits a small
tmux pane without the screen scrolling.

Below SHORT_HEIGHT rows every panel cannot have its height: the Jobs and Agents row (the lines that
are left) stays open, and so does the focused panel's row; every other panel is drawn as its
title line alone (class `-collapsed`). With nothing focused, or the Hosts card focused (as the app
starts), the card stays open above Jobs and Agents: what a person watching reads first.

Where the Hosts panel would collapse it shows its glance instead (GLANCED): its title line and one
line per host saying its headroom, at most a quarter of the screen (`glance_lines`); the hosts
past that scroll inside it, this host's line first. When the screen cannot hold it all, the
Jobs and Agents row gives way first, down to its least height, then the focused panel's row
(at most half the screen, and at most what the rest leaves: `focused_height`), which scrolls
inside its borders; the glance and the title lines of the collapsed panels keep their lines.

A room with no job and no session (a first look) has nothing to fill that row with: while no
panel below it holds the focus, each row below whose panels are all empty opens, top down, as
far as the screen allows with that row at its least height, saying what it found ("no
findings") instead of a bare title line (`opened_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence

SHORT_HEIGHT = 35
"""Screens fewer rows tall than this collapse panels (the breakpoint class `-short`)."""

Rows = Sequence[Sequence[str]]
"""Panel ids, row by row from the top, as the main screen lays them out."""


GLANCED = frozenset({"hosts"})
"""Panels that show their glance where they would collapse: a title line, then one line per item."""

EMPTY_HEIGHT = 3
"""The lines an empty panel takes open: its one line of text in its border."""


def opened_rows(
    rows: Rows, collapsed: frozenset[str], empty: frozenset[str], spare: int
) -> frozenset[str]:
    """Of the collapsed rows whose panels are all empty, those that open, top down, in `spare`
    lines: each takes EMPTY_HEIGHT lines open instead of its title line."""
    opened: set[str] = set()
    for row in rows:
        if row and all(panel in collapsed and panel in empty for panel in row):
            if spare < EMPTY_HEIGHT - 1:
                break
            spare -= EMPTY_HEIGHT - 1
            opened.update(row)
    return frozenset(opened)


def collapsed_panels(rows: Rows, open_row: int, focused: str | None) -> frozenset[str]:
    """The panels collapsed to their title line: all but the row `open_row` (the lines that
    are left) and the focused panel's row (the first row while nothing is focused)."""
    focused_row = next((n for n, row in enumerate(rows) if focused in row), 0)
    return frozenset(
        panel for n, row in enumerate(rows) if n not in (open_row, focused_row) for panel in row
    )


def glanced_panels(collapsed: frozenset[str]) -> frozenset[str]:
    """Of the panels that would collapse, those that show their glance instead."""
    return collapsed & GLANCED


def glance_lines(items: int, height: int) -> int:
    """The lines a glance of `items` takes on a screen `height` rows tall: its title line and a
    line per item, at most a quarter of the screen, and at least the first item's line."""
    return 1 + max(1, min(items, height // 4 - 1))


def focused_height(height: int, taken: int) -> int:
    """The most lines the focused panel's row may take on a short screen `height` rows tall
    beside the `taken` lines of everything else at its least: half the screen, or less."""
    return max(EMPTY_HEIGHT, min(height // 2, height - taken))
