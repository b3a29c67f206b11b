"""`r` on a job the memory cage ended: one that grew past its booking until the shared slice was
full (254, its own growth) opens the launch form with the --cap its 254 line names, as one that
hit its own cap (250) opens it with twice the cap; one killed while it kept to its booking
(254, not its fault) is rerun as it was, from the rerun modal."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cagekit import SWARMDECK, end_session, hog, write_config
from pilot_waits import probed, until
from textual.widgets import Button, Input, Switch

from ledger_rows import add_job
from swarmdeck.app.commands import ConfirmScreen
from swarmdeck.app.launch import LaunchScreen
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.state import StateStore
from waiting import DEADLINE

MIB = 1 << 20


@pytest.fixture
def outgrown(caged: Path, isolated_home: Path) -> Iterator[tuple[int, str]]:
    """A real 254 over booking, in a 100M slice whose jobs book 40M: an unbounded job grows to
    80M beside a neighbour holding 25M, and the slice fills with its own growth. The job's id
    and the --cap its 254 line names; the neighbour is gone before the test goes on."""
    write_config(isolated_home / "config.toml", caged, 100 * MIB,
                 default_prediction="40M", cap_factor=2.0)
    neighbour = subprocess.Popen(
        [SWARMDECK, "run", "--label", "neighbour", "--cap", "40M", "--", *hog(25, hold=600)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        assert neighbour.stdout is not None and neighbour.stdout.readline() == "held\n"
        grower = subprocess.run(
            [SWARMDECK, "run", "--label", "grower", "--unbounded", "--", *hog(80)],
            capture_output=True, text=True, timeout=DEADLINE,
        )
        assert grower.returncode == 254, grower.stderr
        suggested = re.search(r"rerun it with --cap (\S+) or more in place of --unbounded",
                              grower.stderr)
        assert suggested, grower.stderr
    finally:
        end_session(neighbour.pid)
        neighbour.communicate(timeout=DEADLINE)
    [job] = [job for job in ledger_jobs(StateStore.open_default()) if job.label == "grower"]
    yield job.id, suggested[1]


async def select_job(pilot, app: SwarmdeckApp, job_id: int) -> None:
    await pilot.press("2")
    table = app.query_one("#jobs-table")
    table.move_cursor(row=table.get_row_index(str(job_id)))
    await pilot.pause()


async def test_r_on_a_job_that_grew_past_its_booking_opens_the_form_with_the_cap_its_line_names(
    outgrown: tuple[int, str], isolated_home: Path
) -> None:
    """The form is the one its line asks for: that --cap in place of --unbounded, so the rerun
    is booked what it took; the person may raise it, and Launch starts it in the cage."""
    job_id, suggested = outgrown
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 40)) as pilot:
        await probed(pilot)
        await select_job(pilot, app, job_id)
        await pilot.press("r")
        assert isinstance(app.screen, LaunchScreen)
        screen = app.screen
        values = screen.values()
        assert values["cap"] == suggested and values["label"] == "grower"
        assert not screen.query_one("#launch-unbounded", Switch).value
        title = str(screen.query_one("Label").render())
        assert f"Rerun job {job_id}: it grew past its booking of 40M" in title, title
        preview = screen.query_one("#launch-preview")
        await until(pilot, lambda: f"--cap {suggested} --label grower --" in str(preview.render()),
                    "the rerun's line with that --cap")
        assert "--unbounded" not in str(preview.render())
        launch = screen.query_one("#do", Button)
        await until(pilot, lambda: not launch.disabled, "a form ready to launch")
        launch.press()
        await until(pilot, lambda: len(list(ledger_jobs(store))) == 3, "the rerun's row")
    rerun = max(ledger_jobs(store), key=lambda job: job.id)
    assert rerun.declared_cap == suggested and rerun.label == "grower"


async def test_r_on_a_job_killed_within_its_booking_reruns_it_as_it_was(
    isolated_home: Path,
) -> None:
    """Not its fault: the same line again, from the rerun modal, with no form to fill."""
    store = StateStore.open_default()
    job_id = add_job(store, label="victim", state="done", argv=["sh", "-c", "exit 0"],
                     cwd=str(isolated_home), exit_code=254, outcome="slice full",
                     booked=40 * MIB, cap=80 * MIB, declared_cap="", peak=30 * MIB,
                     started_at=time.time() - 5, ended_at=time.time() - 4)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 40)) as pilot:
        await probed(pilot)
        await select_job(pilot, app, job_id)
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the rerun modal")
        shown = str(app.screen.query_one("#confirm-lines").render())
        assert "swarmdeck run --detach --label victim -- sh -c 'exit 0'" in shown, shown
        assert not app.screen.query(Input)
