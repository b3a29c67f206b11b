"""What a job's folder shows a workload with a single run, read from the ledger; read at the
cost of the folder's newest runs, not of the whole history the ledger keeps."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ledger_rows import add_job, bytes_read, insert_job
from swarmdeck.actions.booking import OOM_ADJ_OUTGROWN, OOM_ADJ_PREDICTED
from swarmdeck.actions.jobrecord import family_runs, folder_runs, folder_shows
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
