"""A job's detail view: the peaks its workload recorded as a sparkline beside the memory bar,
and its cores in use and threads at once over the snapshots the app took while it ran."""

from __future__ import annotations

from pathlib import Path

from pilot_waits import probed, until

from busy_job import busy_job
from ledger_rows import add_job
from swarmdeck.actions.oom import SLICE_FULL_OVER_BOOKING
from swarmdeck.app.bar import ScaledSparkline
from swarmdeck.app.detail import JobDetail, peak_figures
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.probes.peaks import PeakRecord, WorkloadHistory
from swarmdeck.probes.procs import start_ticks
from swarmdeck.state import StateStore

GIB = 1 << 30
WORKLOAD = "test-workload"


def record_peaks(store: StateStore, peaks: list[float], fingerprint: str = WORKLOAD) -> None:
    with store.transaction() as conn:
        for n, peak in enumerate(peaks):
            conn.execute(
                "INSERT INTO peaks (fingerprint, peak, hit_ceiling, cap, outcome, recorded_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (fingerprint, int(peak * GIB), int(peak >= 4), 4 * GIB, "ok", 1000.0 + n),
            )


def figures(screen: JobDetail, name: str) -> str:
    return str(screen.query_one(f"#job-{name}-figures").render())


async def test_a_jobs_detail_shows_its_workloads_peaks_oldest_first() -> None:
    store = StateStore.open_default()
    record_peaks(store, [1.0, 2.0, 4.0, 3.0])
    record_peaks(store, [9.0], fingerprint="another-workload")
    add_job(store, label="build", state="done", exit_code=0, outcome="ok", fingerprint=WORKLOAD,
            cap=4 * GIB, peak=3 * GIB, booked=3 * GIB)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2", "enter")
        screen = app.screen
        assert isinstance(screen, JobDetail)
        spark = screen.query_one("#job-peaks", ScaledSparkline)
        await until(pilot, lambda: spark.data, "the peaks")
        assert spark.data == (1.0 * GIB, 2.0 * GIB, 4.0 * GIB, 3.0 * GIB)
        assert spark.top == 4 * GIB
        assert figures(screen, "peaks") == " 4 runs: last 3G, most 4G, 1 at cap"
        assert figures(screen, "cores") == " not sampled while the app ran"


def test_a_run_squeezed_out_of_a_full_slice_is_not_counted_at_its_cap() -> None:
    """Both runs are remembered at their ceiling, so the next run books its cap; only one of
    them reached it. The other was cut off by a full slice at 1G of its 4G: it says so."""
    history = WorkloadHistory([
        PeakRecord(GIB, 4 * GIB, True, 2.0, SLICE_FULL_OVER_BOOKING),
        PeakRecord(4 * GIB, 4 * GIB, True, 9.0, "own cap"),
    ], 2)
    assert peak_figures(history, WORKLOAD) == (
        " 2 runs: last 1G, most 4G, 1 at cap, 1 squeezed out")


async def test_a_job_without_a_fingerprint_says_so() -> None:
    store = StateStore.open_default()
    add_job(store, label="old row", state="done", exit_code=0, outcome="ok")
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2", "enter")
        await pilot.pause()
        assert figures(app.screen, "peaks") == " no workload fingerprint recorded"


async def test_a_jobs_detail_is_titled_with_its_id_and_label() -> None:
    store = StateStore.open_default()
    job_id = add_job(store, label="cargo build", state="done", exit_code=0, outcome="ok")
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2", "enter")
        await pilot.pause()
        assert app.screen.query_one(".detail").border_title == f"Job {job_id}: cargo build"


