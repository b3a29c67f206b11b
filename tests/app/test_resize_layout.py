"""Resizing the terminal lays the panels out as a fresh start at the new size would: a short
screen collapses (app/collapse.py) and a tall one opens every panel again, whichever way the
size went, so a tmux pane made smaller and then larger never keeps a layout meant for another
size."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixed_room import fixed_app
from pilot_waits import probed

from swarmdeck.app.main import PANELS, SwarmdeckApp

SIZES = [(120, 35), (100, 30), (80, 24), (200, 60)]


def layout(app) -> dict[str, tuple[int, int]]:
    """Each panel's top row and height on the main screen."""
    screen = app.screen_stack[0]
    return {
        panel_id: (screen.query_one(f"#{panel_id}").region.y,
                   screen.query_one(f"#{panel_id}").region.height)
        for panel_id in PANELS
    }


def room_in(home: Path, monkeypatch: pytest.MonkeyPatch) -> SwarmdeckApp:
    """The watched fixed room with its own state and config in `home`."""
    home.mkdir()
    (home / "config.toml").touch()
    monkeypatch.setenv("SWARMDECK_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("SWARMDECK_CONFIG", str(home / "config.toml"))
    return fixed_app(home, watched=True)


FRESH: dict[tuple[tuple[int, int], str | None], dict[str, tuple[int, int]]] = {}
"""Each (size, focus key)'s fresh layout, once: the fixed room is the same in every test."""


async def fresh_layout(
    home: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], key: str | None,
) -> dict[str, tuple[int, int]]:
    if (size, key) in FRESH:
        return FRESH[size, key]
    app = room_in(home, monkeypatch)
    async with app.run_test(size=size) as pilot:
        await probed(pilot, 2)
        if key:
            await pilot.press(key)
        await pilot.pause()
        FRESH[size, key] = layout(app)
    return FRESH[size, key]


@pytest.mark.parametrize("key", [None, "2", "5", "6"])
@pytest.mark.parametrize("start", [0, 1])
async def test_resizing_lays_out_as_a_fresh_start_at_each_size(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, start: int, key: str | None,
) -> None:
    sizes = SIZES[start:]
    expected = [await fresh_layout(isolated_home / f"fresh{n}", monkeypatch, size, key)
                for n, size in enumerate(sizes)]
    app = room_in(isolated_home / "resized", monkeypatch)
    async with app.run_test(size=sizes[0]) as pilot:
        await probed(pilot, 2)
        if key:
            await pilot.press(key)
        for size, wanted in zip(sizes, expected, strict=True):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            await probed(pilot)
            await pilot.pause()
            assert layout(app) == wanted, size
