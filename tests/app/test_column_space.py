"""At 120×35 the table panels spend their width on what matters: the Locks panel shows the
path (what is locked), and in the Jobs panel a long label is cut before the state or the
memory figures (current, peak) give way, and in the Alerts panel a long message is cut before its
count and age."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fixed_room import fixed_app
from pilot_waits import probed
from test_fit import drawn_lines, screen_lines

LONG_LABEL = "integration suite for the whole monorepo with coverage and the slow markers"


async def test_the_locks_panel_at_120_shows_what_is_locked(isolated_home: Path) -> None:
    app = fixed_app(isolated_home)
    [held] = app.prober().locks
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        shown = drawn_lines(screen_lines(app), app.query_one("#locks-table"))
    assert "path" in shown[0].split(), shown
    assert any(str(held.path) in line for line in shown[1:]), shown


async def test_a_long_label_is_cut_before_the_memory_figures_give_way(isolated_home: Path) -> None:
    app = fixed_app(isolated_home)
    room = app.prober()
    first = dataclasses.replace(room.jobs[0], label=LONG_LABEL)
    app.prober = lambda: dataclasses.replace(room, jobs=[first, *room.jobs[1:]])
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        shown = drawn_lines(screen_lines(app), app.query_one("#jobs-table"))
    header = shown[0].split()
    assert {"booked", "peak", "cap", "runtime"} <= set(header), shown
    assert any(line.strip().startswith("integration") and "…" in line
               for line in shown[1:]), shown


async def test_a_long_state_is_drawn_whole_beside_long_labels(isolated_home: Path) -> None:
    """How a job stands is what its row is for: the labels yield to it, it is never cut."""
    app = fixed_app(isolated_home)
    room = app.prober()
    states = {7: {"runner_alive": False},
              4: {"state": "moved", "outcome": "moved to gpu-box-2 (job 17)"}}
    jobs = [dataclasses.replace(job, label=LONG_LABEL, **states.get(job.id, {}))
            for job in room.jobs]
    app.prober = lambda: dataclasses.replace(room, jobs=jobs)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        shown = drawn_lines(screen_lines(app), app.query_one("#jobs-table"))
    assert any("running, runner gone" in line for line in shown[1:]), shown
    assert any("moved to gpu-box-2 (job 17)" in line for line in shown[1:]), shown
    # Every row has the same label, so each starts with its job's id.
    assert all(line.split()[0].startswith("#") and line.split()[1].endswith("…")
               for line in shown[1:] if line), shown


async def test_a_long_alert_message_is_cut_before_its_count_and_age(isolated_home: Path) -> None:
    app = fixed_app(isolated_home)
    room = app.prober()
    long = dataclasses.replace(room.alerts[0], message=LONG_LABEL + ": " + LONG_LABEL)
    app.prober = lambda: dataclasses.replace(room, alerts=[long])
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        shown = drawn_lines(screen_lines(app), app.query_one("#alerts-table"))
    assert {"×", "age"} <= set(shown[0].split()), shown
    assert any("integration suite" in line and "…" in line for line in shown[1:]), shown


async def test_a_column_that_grows_after_the_table_was_fitted_still_fits(
    isolated_home: Path,
) -> None:
    """Cutting a column must not make the table believe its cells are that narrow: a peak that
    reaches its ceiling later is drawn whole, the labels cut further for it."""
    app = fixed_app(isolated_home)
    room = app.prober()
    labelled = [dataclasses.replace(job, label=LONG_LABEL, peak=None) for job in room.jobs]
    grown = [dataclasses.replace(job, peak=160 << 20, hit_ceiling=True) for job in labelled]
    rounds = iter(range(1_000_000))
    app.prober = lambda: dataclasses.replace(
        room, jobs=labelled if next(rounds) < 3 else grown
    )
    async with app.run_test(size=(112, 30)) as pilot:
        await probed(pilot, rounds=6)
        shown = drawn_lines(screen_lines(app), app.query_one("#jobs-table"))
    assert {"booked", "peak", "cap"} <= set(shown[0].split()), shown
    assert any("160M ▲" in line for line in shown[1:]), shown


LONG_SUBJECT = ("session 180d292f: Bash until test -f /work/build/done.flag; do sleep 5; done"
                " # wait for the build")
LONG_MESSAGE = ("one Bash call has run for 13m45s (over 8m): the wait loop has no timeout and"
                " nothing in the background will end it")


async def test_a_long_finding_subject_is_cut_before_its_message(isolated_home: Path) -> None:
    """What the rule saw is what a person reads a finding for: at 160×45 the subject yields
    to it, so the message shows its first sixty characters whole."""
    app = fixed_app(isolated_home, watched=True)
    room = app.prober()
    long = dataclasses.replace(room.findings[0], subject=LONG_SUBJECT, message=LONG_MESSAGE)
    app.prober = lambda: dataclasses.replace(room, findings=[long, *room.findings[1:]])
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot)
        shown = drawn_lines(screen_lines(app), app.query_one("#findings-table"))
    [line] = [line for line in shown[1:] if "session 180d292f" in line]
    assert LONG_MESSAGE[:60] in line, line
    assert "…" in line.split(LONG_MESSAGE[:20])[0], line


async def test_the_watchdog_panel_shows_no_count_of_passes(isolated_home: Path) -> None:
    """A count that rises once a pass reads as that many occurrences: the age says how long."""
    app = fixed_app(isolated_home, watched=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await probed(pilot)
        shown = drawn_lines(screen_lines(app), app.query_one("#findings-table"))
    header = shown[0].split()
    assert "age" in header and "×" not in header, shown
