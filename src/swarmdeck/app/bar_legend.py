"""The glyphs of every bar the control room draws and what each one means: one legend, one home.

A glyph that meant one thing on a host's memory bar and another on a job's would have a person
read a job's learned peak as memory used outside the slice. So every bar drawer takes its
glyphs from here, each glyph has one meaning on every bar, and the help screen's "Bars" section
is written from this same legend. Each bar's glyphs are also different from a sparkline's
heights (app/bar.py), whose full height is ▇, never █.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mark:
    """One glyph of the bars, with its colour and what it stands for."""

    glyph: str
    style: str
    """The Rich style of its stretch; the glyph alone tells it apart, without colour."""
    meaning: str
    """What it stands for, on every bar that draws it (the help says it in these words)."""


IN_USE = Mark(
    "█", "bold cyan",
    "in use: on a host's memory bar what swarmdeck's caged jobs hold (inside its slice), on a "
    "job's bar what the job holds now; busy cores; a GPU's memory in use",
)
OUTSIDE = Mark(
    "▓", "bold yellow",
    "memory in use outside the swarmdeck slice: everything on the host that is not a caged "
    "job (all the memory in use, where the host has no slice to read)",
)
BOOKED = Mark(
    "▒", "blue",
    "booked, not yet grown: set aside by admission beyond what is in use (a host's jobs' "
    "bookings, a job's booking above its peak)",
)
PEAK = Mark("▔", "yellow", "a job's learned peak, above what it holds now")
FREE = Mark(
    "░", "green",
    "free: a host's room for a new booking; a job's cap beyond its booking; idle cores",
)
NOT_BOOKABLE = Mark(
    "·", "dim",
    "a host's memory the book does not offer to jobs (its reserve, and the margin kept free)",
)

MARKS = (IN_USE, OUTSIDE, BOOKED, PEAK, FREE, NOT_BOOKABLE)
"""Every glyph the bars draw, in the order the help lists them."""

HOST_MEMORY = (OUTSIDE, IN_USE, BOOKED, FREE)
"""A host's memory bar, in MemoryBook.bar() order: used outside the slice, slice used, booked
not yet grown, room; past them, NOT_BOOKABLE."""
JOB_MEMORY = (IN_USE, PEAK, BOOKED)
"""A job's memory bar over its cap: now, its peak beyond now, its booking beyond its peak;
past them, FREE."""

SPARKLINE = (
    "▁…▇",
    "a sparkline: a history on a fixed scale, the newest at the right; full height is ▇, "
    "never the bars' █",
)
"""The help's line for the sparklines, beside the bars' glyphs."""
