"""Rows of dead runners are closed as lost where readers look: in every snapshot."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from swarmdeck.config import load_config
from swarmdeck.probes.host import local_host_name
from swarmdeck.probes.procs import own_identity
from swarmdeck.snapshot import take_snapshot
from swarmdeck.state import StateStore


def test_a_snapshot_never_shows_a_dead_runners_job_as_running(isolated_home: Path) -> None:
    store = StateStore.open_default()
    dead = subprocess.Popen(["true"])
    dead.wait()
    me = own_identity()
    with store.transaction() as conn:
        for runner in ((dead.pid, 1), (me.pid, me.start_ticks)):
            conn.execute(
                "INSERT INTO jobs (label, host, state, booked, runner_pid, runner_start_ticks)"
                " VALUES ('j', ?, 'running', 1048576, ?, ?)",
                (local_host_name(), *runner),
            )
    snapshot = take_snapshot(load_config(), store)
    assert [(job.id, job.state) for job in snapshot.jobs] == [(2, "running"), (1, "lost")]
    lost = snapshot.jobs[1]
    assert lost.outcome == "lost: its runner is gone" and lost.ended_at is not None
    host = snapshot.to_json()["hosts"][0]
    assert host["not_yet_grown"] == 1048576


def test_with_no_dead_runner_reconcile_takes_no_write_lock(isolated_home: Path) -> None:
    """The app reconciles on every refresh; runners and hooks must not queue behind it."""
    from swarmdeck.actions.reconcile import reconcile

    path = isolated_home / "state" / "state.db"
    StateStore(path).close()
    me = own_identity()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute(
        "INSERT INTO jobs (label, host, state, booked, runner_pid, runner_start_ticks)"
        " VALUES ('alive', ?, 'running', 1, ?, ?)",
        (local_host_name(), me.pid, me.start_ticks),
    )
    writer.execute("BEGIN IMMEDIATE")
    try:
        store = StateStore(path, verify=False, lock_timeout=0.5)
        assert reconcile(store, local_host_name()) == []
    finally:
        writer.execute("ROLLBACK")
        writer.close()
