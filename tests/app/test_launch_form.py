"""The `n` form as a person uses it: its fit follows the memory book while it is open, Enter
walks the fields to Launch without launching from a half-filled form, and its unbounded switch
sets the cap aside as the runner wants it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_waits import launch_form, probed, until
from textual.widgets import Button, Input, Switch

from ledger_rows import add_job
from swarmdeck.app.launch import FIELDS, LaunchScreen, request_from
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.errors import SwarmdeckError
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.sizes import format_size
from swarmdeck.state import StateStore

MIB = 1 << 20


def fits_line(app: SwarmdeckApp) -> str:
    book = app.snapshot.book_of(app.snapshot.hosts[0].name) if app.snapshot else None
    assert book is not None
    return f"fits now: room {format_size(max(0, book.usable))}"


async def test_the_fit_follows_the_book_while_the_form_is_open(
    caged: Path, isolated_home: Path
) -> None:
    """A booking made after the form opened shows in its room at the next snapshot, with
    nothing retyped: the form says what launching does now, not when it was opened."""
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        preview = screen.query_one("#launch-preview")
        screen.query_one("#launch-command", Input).value = "true"
        screen.query_one("#launch-cap", Input).value = "8M"
        before = fits_line(app)
        await until(pilot, lambda: before in str(preview.render()), "the room at opening")
        add_job(store, label="newcomer", booked=100 * MIB, cap=100 * MIB)
        await probed(pilot)
        after = fits_line(app)
        assert after != before
        await until(pilot, lambda: after in str(preview.render()), "the room after the booking")
        assert not screen.query_one("#do", Button).disabled


async def test_enter_walks_the_fields_then_reaches_launch(
    caged: Path, isolated_home: Path
) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default(), launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        launch = screen.query_one("#do", Button)
        assert app.focused is screen.query_one("#launch-command", Input)
        await pilot.press(*"true")
        for key, _, _ in FIELDS[1:]:
            await pilot.press("enter")
            assert app.focused is screen.query_one(f"#launch-{key}", Input)
            if key == "cap":
                await pilot.press(*"8M")
        await until(pilot, lambda: not launch.disabled, "a valid form")
        await pilot.press("enter")
        assert app.focused is launch
        assert isinstance(app.screen, LaunchScreen), "Enter in a field never launches"


async def test_enter_on_the_last_field_of_a_wrong_form_stays_there(
    caged: Path, isolated_home: Path
) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default(), launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        last = screen.query_one(f"#launch-{FIELDS[-1][0]}", Input)
        last.focus()
        await pilot.press("enter")
        assert app.focused is last
        assert screen.query_one("#do", Button).disabled


async def test_the_unbounded_switch_sets_the_cap_aside_and_the_line_says_unbounded(
    caged: Path, isolated_home: Path
) -> None:
    """The runner refuses --cap with --unbounded: switched on, the cap field is emptied and
    disabled, saying why, and the line is --unbounded with no --cap; switched off, the cap
    typed before is back. Launched, the job runs unbounded in the cage."""
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        preview = screen.query_one("#launch-preview")
        cap = screen.query_one("#launch-cap", Input)
        switch = screen.query_one("#launch-unbounded", Switch)
        assert not switch.value
        screen.query_one("#launch-command", Input).value = "true"
        cap.value = "64M"
        await until(pilot, lambda: "--cap 64M -- true" in str(preview.render()), "the cap")
        switch.focus()
        await pilot.press("space")
        assert switch.value and cap.disabled and cap.value == ""
        assert "--unbounded" in cap.placeholder
        await until(pilot, lambda: "--unbounded -- true" in str(preview.render()),
                    "the unbounded line")
        shown = str(preview.render())
        assert "--cap" not in shown and "oom adj 1000" in shown, shown
        await pilot.press("space")
        assert not cap.disabled and cap.value == "64M"
        await until(pilot, lambda: "--cap 64M -- true" in str(preview.render()), "the cap back")
        await pilot.press("space")
        launch = screen.query_one("#do", Button)
        await until(pilot, lambda: not launch.disabled and "--unbounded" in str(preview.render()),
                    "an unbounded form ready to launch")
        launch.press()

        def finished() -> bool:
            jobs = list(ledger_jobs(store))
            return bool(jobs) and jobs[0].state == "done"

        await until(pilot, finished, "the unbounded job finished")
    [job] = list(ledger_jobs(store))
    assert job.exit_code == 0 and job.oom_score_adj == 1000 and not job.declared_cap


async def test_the_form_for_a_job_that_hit_its_own_cap_offers_unbounded_too(
    isolated_home: Path,
) -> None:
    """More room for a 250 may be no cap at all: the form's switch takes its doubled cap away."""
    store = StateStore.open_default()
    first = add_job(store, label="grows", state="done", argv=["python3", "grow.py"],
                    cwd=str(isolated_home), exit_code=250, outcome="own cap", cap=160 * MIB,
                    hit_ceiling=1)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 40)) as pilot:
        await probed(pilot)
        await pilot.press("2")
        table = app.query_one("#jobs-table")
        table.move_cursor(row=table.get_row_index(str(first)))
        await pilot.press("r")
        screen = app.screen
        assert isinstance(screen, LaunchScreen)
        assert screen.values()["cap"] == "320M"
        switch = screen.query_one("#launch-unbounded", Switch)
        assert not switch.value
        switch.focus()
        await pilot.press("space")
        assert screen.values()["cap"] == ""
        preview = screen.query_one("#launch-preview")
        await until(pilot, lambda: "--unbounded -- python3 grow.py" in str(preview.render()),
                    "the unbounded rerun's line")


def test_a_request_with_a_cap_and_unbounded_is_refused_as_the_runner_refuses_it(
    tmp_path: Path,
) -> None:
    values = {"command": "true", "cwd": "", "cap": "64M", "label": "", "threads": "",
              "timeout": ""}
    with pytest.raises(SwarmdeckError, match=r"^--unbounded and --cap 64M contradict"):
        request_from(values, tmp_path, unbounded=True)
    assert request_from({**values, "cap": ""}, tmp_path, unbounded=True).unbounded


async def test_enter_walks_past_the_cap_while_it_is_set_aside(
    caged: Path, isolated_home: Path
) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default(), launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        screen.query_one("#launch-unbounded", Switch).value = True
        screen.query_one("#launch-cwd", Input).focus()
        await pilot.press("enter")
        assert app.focused is screen.query_one("#launch-label", Input)
