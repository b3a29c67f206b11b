"""At 80×24, the size of a tmux pane beside an editor, the control room fits: the screen never
scrolls, every panel lies inside it with its scrollbars inside its borders, the focused panel's
row opens while the others collapse to their title line (the Hosts panel to its glance, a line per
host: tests/app/test_hosts_glance.py; in an idle room the empty ones open as far as they fit),
no text is cut mid-word (the memory
legend wraps by whole entries, the footer shows whole key labels), and the launch form keeps
its buttons on screen however much it says."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fixed_room import fixed_app
from pilot_waits import probed, until
from textual import errors
from textual.app import App
from textual.geometry import Region
from textual.widgets import Button, Footer, Tree

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.launch import LaunchScreen
from swarmdeck.app.main import PANELS, SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.state import StateStore

SMALL = (80, 24)


@asynccontextmanager
async def focused_at_80x24(isolated_home: Path, key: str) -> AsyncIterator[App]:
    """The watched fixed room at 80x24, probed once, with `key` pressed (a panel focused)."""
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=SMALL) as pilot:
        await probed(pilot)
        await pilot.press(key)
        await pilot.pause()
        yield app


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def drawn(app, widget) -> str:
    """What the screen shows in the widget's region."""
    region = widget.region
    lines = screen_lines(app)[region.y:region.bottom]
    return "\n".join(line[region.x:region.right] for line in lines)


def visible(widget) -> Region:
    """The part of the widget's region the screen draws (what contains it clips the rest)."""
    try:
        geometry = widget.screen._compositor.find_widget(widget)
    except errors.NoWidget:
        return Region()
    return widget.region.intersection(geometry.clip)


def inside(inner, outer) -> bool:
    return (outer.x <= inner.x and inner.right <= outer.right
            and outer.y <= inner.y and inner.bottom <= outer.bottom)


@pytest.mark.parametrize("key", ["1", "2", "3", "4", "5", "6", "7"])
async def test_at_80x24_every_panel_is_inside_the_screen_whichever_is_focused(
    isolated_home: Path, key: str,
) -> None:
    async with focused_at_80x24(isolated_home, key) as app:
        screen = app.screen
        assert screen.max_scroll_y == 0 and not screen.show_vertical_scrollbar
        for panel_id in PANELS:
            panel = screen.query_one(f"#{panel_id}")
            assert inside(panel.region, screen.region), (panel_id, panel.region)
            assert panel.region.height >= 1, panel_id
            for part in panel.query("*"):
                shown = visible(part)
                if part.display and shown.area:
                    assert inside(shown, panel.region), (panel_id, part)
        focused = screen.query_one(f"#{PANELS[int(key) - 1]}")
        assert focused.region.height > 3, focused.region


async def test_at_80x24_an_idle_room_shows_what_each_empty_panel_says(
    isolated_home: Path,
) -> None:
    """With no job and no session (a first look), the panels below Jobs and Agents, each
    empty, show what they found ("no findings") rather than collapse to a title line under a
    screen of blank rows, top down as far as they fit beside that row at its least height;
    all of it inside the screen."""
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=SMALL) as pilot:
        await probed(pilot)
        screen = app.screen
        await until(pilot, lambda: not app.query_one("#gpus").has_class("-collapsed")
                    and screen.max_scroll_y == 0, "the empty panels open, and fit")
        for panel_id in PANELS:
            panel = screen.query_one(f"#{panel_id}")
            assert inside(panel.region, screen.region), (panel_id, panel.region)
        assert screen.query_one("#jobs").region.height >= 6
        opened = [p for p in ("gpus", "locks", "watchdog", "alerts")
                  if not screen.query_one(f"#{p}").has_class("-collapsed")]
        assert opened[:3] == ["gpus", "locks", "watchdog"], opened
        for panel_id in opened:
            panel = screen.query_one(f"#{panel_id}")
            assert panel.has_class("-empty") and panel.region.height == 3, panel_id
            said = str(panel.query_one(".empty").render()).strip()[:12]
            assert said and said in drawn(app, panel), panel_id
        await pilot.press("5")
        await pilot.pause()
        assert app.query_one("#alerts").has_class("-collapsed"), "a panel below has the focus"
        await pilot.press("1")
        await until(pilot, lambda: not app.query_one("#gpus").has_class("-collapsed"),
                    "the empty panels open again under the card")
        assert inside(screen.query_one("#watchdog").region, screen.region)


