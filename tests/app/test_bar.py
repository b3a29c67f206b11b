"""The bars and the sparkline repaint only when the line they draw changes: a reading that moves
a figure by less than a cell draws nothing."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget

from swarmdeck.app.bar import BarSegment, ScaledSparkline, StackedBar


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
        assert spark.render().plain == "▁█"
