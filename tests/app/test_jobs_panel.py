"""The Jobs panel and the Hosts memory bar under Textual's Pilot, fed from a real state file."""

from __future__ import annotations

import time
from pathlib import Path

from pilot_waits import probed, until
from rich.text import Text

from busy_job import busy_job
from ledger_rows import add_job as add_ledger_job
from swarmdeck.actions.reconcile import LOST_OUTCOME
from swarmdeck.app.bar import StackedBar
from swarmdeck.app.hosts import HostCard
from swarmdeck.app.jobs import JobsPanel
from swarmdeck.app.keyed_table import KeyedTable
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.host import host_snapshot
from swarmdeck.probes.memory_book import ledger_jobs, memory_book
from swarmdeck.probes.procs import start_ticks
from swarmdeck.snapshot import Snapshot
from swarmdeck.state import StateStore
from swarmdeck.views.jobs import PANEL_COLUMNS

MIB = 1 << 20


def add_job(store: StateStore, label: str, state: str, **extra: object) -> int:
    return add_ledger_job(
        store, label=label, state=state, booked=40 * MIB, cap=80 * MIB, admitted_via="default",
        oom_score_adj=500, started_at=time.time() - 75, **extra,
    )


def make_app(store: StateStore) -> SwarmdeckApp:
    config = load_config()

    def prober() -> Snapshot:
        host = host_snapshot(config, store)
        return Snapshot(
            taken_at=time.time(), hosts=[host], jobs=list(ledger_jobs(store)),
            books=[memory_book(config, store)],
        )

    return SwarmdeckApp(config, store, prober=prober)


def cells(table: KeyedTable, job_id: int) -> dict[str, str | Text]:
    """A row of the panel by column key."""
    drawn = map(str, table.get_row(str(job_id)))
    return dict(zip([key for key, _ in PANEL_COLUMNS], drawn, strict=True))


async def settle(pilot, app: SwarmdeckApp) -> None:
    await probed(pilot)
    await until(pilot, lambda: app.query(HostCard) and app.query_one(HostCard).book, "a host")


async def test_a_lost_job_shows_its_exit_code_as_every_finished_job_does() -> None:
    store = StateStore.open_default()
    lost = add_job(store, "train", "lost", exit_code=255, outcome=LOST_OUTCOME,
                   ended_at=time.time())
    app = make_app(store)
    async with app.run_test(size=(220, 60)) as pilot:
        await settle(pilot, app)
        table = app.query_one(JobsPanel).query_one(KeyedTable)
        assert str(cells(table, lost)["state"]) == "lost 255"


async def test_jobs_show_the_ledger_and_update_in_place() -> None:
    store = StateStore.open_default()
    running = add_job(store, "pytest", "running")
    done = add_job(store, "build", "done", exit_code=250, outcome="own cap", peak=80 * MIB,
                   hit_ceiling=1, ended_at=time.time())
    app = make_app(store)
    async with app.run_test(size=(220, 60)) as pilot:
        await settle(pilot, app)
        panel = app.query_one(JobsPanel)
        table = panel.query_one(KeyedTable)
        assert table.display
        row = cells(table, running)
        assert row["label"] == "pytest" and str(row["state"]) == "running"
        assert row["booked"] == "40M" and row["cap"] == "80M"
        assert row["via"] == "default" and row["adj"] == "500"
        assert row["runtime"] == "1m"
        finished = cells(table, done)
        assert str(finished["state"]) == "own cap 250" and str(finished["peak"]) == "80M ▲"
        assert str(finished["cores"]) == "–"
        assert panel.border_subtitle == "1 running, 0 queued"
        table.move_cursor(row=1)
        with store.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET state = 'done', exit_code = 0, outcome = 'ok', ended_at = ?"
                " WHERE id = ?", (time.time(), running),
            )
        await probed(pilot)
        assert str(cells(table, running)["state"]) == "ok"
        assert table.cursor_row == 1
        assert table.row_count == 2


def test_a_running_jobs_row_stays_the_same_from_one_refresh_to_the_next() -> None:
    """Its runtime is shown to the minute, so the row is not redrawn at every refresh; a
    finished job's runtime is to the second, as `status` gives it."""
    store = StateStore.open_default()
    add_job(store, "pytest", "running")
    add_job(store, "build", "done", exit_code=0, outcome="ok", ended_at=time.time() - 30)
    snapshot = Snapshot(taken_at=time.time(), hosts=[], jobs=list(ledger_jobs(store)))
    panel, now = JobsPanel(load_config(), store), time.time()
    assert panel.rows(snapshot, now) == panel.rows(snapshot, now + 2)
    runtimes = [cells[PANEL_COLUMNS.index(("runtime", "runtime"))]
                for cells in panel.rows(snapshot, now).values()]
    assert runtimes[0] in ("44s", "45s") and runtimes[1] == "1m"


