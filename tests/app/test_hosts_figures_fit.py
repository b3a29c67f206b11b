"""The figures beside a host card's bars are said whole at every screen size: "room 21.5G of
the 21.5G slice" was cut to its first 24 cells at every width (the card's figures column)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixed_room import fixed_app
from pilot_waits import probed, until
from textual.widgets import Label

from swarmdeck.app.hosts import HostCard, cores_figures, room_figures
from swarmdeck.sizes import MIB

SIZES = [(80, 24), (100, 30), (120, 35), (160, 45), (200, 60)]
WIDEST_SIZE = int(1.23 * 1024 * MIB)
"""A size whose text is as long as any ("1.23G"; SHORT_SIZE_WIDTH)."""


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_a_host_cards_figures_are_never_cut(
    isolated_home: Path, size: tuple[int, int]
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("1")  # the Hosts panel in focus: opened on a short screen too
        card = app.query_one(HostCard)
        figures = card.query_one(".memory-figures", Label)
        await until(pilot, lambda: "room" in str(figures.render()), "the card's room figures")
        await pilot.pause()
        shown = {
            " ".join(label.classes): (str(label.render()), label.region.width)
            for label in card.query(".bar-figures").results(Label)
        }
    widest = {
        "memory": room_figures(WIDEST_SIZE, WIDEST_SIZE),
        "cores": cores_figures(99.9, 1024),
    }
    for classes, (text, width) in shown.items():
        assert width >= len(text), f"{classes}: {text!r} in {width} cells"
        which = next((name for name in widest if name in classes), None)
        if which is not None:
            assert width >= len(widest[which]), f"{widest[which]!r} in {width} cells"
