"""At 120×35 and 200×60 no line of the main screen is cut mid-word: a table's columns fit its
panel (the trailing ones give way), a tree label or a line of text that does not fit ends
in `…`."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixed_room import FIGURES, fixed_app
from pilot_waits import probed
from textual.widgets import Static, Tree

from nvml_standin import GIB
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.whole_parts import WholeParts


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def drawn_lines(lines: list[str], widget) -> list[str]:
    """The widget's lines as the screen shows them, clipped by what contains it."""
    geometry = widget.screen._compositor.find_widget(widget)
    region = widget.content_region.intersection(geometry.clip)
    return [line[region.x:region.right].rstrip() for line in lines[region.y:region.bottom]]


def cut_mid_word(shown: str, full: str) -> bool:
    """A drawn line is a strict prefix of its full line that stops inside a word."""
    shown = shown.strip()
    if not shown or shown.endswith("…"):
        return False
    at = full.find(shown)
    if at < 0:
        return False
    after = full[at + len(shown):at + len(shown) + 1]
    return after not in ("", " ")


@pytest.mark.parametrize("size", [(120, 35), (200, 60)], ids=["120x35", "200x60"])
async def test_no_visible_line_is_cut_mid_word(isolated_home: Path, size: tuple[int, int]) -> None:
    app = fixed_app(isolated_home)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.pause()
        lines = screen_lines(app)
        for table in [t for t in app.screen.query(KeyedTable) if t.display]:
            assert table.virtual_size.width <= table.scrollable_content_region.width, table.id
            for column in table.columns:
                if 0 < column.width < column.whole:
                    label = column.label
                    if len(label) > column.width:
                        assert any(f"{label[:column.width - 1]}…" in line
                                   for line in drawn_lines(lines, table)), label
        for tree in app.screen.query(Tree):
            assert tree.virtual_size.width <= tree.scrollable_content_region.width
            labels = [str(line.node.label) for line in tree._tree_lines]
            for shown in drawn_lines(lines, tree):
                for full in labels:
                    assert not cut_mid_word(shown.lstrip("▼▶├└│─ "), full), shown
        for text in app.screen.query(Static):
            if not text.display or text.region.width == 0:
                continue
            full = str(text.content if isinstance(text.content, WholeParts) else text.render())
            for shown in drawn_lines(lines, text):
                for full_line in full.splitlines():
                    assert not cut_mid_word(shown, full_line), (shown, full_line)


async def test_the_host_card_title_and_memory_legend_are_one_line_each_at_120(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.pause()
        for part in (".host-name", ".memory-legend"):
            widget = app.query_one(part)
            assert widget.region.height == 1, part
            assert not str(widget.render()).endswith("…"), part


async def test_the_memory_legend_of_the_widest_figures_is_one_line_at_120(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Figures of five cells each ("12.3G") make the legend longer than the space under the
    bar at 120 columns: it starts at the card's edge rather than wrap, and stays whole."""
    for key, gib in (("used_outside_slice", 12.3), ("slice_used", 9.87),
                     ("not_yet_grown", 1.23), ("room", 62.4), ("machine_room", 62.4)):
        monkeypatch.setitem(FIGURES, key, int(gib * GIB))
    app = fixed_app(isolated_home)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.pause()
        widget = app.query_one(".memory-legend")
        shown = drawn_lines(screen_lines(app), widget)
        assert widget.region.height == 1, shown
    assert "▒ booked, not yet grown 1.23G  ░ room 62.4G  · not bookable" in shown[0], shown