async def test_an_empty_ledger_says_how_to_start_a_job() -> None:
    app = make_app(StateStore.open_default())
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        panel = app.query_one(JobsPanel)
        assert panel.query_one(".empty").display
        assert not panel.query_one(KeyedTable).display


async def test_the_memory_bar_stacks_the_memory_book() -> None:
    app = make_app(StateStore.open_default())
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        card = app.query_one(HostCard)
        bar = card.query_one(".memory-bar", StackedBar)
        assert [segment.name for segment in bar.segments] == [
            "outside the slice", "slice used", "booked, not yet grown", "room",
        ]
        assert card.book is not None and bar.total == card.book.mem_total
        assert "room" in str(card.query_one(".memory-figures").render())


async def test_a_running_job_shows_its_cores_and_the_serial_reason_it_gives(
    isolated_home: Path,
) -> None:
    """The app's own prober, so one usage tracker must live across its snapshots."""
    (isolated_home / "config.toml").write_text("[ui]\nrefresh_interval = 0.3\n")
    store = StateStore.open_default()
    marker = isolated_home / "job.serial"
    with busy_job(2) as job:
        ticks = start_ticks(job.pid)
        job_id = add_job(
            store, "hashing", "running", pid=job.pid, start_ticks=ticks, threads=2,
            serial_marker_path=str(marker),
        )
        app = SwarmdeckApp(load_config(), store)
        async with app.run_test(size=(220, 60)) as pilot:
            table = app.query_one(JobsPanel).query_one(KeyedTable)

            async def cores_cell(wanted: str) -> str:
                for _ in range(100):
                    await pilot.pause(0.1)
                    if table.row_count and wanted in (text := str(cells(table, job_id)["cores"])):
                        return text
                raise AssertionError(f"no {wanted!r} in the cores cell")

            figures = await cores_cell("cores")
            assert figures.endswith("/2 thr")
            assert 1.0 <= float(figures.split("·")[1].split("/")[0]) <= 2.05
            marker.write_text("serial right now: linking\n")
            assert (await cores_cell("serial")).startswith("serial: linking · ")


async def test_each_job_shows_the_session_and_subagent_that_launched_it() -> None:
    store = StateStore.open_default()
    by_agent = add_job(store, "pytest", "running", session_id="abcd1234-0000-4000",
                       agent_id="a1b2c3d4e5")
    by_session = add_job(store, "build", "running", session_id="ffff0000-1111")
    by_person = add_job(store, "make", "running")
    app = make_app(store)
    async with app.run_test(size=(220, 60)) as pilot:
        await settle(pilot, app)
        table = app.query_one(JobsPanel).query_one(KeyedTable)
        assert cells(table, by_agent)["owner"] == "abcd1234/a1b2c3d4"
        assert cells(table, by_session)["owner"] == "ffff0000"
        assert cells(table, by_person)["owner"] == "–"


async def test_a_job_that_never_ran_says_so_briefly_in_the_panel_and_whole_in_its_detail(
) -> None:
    """`command not found` and `permission denied` name the command; in the panel's state they
    are a few words and the code, so at 100×30 the memory columns still show beside them."""
    store = StateStore.open_default()
    reasons = {
        add_job(store, "nonexist_cmd", "done", exit_code=127,
                outcome="nonexist_cmd: command not found"): "not found 127",
        add_job(store, "noexec", "done", exit_code=126,
                outcome="/tmp/x/noexec: permission denied"): "cannot run 126",
    }
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        table = app.query_one("#jobs-table", KeyedTable)
        for job_id, brief in reasons.items():
            assert cells(table, job_id)["state"] == brief
        shown = {column.label.strip() for column in table.columns if column.width > 0}
        assert {"label", "state", "booked", "peak", "cap"} <= shown, shown
        await pilot.press("2", "enter")  # the newest row: the job that could not run
        await until(pilot, lambda: "/tmp/x/noexec: permission denied" in str(
            app.screen.query_one("#job-facts").render()), "the whole reason in the detail")
