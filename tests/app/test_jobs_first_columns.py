"""The Jobs panel puts the numbers a memory tool is about first at every width (label, state,
booked, peak, cap, runtime), keeps its columns where they are when a job's state changes, and
tells apart rows whose labels are the same by their job ids."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from fixed_room import fixed_app, job
from pilot_waits import probed
from test_fit import drawn_lines, screen_lines

FIRST = ["label", "state", "booked", "peak", "cap", "runtime"]


def _lines(app) -> list[str]:
    return drawn_lines(screen_lines(app), app.query_one("#jobs-table"))


def _starts(header: str) -> dict[str, int]:
    """Where each of the first columns' labels starts in the header."""
    padded = f" {header} "
    return {label: padded.index(f" {label} ") for label in FIRST if f" {label} " in padded}


SIZES = [(80, 24), (100, 30), (120, 35), (200, 60)]


def _hint(app) -> str:
    return str(app.query_one("#jobs").border_subtitle)


@pytest.mark.parametrize("size", SIZES)
async def test_the_memory_figures_come_first_at_every_width(
    isolated_home: Path, size: tuple[int, int]
) -> None:
    app = fixed_app(isolated_home)
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("2")
        await pilot.pause()
        header = _lines(app)[0]
    starts = _starts(header)
    assert list(starts) == FIRST, header
    assert sorted(starts, key=starts.__getitem__) == FIRST, header


async def test_at_80x24_as_many_first_figures_as_fit_and_the_hint(isolated_home: Path) -> None:
    """Before the Jobs panel is focused (it widens then), 80 columns leave it under fifty: the
    columns it draws are the first ones, in order, and its border says more are to the right."""
    app = fixed_app(isolated_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await probed(pilot)
        await pilot.pause()
        starts = _starts(_lines(app)[0])
        hint = _hint(app)
    assert list(starts) == FIRST[:len(starts)] and len(starts) >= 3, starts
    assert hint.endswith("more columns →"), hint


@pytest.mark.parametrize(
    ("code", "outcome", "shown"),
    [(254, "slice full", "slice full 254"), (254, "slice full, over booking", "slice full 254"),
     (137, "killed by SIGKILL", "SIGKILL 137"),
     (143, "stopped: runner got SIGTERM", "stopped 143")],
)
@pytest.mark.parametrize("size", SIZES)
async def test_the_columns_stay_put_when_a_job_ends(
    isolated_home: Path, size: tuple[int, int], code: int, outcome: str, shown: str
) -> None:
    """The running job ends (killed as the slice filled, past its booking too; by a signal; its
    runner stopped): its state grows from `running` to its outcome in brief, and no column
    after it moves."""
    app = fixed_app(isolated_home)
    room = app.prober()
    async with app.run_test(size=size) as pilot:
        await probed(pilot)
        await pilot.press("2")
        await pilot.pause()
        before = _starts(_lines(app)[0])
        ended = [
            dataclasses.replace(j, state="done", exit_code=code, outcome=outcome,
                                ended_at=room.taken_at, current=None)
            if j.state == "running" else j
            for j in room.jobs
        ]
        app.prober = lambda: dataclasses.replace(room, jobs=ended)
        await probed(pilot)
        await pilot.pause()
        lines = _lines(app)
        assert any(f" {shown} " in f"{line} " for line in lines), lines
        assert _starts(lines[0]) == before, (before, lines[0])


async def test_rows_of_the_same_label_are_told_apart_by_their_ids(isolated_home: Path) -> None:
    app = fixed_app(isolated_home)
    room = app.prober()
    again = [job(20 + n, "grows", "done", room.taken_at) for n in range(3)]
    app.prober = lambda: dataclasses.replace(room, jobs=[*room.jobs, *again])
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2")
        await pilot.pause()
        lines = _lines(app)
    for n in range(3):
        assert any(line.strip().startswith(f"#{20 + n} grows") for line in lines), lines
    assert not any(line.strip().startswith("#4 cargo build") for line in lines), lines