async def test_at_80x24_the_collapsed_panels_keep_their_title_line(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=SMALL) as pilot:
        await probed(pilot)
        await pilot.press("6")
        await pilot.pause()
        for panel_id in ("hosts", "gpus", "locks", "alerts"):
            panel = app.screen.query_one(f"#{panel_id}")
            assert panel.region.height == (3 if panel_id == "hosts" else 1), panel_id
            assert str(panel.border_title) in drawn(app, panel), panel_id


async def test_at_80x24_a_collapsed_panel_says_how_many_items_it_holds(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=SMALL) as pilot:
        await probed(pilot)
        await pilot.pause()
        lines = screen_lines(app)
        assert any("Watchdog · 2 open, 1 kill request" in line for line in lines), lines
        assert any("Alerts · 1" in line for line in lines), lines
        await pilot.press("7")
        await pilot.pause()
        assert app.query_one("#alerts").border_title == "Alerts"


@pytest.mark.parametrize(("key", "table"), [("2", "jobs-table"), ("6", "findings-table")])
async def test_at_80x24_a_focused_table_shows_every_row_the_fixed_room_has(
    isolated_home: Path, key: str, table: str,
) -> None:
    async with focused_at_80x24(isolated_home, key) as app:
        shown = app.screen.query_one(f"#{table}", KeyedTable)
        assert shown.region.height >= shown.row_count + 1, (shown.region, shown.row_count)


async def test_at_80x24_the_agents_tree_shows_the_session_and_its_subagents(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=SMALL) as pilot:
        await probed(pilot)
        await pilot.press("3")
        await pilot.pause()
        tree = app.screen.query_one("#agents").query_one(Tree)
        assert tree.region.height >= 4, tree.region
        assert "Write the docs" in drawn(app, tree)


async def test_at_80x24_the_memory_legend_names_every_part_by_whole_words(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home)
    async with app.run_test(size=SMALL) as pilot:
        await probed(pilot)
        await pilot.pause()
        legend = drawn(app, app.query_one(".memory-legend"))
        words = " ".join(legend.split())
        for part in ("outside the slice 62G", "slice used 150G",
                     "booked, not yet grown 40G", "room 250G", "not bookable"):
            assert part in words, legend
        for line in legend.splitlines():
            assert "…" not in line, legend


async def test_at_80x24_the_host_lines_end_on_a_whole_figure(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=SMALL) as pilot:
        await probed(pilot)
        await pilot.pause()
        hosts = drawn(app, app.query_one("#hosts"))
        for line in hosts.splitlines():
            assert "avai…" not in line and "availab…" not in line, hosts
        assert "threads free 32/56" in hosts


@pytest.mark.parametrize("key", ["1", "2", "6", "7"])
async def test_at_80_columns_the_footer_shows_whole_key_labels(
    isolated_home: Path, key: str,
) -> None:
    async with focused_at_80x24(isolated_home, key) as app:
        footer = app.screen.query_one(Footer)
        shown = [k for k in footer.query("FooterKey") if k.display and k.region.width]
        assert any(k.key == "question_mark" for k in shown)
        for footer_key in shown:
            assert inside(footer_key.region, footer.region), footer_key.description
        regions = sorted((k.region for k in shown), key=lambda r: r.x)
        for left, right in itertools.pairwise(regions):
            assert left.right <= right.x, (left, right)


async def test_at_80x24_the_launch_form_keeps_its_buttons_on_screen(isolated_home: Path) -> None:
    app = fixed_app(isolated_home)
    async with app.run_test(size=SMALL) as pilot:
        await probed(pilot)
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the launch form")
        await pilot.press(*"pytest -n 8 tests")
        await until(pilot, lambda: not app.screen.query_one("#do", Button).disabled,
                    "the preview of the typed command")
        await pilot.pause()
        for button in app.screen.query(Button):
            assert inside(button.region, app.screen.region), button.label
            assert str(button.label) in drawn(app, button), button.label