async def test_a_running_jobs_cores_and_threads_are_drawn_over_time(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text("[ui]\nrefresh_interval = 0.2\n")
    store = StateStore.open_default()
    with busy_job(1) as job:
        job_id = add_job(store, label="hashing", state="running", pid=job.pid,
                         start_ticks=start_ticks(job.pid), threads=2, fingerprint=WORKLOAD)
        app = SwarmdeckApp(load_config(), store)
        async with app.run_test(size=(120, 35)) as pilot:
            await probed(pilot)
            await pilot.press("2", "enter")
            screen = app.screen
            assert isinstance(screen, JobDetail) and screen.job_id == job_id
            cores = screen.query_one("#job-cores", ScaledSparkline)
            threads = screen.query_one("#job-threads", ScaledSparkline)
            await until(pilot, lambda: len(cores.data) >= 3, "three readings of its use")
            assert cores.top == 2.0
            assert cores.data == tuple(p.cores_in_use for p in app.history.job(job_id))
            assert threads.data == tuple(p.threads_at_once for p in app.history.job(job_id))
            assert 0 < max(cores.data) <= 2.05
            assert figures(screen, "cores").startswith(" cores in use, most ")
            assert figures(screen, "cores").endswith(" of 2")
            assert figures(screen, "peaks") == " no run of it recorded yet"


async def test_the_peaks_are_read_again_when_the_job_ends_and_records_its_own(
    isolated_home: Path,
) -> None:
    (isolated_home / "config.toml").write_text("[ui]\nrefresh_interval = 0.2\n")
    store = StateStore.open_default()
    job_id = add_job(store, label="build", state="running", fingerprint=WORKLOAD)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2", "enter")
        screen = app.screen
        assert isinstance(screen, JobDetail)
        await until(pilot, lambda: figures(screen, "peaks") == " no run of it recorded yet",
                    "no run yet")
        record_peaks(store, [2.0])
        await probed(pilot, 2)
        assert figures(screen, "peaks") == " no run of it recorded yet"
        with store.transaction() as conn:
            conn.execute("UPDATE jobs SET state = 'done', exit_code = 0, outcome = 'ok',"
                         " peak = ? WHERE id = ?", (2 * GIB, job_id))
        await until(pilot, lambda: figures(screen, "peaks") == " 1 run: last 2G, most 2G",
                    "the run it recorded")


async def test_a_moved_jobs_detail_says_where_it_went_and_how_its_copy_runs_there(
    isolated_home: Path,
) -> None:
    """A job withdrawn here because it moved was never admitted here and wrote no output here:
    its detail says where it went and how its copy runs there, not "admitted via cap" nor
    "ran attached to its terminal"."""
    (isolated_home / "config.toml").write_text('[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\n')
    store = StateStore.open_default()
    copy = add_job(store, label="slow build", host="box2", state="running", argv=["make"],
                   cwd=str(isolated_home), admitted_via="peer", detached=1)
    moved = add_job(store, label="slow build", state="moved", argv=["make"],
                    cwd=str(isolated_home), exit_code=242, outcome=f"moved to box2 (job {copy})",
                    admitted_via="cap")
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2")
        table = app.query_one("#jobs-table")
        table.move_cursor(row=table.get_row_index(str(moved)))
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, JobDetail) and screen.job_id == moved
        await pilot.pause()
        facts = str(screen.query_one("#job-facts").render())
        output = str(screen.query_one("#job-output").render())
        await pilot.press("escape")
        table.move_cursor(row=table.get_row_index(str(copy)))
        await pilot.press("enter")
        await pilot.pause()
        copy_facts = str(app.screen.query_one("#job-facts").render())
    assert ("admitted via  box2's own runner (a peer run: booked and caged there)"
            in copy_facts), copy_facts
    assert "admitted via  cap" not in facts, facts
    assert "admitted via  not here: it moved while queued" in facts, facts
    assert (f"moved to  box2, as job {copy}: running there under box2's own swarmdeck run"
            in facts), facts
    assert "attached to its terminal" not in output, output
    assert output == (f"no output here: it moved to box2 before it started; job {copy} is its"
                      " run there"), output


def shown_output_lines(screen: JobDetail) -> list[str]:
    """The output lines the detail view's output box shows in its window, top to bottom."""
    box = screen.query_one("#job-output-box")
    lines = str(screen.query_one("#job-output").render()).splitlines()
    top = round(box.scroll_y)
    return lines[top:top + box.scrollable_content_region.height]


async def test_a_jobs_output_is_followed_at_its_end_as_it_grows(isolated_home: Path) -> None:
    """Like `tail -f`: while the reader has not scrolled up, the box shows the file's last
    line after each append, however few lines the box has room for."""
    output = isolated_home / "out.log"
    output.write_text("".join(f"line {n}\n" for n in range(1, 31)))
    store = StateStore.open_default()
    add_job(store, label="grows", output_path=str(output))
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(100, 35)) as pilot:
        await probed(pilot)
        await pilot.press("2", "enter")
        screen = app.screen
        assert isinstance(screen, JobDetail)
        await until(pilot, lambda: shown_output_lines(screen)[-1:] == ["line 30"], "line 30")
        assert screen.query_one("#job-output-box").scrollable_content_region.height < 20
        for first, last in ((31, 35), (36, 44), (45, 47)):
            with output.open("a") as handle:
                handle.write("".join(f"line {n}\n" for n in range(first, last + 1)))
            await probed(pilot)
            await until(pilot, lambda last=last: shown_output_lines(screen)[-1:]
                        == [f"line {last}"], f"line {last} at the bottom")
