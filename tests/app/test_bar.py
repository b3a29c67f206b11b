"""The bars and the sparkline repaint only when the line they draw changes: a reading that moves
a figure by less than a cell draws nothing."""

from __future__ import annotations

import itertools

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget

from swarmdeck.app.bar import (
    BarSegment,
    ScaledSparkline,
    StackedBar,
    fixed_column_bars,
    scaled_bars,
)


class Pictures(App[None]):
    def compose(self) -> ComposeResult:
        yield StackedBar(id="bar")
        yield ScaledSparkline(id="spark")


def refreshes(monkeypatch: pytest.MonkeyPatch, widget: Widget) -> list[object]:
    asked: list[object] = []
    refresh = widget.refresh

    def recorded(*regions, **kwargs):
        asked.append(regions)
        return refresh(*regions, **kwargs)

    monkeypatch.setattr(widget, "refresh", recorded)
    return asked


async def test_a_bar_repaints_only_when_a_segment_moves_by_a_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = Pictures()
    async with app.run_test(size=(50, 4)) as pilot:
        bar = app.query_one(StackedBar)
        bar.total = 64
        bar.segments = (BarSegment(0.31, "green", "busy"),)
        await pilot.pause()
        asked = refreshes(monkeypatch, bar)
        bar.segments = (BarSegment(0.32, "green", "busy"),)
        bar.total = 64
        await pilot.pause()
        assert asked == []
        bar.segments = (BarSegment(32, "green", "busy"),)
        await pilot.pause()
        assert asked
        assert bar.render().plain.count("█") == 25


async def test_a_sparkline_repaints_only_when_its_bars_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = Pictures()
    async with app.run_test(size=(50, 4)) as pilot:
        spark = app.query_one(ScaledSparkline)
        spark.top = 64
        spark.data = (0.1, 0.2)
        await pilot.pause()
        asked = refreshes(monkeypatch, spark)
        spark.data = (0.3, 0.1)
        await pilot.pause()
        assert asked == []
        spark.data = (0.3, 64.0)
        await pilot.pause()
        assert asked
        assert spark.render().plain == "▁▇"


async def test_a_redraw_builds_its_line_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The line built to compare with the last is the one drawn, not built again to draw."""
    app = Pictures()
    async with app.run_test(size=(50, 4)) as pilot:
        bar = app.query_one(StackedBar)
        bar.total = 64
        await pilot.pause()
        built: list[object] = []
        picture = bar.picture
        monkeypatch.setattr(bar, "picture", lambda: built.append(1) or picture())
        bar.segments = (BarSegment(32, "green", "busy"),)
        await pilot.pause()
        assert app.screen._compositor.render_strips()[0].text.count("█") == 25
        assert len(built) == 1


def test_a_sparkline_at_its_top_is_drawn_below_the_bars_used_glyph() -> None:
    """A full sparkline column is ▇: a bar's █ says memory in use, a sparkline never does."""
    assert scaled_bars([0.0, 4.0, 8.0], top=8, width=3) == "▁▄▇"
    assert fixed_column_bars([8.0, 9.0], top=8, width=10, span=10, seen=2) == "▇▇"


def test_fixed_columns_each_hold_a_run_of_readings_counted_from_the_first() -> None:
    """300 readings over 100 columns: three a column, the newest column still filling."""
    data = [0.0] * 7 + [8.0]
    assert fixed_column_bars(data, top=8, width=100, span=300, seen=8) == "▁▁▇"
    assert fixed_column_bars(data[:7], top=8, width=100, span=300, seen=7) == "▁▁▁"


def test_a_reading_that_does_not_start_a_column_leaves_the_line_as_it_was() -> None:
    """The kept readings shift at every reading; the columns move only at a run's start
    (here each run's readings are alike, so a filling column keeps its height)."""
    history = [float(n // 3 % 5) for n in range(400)]
    lines = [
        fixed_column_bars(history[seen - 300:seen], top=8, width=100, span=300, seen=seen)
        for seen in range(301, 400)
    ]
    changes = sum(1 for before, after in itertools.pairwise(lines) if before != after)
    assert all(len(line) == 100 for line in lines)
    assert changes <= len(lines) / 3 + 1


def test_fewer_readings_kept_than_columns_take_a_column_each() -> None:
    data = [0.0, 4.0, 8.0]
    assert fixed_column_bars(data, top=8, width=50, span=20, seen=3) == scaled_bars(data, 8, 50)
