"""What a job's folder shows a workload with a single run, read from the ledger."""

from __future__ import annotations

from pathlib import Path

from ledger_rows import add_job
from swarmdeck.actions.booking import OOM_ADJ_OUTGROWN, OOM_ADJ_PREDICTED
from swarmdeck.actions.jobrecord import folder_shows
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
