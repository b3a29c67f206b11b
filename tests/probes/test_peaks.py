"""The peaks table read in one place: the runner's booking and the hook's last-run line agree."""

from __future__ import annotations

from pathlib import Path

from swarmdeck.actions.booking import PastRun
from swarmdeck.actions.jobrecord import past_runs
from swarmdeck.hooks.bash_reminder import last_run
from swarmdeck.probes.peaks import workload_history
from swarmdeck.state import StateStore

MIB = 1 << 20


def _record(store: StateStore, fingerprint: str, peak: int, at: float, **values: object) -> None:
    row = {"fingerprint": fingerprint, "peak": peak, "recorded_at": at, **values}
    with store.transaction() as conn:
        conn.execute(
            f"INSERT INTO peaks ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            tuple(row.values()),
        )


def test_runs_come_newest_first_with_the_count_of_all(isolated_home: Path) -> None:
    store = StateStore.open_default()
    _record(store, "f", 10 * MIB, 1.0, cap=20 * MIB)
    _record(store, "f", 30 * MIB, 3.0, cap=40 * MIB, hit_ceiling=1, outcome="own cap",
            duration=12.5)
    _record(store, "f", 20 * MIB, 2.0)
    _record(store, "other", 99 * MIB, 4.0)
    history = workload_history(store, "f", 2)
    assert [run.peak for run in history.runs] == [30 * MIB, 20 * MIB]
    assert history.recorded == 3
    assert history.last is not None and history.last.hit_ceiling
    assert workload_history(store, "none", 5).last is None


def test_the_booking_and_the_hook_read_the_same_rows(isolated_home: Path) -> None:
    store = StateStore.open_default()
    _record(store, "f", 10 * MIB, 1.0, cap=20 * MIB)
    _record(store, "f", 30 * MIB, 3.0, cap=40 * MIB, hit_ceiling=1, outcome="own cap",
            duration=12.5)
    assert past_runs(store, "f") == [
        PastRun(30 * MIB, 40 * MIB, True),
        PastRun(10 * MIB, 20 * MIB, False),
    ]
    last = last_run(store, "f")
    assert last is not None
    assert (last.peak, last.duration, last.outcome, last.hit_ceiling, last.runs) == (
        30 * MIB, 12.5, "own cap", True, 2,
    )
    assert last_run(store, "none") is None
