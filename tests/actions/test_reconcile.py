"""Rows of dead runners are closed as lost where a person looks (the app, `status`); a plain
snapshot and a peer's `probe --json` only read, showing such a row as stale."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from ledger_rows import add_job, insert_job
from swarmdeck.config import load_config
from swarmdeck.probes.host import local_host_name
from swarmdeck.snapshot import reconciled_snapshot, take_snapshot
from swarmdeck.state import StateStore
from waiting import pilot_wait_for

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWARMDECK, *args], capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )


def _dead_and_live_rows(store: StateStore) -> None:
    """Job 1's runner has exited; job 2's runner is this test."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    add_job(store, label="j", booked=1048576, runner_pid=dead.pid, runner_start_ticks=1)
    add_job(store, label="j", booked=1048576)


def _rows(store: StateStore) -> list[tuple[int, str, float | None]]:
    with store.read() as conn:
        return [tuple(row) for row in conn.execute("SELECT id, state, ended_at FROM jobs")]


def test_the_app_and_status_never_show_a_dead_runners_job_as_running(
    isolated_home: Path,
) -> None:
    store = StateStore.open_default()
    _dead_and_live_rows(store)
    snapshot = reconciled_snapshot(load_config(), store)
    assert [(job.id, job.state) for job in snapshot.jobs] == [(2, "running"), (1, "lost")]
    lost = snapshot.jobs[1]
    assert lost.outcome == "lost: its runner is gone" and lost.ended_at is not None
    host = snapshot.to_json()["hosts"][0]
    assert host["not_yet_grown"] == 1048576


def test_a_plain_snapshot_only_reads_and_shows_a_dead_runner_as_stale(
    isolated_home: Path,
) -> None:
    store = StateStore.open_default()
    _dead_and_live_rows(store)
    before = _rows(store)
    jobs = {job.id: job for job in take_snapshot(load_config(), store).jobs}
    assert (jobs[1].state, jobs[1].stale) == ("running", True)
    assert (jobs[2].state, jobs[2].stale) == ("running", False)
    assert _rows(store) == before


def test_probe_json_only_reads_and_status_closes_the_row(isolated_home: Path) -> None:
    store = StateStore.open_default()
    _dead_and_live_rows(store)
    before = _rows(store)
    probe = run_cli("probe", "--json")
    assert probe.returncode == 0, probe.stderr
    jobs = {job["id"]: job for job in json.loads(probe.stdout)["jobs"]}
    assert (jobs[1]["state"], jobs[1]["stale"]) == ("running", True)
    assert _rows(store) == before, "a peer's probe wrote the ledger"
    status = run_cli("status", "--json")
    assert status.returncode == 0, status.stderr
    jobs = {job["id"]: job for job in json.loads(status.stdout)["jobs"]}
    assert (jobs[1]["state"], jobs[1]["stale"]) == ("lost", False)
    assert dict((row[0], row[1]) for row in _rows(store)) == {1: "lost", 2: "running"}


def test_with_no_dead_runner_reconcile_takes_no_write_lock(isolated_home: Path) -> None:
    """The app reconciles on every refresh; runners and hooks must not queue behind it."""
    from swarmdeck.actions.reconcile import reconcile

    path = isolated_home / "state" / "state.db"
    StateStore(path).close()
    writer = sqlite3.connect(path, isolation_level=None)
    insert_job(writer, label="alive", booked=1)
    writer.execute("BEGIN IMMEDIATE")
    try:
        store = StateStore(path, verify=False, lock_timeout=0.5)
        assert reconcile(store, local_host_name(), load_config().memory.slice) == []
    finally:
        writer.execute("ROLLBACK")
        writer.close()


async def test_the_apps_worker_closes_a_dead_runners_row(isolated_home: Path) -> None:
    from swarmdeck.app.main import SwarmdeckApp

    store = StateStore.open_default()
    _dead_and_live_rows(store)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot_wait_for(pilot, lambda: app.snapshot is not None)
        assert app.snapshot is not None
        assert {job.id: job.state for job in app.snapshot.jobs} == {1: "lost", 2: "running"}


def test_a_lost_jobs_cage_that_holds_the_reader_is_cleared_by_the_next_reader_outside(
    isolated_home: Path, own_slice: Path
) -> None:
    """A job that runs `swarmdeck status` outlives its runner: that status cannot clear the
    cage it runs in (it would stop itself), so the row is left for the next reader outside,
    which closes it and clears the cage; the cage never leaks."""
    from swarmdeck.actions.cage.base import cage_name
    from swarmdeck.probes.cgroups import cgroup_pids
    from swarmdeck.probes.procs import identity

    store = StateStore.open_default()
    gone = subprocess.Popen(["true"])
    gone.wait()
    leftover = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        me = identity(leftover.pid)
        assert me is not None
        job_id = add_job(store, pid=me.pid, start_ticks=me.start_ticks, runner_pid=gone.pid,
                         runner_start_ticks=1)
        cage = own_slice / cage_name(job_id, gone.pid)
        cage.mkdir()
        (cage / "cgroup.procs").write_text(str(leftover.pid))
        with store.transaction() as conn:
            conn.execute("UPDATE jobs SET cgroup = ? WHERE id = ?", (str(cage), job_id))
        inside = subprocess.run(
            ["sh", "-c", f'echo $$ > {cage}/cgroup.procs && exec {SWARMDECK} status --json'],
            capture_output=True, text=True, timeout=120, env=os.environ.copy(),
        )
        assert inside.returncode == 0, inside.stderr
        assert cgroup_pids(cage) == [leftover.pid], "the reader inside cleared its own cage"
        outside = run_cli("status", "--json")
        assert outside.returncode == 0, outside.stderr
        assert leftover.wait(timeout=60) is not None
        assert not cage.exists(), "the lost job's cage was left behind"
        assert dict((row[0], row[1]) for row in _rows(store)) == {job_id: "lost"}
    finally:
        leftover.kill()
        leftover.wait()
