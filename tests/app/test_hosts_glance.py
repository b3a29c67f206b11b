"""On a short screen (100×30, 80×24: a tmux pane) the Hosts panel out of focus keeps its glance,
one line per host saying its headroom (threads free, memory room, GPU memory free), instead of
collapsing to its title line; the focused panel still shows what it holds and Jobs and Agents keep
their least height, all of it inside a screen that never scrolls; many peers take at most a
quarter of the screen, this host's line first. The Hosts panel focused (as the app starts) is
the whole card, as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from fixed_room import HOST, PEER, fixed_app
from pilot_waits import probed
from test_small_screen import drawn, inside

from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import PANELS

SHORT = [(100, 30), (80, 24)]
OTHERS = ["2", "3", "4", "5", "6", "7"]




def host_lines(app) -> list[str]:
    return [line for line in drawn(app, app.query_one("#hosts")).splitlines() if line.strip()]


@pytest.mark.parametrize("size", SHORT, ids=["100x30", "80x24"])
@pytest.mark.parametrize("key", OTHERS)
async def test_out_of_focus_the_hosts_panel_shows_each_hosts_headroom_on_a_line(
    isolated_home: Path, size: tuple[int, int], key: str,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press(key)
        await pilot.pause()
        screen = app.screen
        assert screen.max_scroll_y == 0 and not screen.show_vertical_scrollbar
        lines = host_lines(app)
        assert lines[0].startswith("─Hosts"), lines
        this, peer = lines[1], lines[2]
        assert HOST in this and "threads free 32/56" in this and "memory room 250G" in this
        assert "GPU free" in this, this
        assert PEER in peer and "threads free 24/28" in peer, peer
        assert len(lines) == 3, lines
        for panel_id in PANELS:
            panel = screen.query_one(f"#{panel_id}")
            assert inside(panel.region, screen.region), (panel_id, panel.region)
        assert screen.query_one("#middle").region.height >= 6
        focused = screen.query_one(f"#{PANELS[int(key) - 1]}")
        assert focused.region.height > 3, focused.region


@pytest.mark.parametrize("size", SHORT, ids=["100x30", "80x24"])
async def test_beside_the_glance_a_focused_panel_below_shows_all_it_holds(
    isolated_home: Path, size: tuple[int, int],
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("4")
        await pilot.pause()
        gpus = drawn(app, app.query_one("#gpus"))
        for said in ("GPU 0", "GPU 1", "no gpu-run holds the cards quiesced"):
            assert said in gpus, gpus
        await pilot.press("6")
        await pilot.pause()
        for table in app.query_one("#watchdog").query(KeyedTable):
            assert table.region.height >= table.row_count + 1, (table.id, table.region)


@pytest.mark.parametrize("size", SHORT, ids=["100x30", "80x24"])
async def test_focused_the_hosts_panel_is_the_whole_card(
    isolated_home: Path, size: tuple[int, int],
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("2", "1")
        await pilot.pause()
        shown = drawn(app, app.query_one("#hosts"))
        for said in ("cores ", "memory ", "history ", "outside the slice", PEER):
            assert said in shown, shown
        assert "GPU free" not in shown, "the GPUs panel says that when there is room"


@pytest.mark.parametrize("size", SHORT, ids=["100x30", "80x24"])
async def test_with_many_peers_the_glance_takes_a_quarter_of_the_screen_this_host_first(
    isolated_home: Path, size: tuple[int, int],
) -> None:
    app = fixed_app(isolated_home, watched=True)
    room = app.prober()
    peers = [dataclasses.replace(room.peers[0], name=f"gpu-box-{n}") for n in range(2, 12)]
    crowded = dataclasses.replace(room, peers=peers)
    app.prober = lambda: crowded
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("6")
        await pilot.pause()
        screen = app.screen
        assert screen.max_scroll_y == 0
        assert app.query_one("#hosts").region.height == size[1] // 4
        lines = host_lines(app)
        assert lines[1].startswith(f" {HOST}"), lines
        for panel_id in PANELS:
            panel = screen.query_one(f"#{panel_id}")
            assert inside(panel.region, screen.region), (panel_id, panel.region)
        assert screen.query_one("#middle").region.height >= 6
        assert screen.query_one("#watchdog").region.height > 3
