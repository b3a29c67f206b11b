"""The Hosts panel's busy-cores history is drawn on the scale 0..cores: a host always full
reads full, one always idle reads idle, half busy reads half."""

from __future__ import annotations

import pytest
from fixed_room import FIGURES
from test_bar import refreshes
from textual.app import App, ComposeResult
from textual.widgets import Label

from swarmdeck.app.bar import ScaledSparkline, StackedBar
from swarmdeck.app.hosts import HostCard
from swarmdeck.probes.host import HostSnapshot


class OneCard(App[None]):
    def compose(self) -> ComposeResult:
        yield HostCard("gpu-box-1", history_points=20, history_minutes=10)


async def drawn_history(busy_fraction: float) -> str:
    app = OneCard()
    async with app.run_test(size=(120, 10)) as pilot:
        card = app.query_one(HostCard)
        for _ in range(5):
            card.host = HostSnapshot.from_json({**FIGURES, "busy_fraction": busy_fraction})
            await pilot.pause()
        return str(card.query_one(".busy-history").render()).strip()


async def test_a_host_always_full_reads_full_and_always_idle_reads_idle() -> None:
    assert set(await drawn_history(1.0)) == {"▇"}
    assert set(await drawn_history(0.0)) == {"▁"}
    assert set(await drawn_history(0.5)) <= {"▄", "▅"}


async def test_a_host_whose_busy_cores_read_0_0_shows_no_busy_cell() -> None:
    """The bar draws the figure beside it: 0.04 of 2 cores reads "0.0" and fills no cell, at
    any width (at 160 columns one cell is 0.016 cores)."""
    app = OneCard()
    async with app.run_test(size=(160, 45)) as pilot:
        card = app.query_one(HostCard)
        card.host = HostSnapshot.from_json(
            {**FIGURES, "cores": 2, "busy_fraction": 0.02, "busy_cores": 0.04}
        )
        await pilot.pause()
        assert str(card.query_one(".cores-figures").render()).strip() == "0.0 of 2 cores busy"
        bar = str(card.query_one(".cores-bar").render())
        assert "█" not in bar and len(bar) > 100
        card.host = HostSnapshot.from_json(
            {**FIGURES, "cores": 2, "busy_fraction": 0.5, "busy_cores": 1.0}
        )
        await pilot.pause()
        bar = str(card.query_one(".cores-bar").render())
        assert bar.count("█") == len(bar) // 2


class LongHistoryCard(App[None]):
    def compose(self) -> ComposeResult:
        yield HostCard("gpu-box-1", history_points=300, history_minutes=10)


async def test_the_history_moves_a_column_per_run_of_readings_not_at_every_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A steady host: with more readings kept than columns, a reading that only adds to the
    newest column's run repaints nothing."""
    app = LongHistoryCard()
    async with app.run_test(size=(120, 10)) as pilot:
        card = app.query_one(HostCard)
        spark = card.query_one(ScaledSparkline)
        readings = (
            HostSnapshot.from_json({**FIGURES, "busy_fraction": 0.5, "taken_at": float(n)})
            for n in range(1000)
        )
        card.host = next(readings)
        await pilot.pause()
        per = -(-300 // spark.size.width)
        assert per >= 3
        asked = refreshes(monkeypatch, spark)
        for _ in range(per * 3):
            card.host = next(readings)
            await pilot.pause()
        assert len(asked) == 3
        assert len(str(spark.render()).strip()) == 4


async def test_busy_cores_moving_by_less_than_a_tenth_keep_the_figure_and_bar_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Other work's jitter: 3.00, 3.08, 3.03, 3.09 cores read "3.0" until a move of a tenth."""
    app = OneCard()
    async with app.run_test(size=(120, 10)) as pilot:
        card = app.query_one(HostCard)
        figures = card.query_one(".cores-figures", Label)

        async def reading(cores: float) -> str:
            card.host = HostSnapshot.from_json(
                {**FIGURES, "busy_fraction": cores / FIGURES["cores"], "taken_at": cores}
            )
            await pilot.pause()
            return str(figures.render()).strip()

        assert await reading(3.0) == "3.0 of 64 cores busy"
        asked = refreshes(monkeypatch, card.query_one(".cores-bar", StackedBar))
        for jitter in (3.08, 3.03, 3.09):
            assert await reading(jitter) == "3.0 of 64 cores busy"
        assert asked == []
        assert await reading(3.12) == "3.1 of 64 cores busy"
