"""What a job's folder shows a workload with a single run, read from the ledger; read at the
cost of the folder's newest runs, not of the whole history the ledger keeps."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ledger_rows import add_job, bytes_read, insert_job
from swarmdeck.actions.booking import OOM_ADJ_OUTGROWN, OOM_ADJ_PREDICTED, PastRun
from swarmdeck.actions.jobrecord import (
    Ending,
    family_runs,
    folder_runs,
    folder_shows,
    past_runs,
    record_end,
    timing_runs,
)
from swarmdeck.actions.oom import SLICE_FULL_OVER_BOOKING
from swarmdeck.state import StateStore

FOLDER = "/work/drift"


def running(store: StateStore, fingerprint: str, **values: object) -> None:
    """A job of `fingerprint` running in FOLDER on a prediction from its history, past its
    booking (unless `values` say otherwise)."""
    row = {"admitted_via": "history", "oom_score_adj": OOM_ADJ_OUTGROWN, **values}
    add_job(store, fingerprint=fingerprint, cwd=FOLDER, **row)


def test_three_workloads_running_past_their_bookings_show_a_tenths_growth(
    isolated_home: Path,
) -> None:
    """Issue 34 (drifting): the first wave of a day runs past its bookings before any of it
    ends; a single run of the folder then books a tenth's growth on its peak."""
    store = StateStore.open_default()
    for fingerprint in ("a", "b"):
        running(store, fingerprint)
    assert folder_shows(store, FOLDER, "mine").growth is None, "two are not a trend"
    running(store, "c")
    assert folder_shows(store, FOLDER, "mine").growth == 10
    assert folder_shows(store, "/work/other", "mine").growth is None, "another folder's"


def test_only_other_workloads_running_past_a_prediction_count(isolated_home: Path) -> None:
    """Its own runs, a second job of one workload, a job within its booking, one on its cap
    and one that ended say nothing of the folder's growth."""
    store = StateStore.open_default()
    running(store, "a")
    running(store, "a")
    running(store, "mine")
    running(store, "b", oom_score_adj=OOM_ADJ_PREDICTED)
    running(store, "c", admitted_via="cap")
    running(store, "d", state="done")
    running(store, "e")
    assert folder_shows(store, FOLDER, "mine").growth is None


ELSEWHERE = 4000


def recorded(conn: sqlite3.Connection, cwd: str, number: int, workload: int) -> None:
    """An ended, capped `pytest` run in `cwd` whose peak was recorded."""
    job = insert_job(
        conn, state="done", cwd=cwd, fingerprint=f"{workload:064x}", declared_cap="2G",
        argv=["pytest", "-q", f"tests/case_{number:04d}"], cap=2 << 30,
    )
    conn.execute(
        "INSERT INTO peaks (fingerprint, job_id, peak, cap, duration, outcome)"
        " VALUES (?, ?, ?, ?, 5.0, 'ok')",
        (f"{workload:064x}", job, (300 + number % 2) << 20, 2 << 30),
    )


def test_a_jobs_priors_read_its_folders_newest_runs_not_the_whole_ledger(
    isolated_home: Path,
) -> None:
    """The runner of a job with no prior asks its family and folder once a second; with a
    long history elsewhere that cost the reads of every recorded run, at every look."""
    store = StateStore.open_default()
    with store.transaction() as conn:
        for number in range(ELSEWHERE):
            recorded(conn, f"/work/repo-{number % 7}", number, number)
        for number in range(6):
            recorded(conn, FOLDER, number, ELSEWHERE + number % 3)
    path = store.path
    store.close()
    size = Path(path).stat().st_size
    store = StateStore(path)
    try:
        before = bytes_read()
        family = family_runs(store, ["pytest", "-q", "tests/new"], FOLDER)
        capped = folder_runs(store, FOLDER)
        shows = folder_shows(store, FOLDER, "mine")
        read = bytes_read() - before
    finally:
        store.close()
    assert len(family) == 5 and len(capped) == 6 and shows.spread is not None
    assert read < size / 10, f"{read} bytes read of a {size}-byte ledger"


def test_every_read_of_a_folders_runs_knows_a_run_squeezed_out_of_a_full_slice(
    isolated_home: Path,
) -> None:
    """A run killed with 254 past its booking is remembered at its ceiling; each read the
    booking rules make (its own runs, its family's, its folder's capped runs and the runs that
    time settling) tells it from a run stopped at its own cap, as the ledger's outcome does."""
    store = StateStore.open_default()
    endings = {
        "tests/squeezed": Ending(254, SLICE_FULL_OVER_BOOKING, 420 << 20, None, True, 2.0, 0.5),
        "tests/at_cap": Ending(250, "own cap", 2 << 30, None, True, 3.0, 2.9),
        "tests/ok": Ending(0, "ok", 300 << 20, None, False, 6.0, 0.5),
    }
    for case, ending in endings.items():
        job = add_job(store, state="running", cwd=FOLDER, fingerprint=case, declared_cap="2G",
                      argv=["pytest", "-q", case], cap=2 << 30)
        record_end(store, job, case, 2 << 30, ending)
    family = family_runs(store, ["pytest", "-q", "tests/new"], FOLDER)
    for runs in (family, timing_runs(store, FOLDER, []), folder_runs(store, FOLDER)):
        assert [(run.hit_ceiling, run.squeezed) for run in runs] == [
            (False, False), (True, False), (True, True)
        ], runs
    assert [run.squeezed for run in past_runs(store, "tests/squeezed")] == [True]
    assert [run.squeezed for run in past_runs(store, "tests/at_cap")] == [False]


def test_a_family_whose_third_run_was_squeezed_out_is_timed_by_its_folder(
    isolated_home: Path,
) -> None:
    """A squeezed run says nothing of when its kind peak, so it is not one of the three runs
    of a family that would time settling: with it, two remain, and the folder's runs time it
    (issue 34: a drifting job's third day, its own three runs one of them squeezed, held its
    2.2G cap to its end while it took 0.8G)."""
    store = StateStore.open_default()
    for number in range(4):
        job = add_job(store, state="running", cwd=FOLDER, fingerprint=f"w{number}",
                      argv=["pytest", "-q", f"tests/case_{number}"])
        record_end(store, job, f"w{number}", 2 << 30,
                   Ending(0, "ok", 300 << 20, None, False, 6.0, 0.5))
    own = [PastRun(300 << 20, 2 << 30, False, peak_at=0.5, duration=6.0)] * 2
    squeezed = PastRun(420 << 20, 2 << 30, True, peak_at=2.0, duration=2.0, squeezed=True)
    folder = [PastRun(300 << 20, 2 << 30, False, peak_at=0.5, duration=6.0)] * 4
    assert timing_runs(store, FOLDER, [*own, squeezed]) == folder
    whole = [*own, PastRun(300 << 20, 2 << 30, False, peak_at=0.5, duration=6.0)]
    assert timing_runs(store, FOLDER, whole) == whole
