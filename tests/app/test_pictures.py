"""Pictures of the control room on fixed probe data (tests/app/fixed_room.py): the main screen
at 120×35 and 200×60, the short screens of a tmux pane (100×30, 80×24), each modal and each
detail view (a job's with its workload's peaks and its use over time, the host's with its
memory book over time), compared with the accepted SVGs under tests/app/__snapshots__
(`make snapshots` accepts new ones and copies the README's).

The approve modal, the migrate pane and the main screen once more at 200×60 are drawn on the
watched room (its findings, a pending kill request and a peer). `k`, `a` and `d` open no modal
(they act at once and say so in a notification), so they have no picture of their own."""

from __future__ import annotations

from contextlib import suppress
from functools import partial
from pathlib import Path

import pytest
from fixed_room import fix_trees, fixed_app
from pilot_waits import probed
from textual.widgets import Input
from textual.worker import WorkerCancelled


async def drawn(pilot, keys: list[str] | None = None) -> None:
    """Until the fixed room's first snapshot reached the panels, then the keys and whatever
    they started in a thread (a job's peaks, the launch preview): the picture is of all that."""
    await probed(pilot)
    fix_trees(pilot.app)
    if keys:
        await pilot.press(*keys)
    with suppress(WorkerCancelled):
        await pilot.app.workers.wait_for_complete()
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False  # the cursor drawn, not caught mid-blink
    await pilot.pause()


@pytest.mark.parametrize("size", [(120, 35), (200, 60)], ids=["120x35", "200x60"])
def test_main_screen(snap_compare, isolated_home: Path, size: tuple[int, int]) -> None:
    assert snap_compare(fixed_app(isolated_home), terminal_size=size, run_before=drawn)


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("help", ["question_mark"]),
        ("job_detail", ["2", "enter"]),
        ("agent_detail", ["3", "enter"]),
        ("rerun_modal", ["2", "down", "down", "down", "down", "r"]),
        ("release_lock_modal", ["5", "l"]),
        ("host_detail", ["1", "enter"]),
        ("launch_modal", ["n"]),
    ],
)
def test_views(snap_compare, isolated_home: Path, name: str, keys: list[str]) -> None:
    assert snap_compare(
        fixed_app(isolated_home), terminal_size=(120, 35), run_before=partial(drawn, keys=keys)
    )


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("approve_modal", ["6", "y"]),
        ("migrate_modal", ["2", "down", "m"]),
    ],
)
def test_watched_views(snap_compare, isolated_home: Path, name: str, keys: list[str]) -> None:
    assert snap_compare(
        fixed_app(isolated_home, watched=True), terminal_size=(120, 35),
        run_before=partial(drawn, keys=keys),
    )


@pytest.mark.parametrize("size", [(100, 30), (80, 24)], ids=["100x30", "80x24"])
def test_short_screen(snap_compare, isolated_home: Path, size: tuple[int, int]) -> None:
    """On a short screen with the Jobs panel focused, the watched room's Hosts panel is its
    glance (a line per host, its headroom first) and the panels below collapse to their titles."""
    assert snap_compare(fixed_app(isolated_home, watched=True), terminal_size=size,
                        run_before=partial(drawn, keys=["2"]))


def test_watched_main_screen(snap_compare, isolated_home: Path) -> None:
    """At 200×60 the watched room shows every panel full: the peer's card, the findings and the
    pending kill request beside the jobs, agents, GPUs, locks and alerts."""
    assert snap_compare(fixed_app(isolated_home, watched=True), terminal_size=(200, 60),
                        run_before=drawn)
