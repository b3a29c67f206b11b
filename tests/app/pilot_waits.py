"""Waiting in Pilot tests on what the app does, never on the clock: the probe thread's next
snapshots to be drawn, or a condition on the screen."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot

from swarmdeck.app.launch import LaunchScreen
from swarmdeck.app.main import SwarmdeckApp
from waiting import DEADLINE, STEP, pilot_wait_for


async def probed(pilot: Pilot, rounds: int = 1) -> None:
    """Until `rounds` more snapshots than now have been taken and handed to the panels; the
    probe thread is asked for each at once, whatever the refresh interval."""
    app = pilot.app
    assert isinstance(app, SwarmdeckApp)
    wanted = app.snapshots_taken + rounds
    deadline = time.monotonic() + DEADLINE
    while app.snapshots_taken < wanted:
        if time.monotonic() > deadline:
            raise AssertionError(f"the app took {app.snapshots_taken} snapshots, not {wanted}")
        app.probe()
        await pilot.pause(STEP)
    await pilot.pause()


async def until(pilot: Pilot, predicate: Callable[[], object], what: str = "it") -> None:
    """Until `predicate()` is true, letting the app run between looks (tests/waiting.py)."""
    await pilot_wait_for(pilot, predicate, seen=lambda: f"the screen never showed {what}")


async def launch_form(pilot: Pilot) -> LaunchScreen:
    """`n` once a snapshot is drawn: the launch form it opens."""
    await probed(pilot)
    await pilot.press("n")
    screen = pilot.app.screen
    assert isinstance(screen, LaunchScreen)
    return screen
