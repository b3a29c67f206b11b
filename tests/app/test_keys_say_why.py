"""Every key the footer or help offers acts or says why not: the Watchdog's and Alerts' keys
pressed with another panel focused name the panel to select in first (read-only, they say
read-only), a finding's detail view acts on that finding with `a` and `k`, `enter` on an empty
panel says it is empty, and the command palette acts on the same selection the key would and
refuses the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixed_room import fixed_app
from pilot_waits import probed, until
from textual.command import CommandList, CommandPalette

from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.app.record_detail import AlertDetail, FindingDetail
from swarmdeck.config import load_config
from swarmdeck.state import StateStore


def notes(app: SwarmdeckApp) -> list[str]:
    return [n.message for n in app._notifications]


def kill_requests(store: StateStore) -> int:
    with store.read() as conn:
        return conn.execute("SELECT count(*) FROM kill_requests").fetchone()[0]


@pytest.mark.parametrize("panel", ["1", "2"])
@pytest.mark.parametrize("key", ["k", "y", "d", "a"])
async def test_a_watchdog_key_outside_its_panel_says_where_to_select(
    isolated_home: Path, panel: str, key: str,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        requests = kill_requests(app.store)
        await pilot.press(panel, key)
        await pilot.pause()
        said = notes(app)
        assert len(said) == 1 and said[0].startswith("select "), said
        assert "Watchdog panel (6)" in said[0], said
        assert kill_requests(app.store) == requests


@pytest.mark.parametrize("panel", ["1", "2", "3"])
@pytest.mark.parametrize("key", ["k", "y", "d", "a"])
async def test_under_readonly_a_watchdog_key_outside_its_panel_says_read_only(
    isolated_home: Path, panel: str, key: str,
) -> None:
    app = fixed_app(isolated_home, watched=True, readonly=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press(panel, key)
        await pilot.pause()
        said = notes(app)
        assert len(said) == 1 and said[0].startswith("read-only"), said


async def test_a_findings_detail_offers_and_acts_on_a_and_k(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("6", "down", "enter")
        screen = app.screen
        assert isinstance(screen, FindingDetail)
        offered = {key for key, active in screen.active_bindings.items()
                   if active.binding.show and active.enabled}
        assert {"a", "k"} <= offered, offered
        finding = screen.record_id
        await pilot.press("k")
        await pilot.pause()
        assert notes(app) == [f"finding {finding} (queued_while_peer_fits) names no process to"
                              " stop; act on it by hand"]
        await pilot.press("a")
        await pilot.pause()
        assert notes(app)[-1].startswith(f"finding {finding} acknowledged by "), notes(app)
        assert isinstance(app.screen, FindingDetail)


async def test_k_in_the_detail_of_a_finding_with_a_process_asks_for_that_ones_kill(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("6", "enter")
        assert isinstance(app.screen, FindingDetail)
        await pilot.press("k")
        await pilot.pause()
        # The room's pid 4343 is no process of this machine: the request for it is refused in
        # the line `kills --request` says, which names the finding the detail shows.
        assert notes(app) == ["finding 1's process (pid 4343) has already ended: nothing to stop"]


async def test_enter_on_an_empty_watchdog_panel_says_there_is_nothing_to_open() -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("6", "enter")
        await pilot.pause()
        assert notes(app) == ["nothing to open: no findings"]


async def palette(pilot, typed: str) -> None:
    """Open the command palette, type `typed` and run the first match."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await until(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette")
    await pilot.press(*typed)
    results = app.screen.query_one(CommandList)
    await until(pilot, lambda: results.option_count > 0, "a match")
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(app.screen, CommandPalette), "the palette gone")
    await pilot.pause()


async def test_the_palettes_kill_refuses_as_the_key_does_outside_the_watchdog(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("1")
        await palette(pilot, "request kill")
        await until(pilot, lambda: notes(app), "a note")
        await pilot.press("k")
        await until(pilot, lambda: len(notes(app)) == 2, "the key's note")
        said = notes(app)
        assert said[0] == said[1] and said[0].startswith("select "), said


async def test_the_palettes_kill_acts_on_the_finding_the_key_would(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("6", "down")
        await palette(pilot, "request kill")
        await until(pilot, lambda: notes(app), "a note")
        assert notes(app)[0].startswith("finding 2 (queued_while_peer_fits)"), notes(app)


async def test_an_alerts_detail_acknowledges_it_with_a(isolated_home: Path) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("7", "enter")
        screen = app.screen
        assert isinstance(screen, AlertDetail)
        await pilot.press("a")
        await pilot.pause()
        said = notes(app)
        # The fixed room's alert is drawn from its snapshot, not the state file: the key acts
        # on it, and the store says it is not open there.
        assert said == [f"alert {screen.record_id} is no longer open: nothing acknowledged"]
