"""A job run on a peer reads apart from one run here: its state says where it runs, and its
memory figures, read on the peer and not here, say so instead of a bare dash."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import fixed_room
import pytest
from fixed_room import PEER, fixed_app
from pilot_waits import probed

from swarmdeck.app.jobs import ON_PEER, panel_cells
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.views.jobs import PANEL_COLUMNS

PEER_JOB = 8


def with_a_peer_job(monkeypatch: pytest.MonkeyPatch) -> None:
    original = fixed_room.fixed_snapshot

    def room(store, *, watched: bool = False):
        snapshot = original(store, watched=watched)
        local = next(job for job in snapshot.jobs if job.state == "running")
        peer = dataclasses.replace(local, id=PEER_JOB, host=PEER, current=None, peak=None,
                                   pid=None, usage=None)
        return dataclasses.replace(snapshot, jobs=[*snapshot.jobs, peer])

    monkeypatch.setattr(fixed_room, "fixed_snapshot", room)


@pytest.mark.parametrize("size", [(80, 24), (120, 35)], ids=["80x24", "120x35"])
async def test_a_peer_job_says_where_it_runs_and_a_local_one_does_not(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int],
) -> None:
    with_a_peer_job(monkeypatch)
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#jobs-table", KeyedTable)
        keys = [key for key, _ in PANEL_COLUMNS]
        peer = dict(zip(keys, map(str, table.get_row(str(PEER_JOB))), strict=True))
        local = dict(zip(keys, map(str, table.get_row("7")), strict=True))
        assert peer["state"] == f"running on {PEER}" and local["state"] == "running"
        assert peer["current"] == peer["peak"] == ON_PEER
        lines = [strip.text for strip in app.screen._compositor.render_strips()]
        region = table.region
        shown = [line[region.x:region.right] for line in lines[region.y:region.bottom]]
        assert any(f"running on {PEER}" in line for line in shown), shown


def test_every_job_here_reads_as_before() -> None:
    now = time.time()
    for job in fixed_room.jobs(now):
        cells = panel_cells(job, now, fixed_room.HOST)
        assert ON_PEER not in map(str, cells.values()) and " on " not in str(cells["state"])
