"""Ledger rows are not trusted with signals: a row of a dead runner whose cgroup is not a cage
swarmdeck made in the configured slice is closed as lost, and its cgroup and processes are left
alone; a queued row's runner is proven by the identity its ledger recorded before it is woken."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cagekit import new_slice, remove_tree

from swarmdeck.probes.host import local_host_name
from swarmdeck.probes.procs import identity
from swarmdeck.probes.store_rows import Finding
from swarmdeck.state import StateStore

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))


@pytest.fixture
def foreign_cgroup() -> Iterator[Path]:
    """A cgroup of the test's own outside its configured slice, with a sleep inside."""
    path = new_slice()
    try:
        yield path
    finally:
        remove_tree(path)


def sleeping_in(cgroup: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    (cgroup / "cgroup.procs").write_text(str(proc.pid))
    return proc


def dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def forge_row(state_db: Path, cgroup: str, job_pid: int) -> int:
    """What a same-user process can do: insert an admitted row with sqlite3 itself, naming a
    dead runner, a cgroup, and a process (its real start ticks)."""
    ticks = identity(job_pid)
    assert ticks is not None
    with sqlite3.connect(state_db) as conn:
        cursor = conn.execute(
            "INSERT INTO jobs (label, host, state, argv, cwd, booked, cap, pid, start_ticks,"
            " runner_pid, runner_start_ticks, cgroup, created_at)"
            " VALUES ('forged', ?, 'admitted', '[\"sleep\"]', '/', 1048576, 2097152, ?, ?, ?,"
            " 1, ?, ?)",
            (local_host_name(), job_pid, ticks.start_ticks, dead_pid(), cgroup, time.time()),
        )
        return int(cursor.lastrowid or 0)


def finding_about(pid: int, ticks: int, job_id: int | None = None) -> Finding:
    return Finding(
        id=1, key=f"output_not_growing:job{job_id}", rule="output_not_growing",
        subject=f"job #{job_id}", severity="warning", message="no output for 5m",
        first_seen_at=0.0, last_seen_at=0.0, count=1, acknowledged_at=None,
        job_id=job_id, pid=pid, start_ticks=ticks,
    )


def status() -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWARMDECK, "status", "--json"], capture_output=True, text=True, timeout=120,
        env=os.environ.copy(), stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("where", ["outside the slice", "in the slice, not a cage name",
                                   "a cage name through ..", "another row's cage name"])
def test_a_forged_rows_cgroup_survives_status_and_the_row_is_set_aside(
    isolated_home: Path, own_slice: Path, foreign_cgroup: Path, where: str
) -> None:
    store = StateStore.open_default()
    if where in ("outside the slice", "a cage name through .."):
        cgroup = foreign_cgroup
    else:
        cgroup = own_slice / ("intruder" if where.startswith("in the slice") else "job-7-1")
        cgroup.mkdir()
    proc = sleeping_in(cgroup)
    try:
        named = f"{own_slice}/../{cgroup.name}" if ".." in where else str(cgroup)
        row_id = forge_row(store.path, named, proc.pid)
        done = status()
        assert done.returncode == 0, done.stderr
        assert proc.poll() is None, "status killed a process of a cgroup it did not make"
        assert cgroup.is_dir(), "status removed a cgroup it did not make"
        with store.read() as conn:
            row = conn.execute(
                "SELECT state, outcome FROM jobs WHERE id = ?", (row_id,)
            ).fetchone()
        assert row["state"] == "lost"
        assert "not a cage swarmdeck made" in row["outcome"], row["outcome"]
    finally:
        proc.kill()
        proc.wait()
        if cgroup != foreign_cgroup:
            remove_tree(cgroup)


def test_approving_a_kill_for_a_forged_running_row_leaves_its_foreign_cgroup_alone(
    isolated_home: Path, own_slice: Path, foreign_cgroup: Path
) -> None:
    """A running row naming a foreign cgroup, its runner alive: the row proves nothing, so an
    approved kill of its process is refused and no member of that cgroup is signalled."""
    from ledger_rows import add_job
    from swarmdeck.watchdog.kills import NOT_SUPERVISED, approve, request_kill

    store = StateStore.open_default()
    subject, bystander = sleeping_in(foreign_cgroup), sleeping_in(foreign_cgroup)
    try:
        me = identity(subject.pid)
        assert me is not None
        job_id = add_job(store, pid=me.pid, start_ticks=me.start_ticks,
                         cgroup=str(foreign_cgroup))
        request = request_kill(store, finding_about(me.pid, me.start_ticks, job_id), "tester",
                               1.0)
        outcome = approve(store, request.id, "tester", time.time(), grace=1.0)
        assert outcome.result == NOT_SUPERVISED, outcome.said
        time.sleep(0.2)
        assert subject.poll() is None, "the process a forged row named was killed"
        assert bystander.poll() is None, "a member of a cgroup the row only named was killed"
    finally:
        for proc in (subject, bystander):
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("cgroup", ["none", "its own made cage, the victim outside it"])
def test_a_running_row_naming_any_live_process_as_its_runner_supervises_nothing(
    isolated_home: Path, own_slice: Path, cgroup: str
) -> None:
    """What a same-user process can write: a running row naming itself (alive) as the runner
    and a victim as the job. Unless the victim is in the cage that runner made for that row,
    approving a kill of it signals nothing."""
    from ledger_rows import add_job
    from swarmdeck.actions.cage.base import cage_name
    from swarmdeck.watchdog.kills import NOT_SUPERVISED, approve, request_kill

    store = StateStore.open_default()
    forger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    victim = subprocess.Popen(["sleep", "301"], start_new_session=True)
    try:
        runner, target = identity(forger.pid), identity(victim.pid)
        assert runner is not None and target is not None
        job_id = add_job(store, pid=target.pid, start_ticks=target.start_ticks,
                         runner_pid=runner.pid, runner_start_ticks=runner.start_ticks)
        if cgroup != "none":
            cage = own_slice / cage_name(job_id, runner.pid)
            cage.mkdir()
            (cage / "cgroup.procs").write_text(str(runner.pid))  # the forger, not the victim
            with store.transaction() as conn:
                conn.execute("UPDATE jobs SET cgroup = ? WHERE id = ?", (str(cage), job_id))
        request = request_kill(store, finding_about(target.pid, target.start_ticks), "tester",
                               1.0)
        outcome = approve(store, request.id, "tester", time.time(), grace=1.0)
        assert outcome.result == NOT_SUPERVISED, outcome.said
        time.sleep(0.2)
        assert victim.poll() is None, "a forged row's pid was killed"
    finally:
        for proc in (forger, victim):
            proc.kill()
            proc.wait()


def test_a_running_row_of_a_dead_runner_supervises_nothing(isolated_home: Path) -> None:
    """A row saying `running` whose runner is gone names no job of ours: its process is not
    signalled on approval."""
    from ledger_rows import add_job
    from swarmdeck.watchdog.kills import NOT_SUPERVISED, approve, request_kill

    store = StateStore.open_default()
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        me = identity(victim.pid)
        assert me is not None
        add_job(store, pid=me.pid, start_ticks=me.start_ticks, runner_pid=dead_pid(),
                runner_start_ticks=1)
        request = request_kill(store, finding_about(me.pid, me.start_ticks), "tester", 1.0)
        outcome = approve(store, request.id, "tester", time.time(), grace=1.0)
        assert outcome.result == NOT_SUPERVISED, outcome.said
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
