"""The Watchdog panel never hides a column without saying so: where its message gives way (80
columns), its bottom border says `more columns →`, as the Jobs panel's does."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixed_room import fixed_app
from pilot_waits import probed
from test_fit import drawn_lines, screen_lines


@pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 60)])
async def test_a_hidden_message_column_is_said(isolated_home: Path, size: tuple[int, int]) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("6")
        await pilot.pause()
        lines = drawn_lines(screen_lines(app), app.query_one("#findings-table"))
        subtitle = str(app.query_one("#watchdog").border_subtitle)
    whole = " message " in f" {lines[0]} " and not any(line.endswith("…") for line in lines)
    if not whole:
        assert "more columns →" in subtitle, (lines, subtitle)
    if size == (80, 24):
        assert not whole, lines
