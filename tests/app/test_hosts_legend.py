"""The memory legend under a host's bar keeps its lines while its figures change: a figure going
from 0B to 1.23G moves no entry to another line, so a refresh repaints the legend's figures
and never lays the screen out again."""

from __future__ import annotations

import pytest

from swarmdeck.app.bar import BarSegment
from swarmdeck.app.hosts import REST_NAME, legend
from swarmdeck.sizes import MIB

NAMES = ("outside the slice", "slice used", "booked, not yet grown", "room")


def segments(value: int) -> tuple[BarSegment, ...]:
    return tuple(BarSegment(value, "", name) for name in NAMES)


@pytest.mark.parametrize("width", range(20, 121, 3))
def test_the_legend_wraps_at_the_same_entries_whatever_its_figures(width: int) -> None:
    small = [line.plain.split("  ") for line in legend(segments(0), REST_NAME).lines(width)]
    large = [
        line.plain.split("  ")
        for line in legend(segments(int(1.23 * 1024 * MIB)), REST_NAME).lines(width)
    ]
    assert [len(line) for line in small] == [len(line) for line in large]
