"""At 80×24 the Hosts panel shows every host: a peer's line is on screen next to this host's
card, and with more peers than the panel has rows the chosen one is scrolled into sight."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import fixed_room
import pytest
from fixed_room import PEER, fixed_app
from pilot_waits import probed, until

from swarmdeck.app.hosts import HostsPanel, PeerCard
from swarmdeck.app.main import SwarmdeckApp


def hosts_lines(app: SwarmdeckApp) -> list[str]:
    """The rows the Hosts panel draws on screen, as the terminal shows them."""
    panel = app.query_one(HostsPanel).region
    lines = [strip.text for strip in app.screen._compositor.render_strips()]
    return [line[panel.x:panel.right] for line in lines[panel.y:panel.bottom]]


async def test_at_80x24_the_peers_line_is_on_screen_beside_this_hosts_card(
    isolated_home: Path,
) -> None:
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await probed(pilot)
        await until(pilot, lambda: app.query(PeerCard), "the peer's card")
        await pilot.pause()
        shown = "\n".join(hosts_lines(app))
        assert fixed_room.HOST in shown and f"{PEER}   " in shown, shown
        assert app.query_one(PeerCard).region.height == 1


async def test_with_more_peers_than_rows_the_chosen_one_is_scrolled_into_sight(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = fixed_room.fixed_snapshot

    def crowded(store, *, watched: bool = False):
        room = original(store, watched=watched)
        extra = [dataclasses.replace(room.peers[0], name=f"{PEER}-{n}") for n in range(1, 5)]
        return dataclasses.replace(room, peers=[*room.peers, *extra])

    monkeypatch.setattr(fixed_room, "fixed_snapshot", crowded)
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await probed(pilot)
        await until(pilot, lambda: len(app.query(PeerCard)) == 5, "every peer's card")
        await pilot.press("1")
        for n in range(1, 6):
            await pilot.press("down")
            name = PEER if n == 1 else f"{PEER}-{n - 1}"
            await until(
                pilot, lambda name=name: any(f"{name}   " in line for line in hosts_lines(app)),
                f"{name} on screen once chosen",
            )
        await pilot.press("down")
        await until(
            pilot, lambda: any(fixed_room.HOST in line for line in hosts_lines(app)),
            "this host on screen once chosen again",
        )
