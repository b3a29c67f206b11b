"""Waiting in Pilot tests on what the app does, never on the clock: the probe worker to finish
and its snapshot to be drawn, or a condition on the screen."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

from textual.pilot import Pilot
from textual.worker import WorkerCancelled

from swarmdeck.app.main import SwarmdeckApp
from waiting import pilot_wait_for

ROUNDS = 200


async def probed(pilot: Pilot, rounds: int = 1) -> None:
    """Until `rounds` more snapshots than now have been taken and handed to the panels."""
    app = pilot.app
    assert isinstance(app, SwarmdeckApp)
    wanted = app.snapshots_taken + rounds
    for _ in range(ROUNDS):
        if app.snapshots_taken >= wanted:
            await pilot.pause()
            return
        workers = [worker for worker in app.workers if worker.group == "probe"]
        if not workers:
            app.probe()
            continue
        with suppress(WorkerCancelled):  # a newer probe took its place: wait for that one
            await app.workers.wait_for_complete(workers)
        await pilot.pause()
    raise AssertionError(f"the app took {app.snapshots_taken} snapshots, not {wanted}")


async def until(pilot: Pilot, predicate: Callable[[], object], what: str = "it") -> None:
    """Until `predicate()` is true, letting the app run between looks (tests/waiting.py)."""
    await pilot_wait_for(pilot, predicate, seen=lambda: f"the screen never showed {what}")
