"""An approved kill request for a caged job stops what is in its cage too, including a process
that left the job's tree (reparented to init), and the approve modal's preview lists it."""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

from cagekit import MIB, SWARMDECK, end_session, write_config

from swarmdeck.ledger.schema import RUNNING
from swarmdeck.probes.cgroups import cgroup_pids
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.probes.procs import identity
from swarmdeck.probes.store_rows import Finding
from swarmdeck.state import StateStore
from swarmdeck.watchdog.kills import STOPPED, approve, request_kill, stop_preview

DEADLINE = 60.0


def _commands(pids: list[int]) -> list[str]:
    names = []
    for pid in pids:
        with contextlib.suppress(FileNotFoundError):
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
    return sorted(names)


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_approval_stops_the_cage_and_the_process_that_left_the_tree(
    isolated_home: Path, v1_slice: Path
) -> None:
    write_config(isolated_home / "config.toml", v1_slice, 100 * MIB, default_prediction="10M")
    store = StateStore.open_default()
    runner = subprocess.Popen(
        [SWARMDECK, "run", "--", "sh", "-c", "(setsid sleep 300 &); exec sleep 301"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        _until(lambda: any(j.state == RUNNING for j in ledger_jobs(store)), "job never ran")
        [job] = [j for j in ledger_jobs(store) if j.state == RUNNING]
        cage = Path(job.cgroup or "")
        # Two members alone can still be the job's shell and the subshell that starts setsid.
        _until(lambda: _commands(cgroup_pids(cage)) == ["sleep", "sleep"],
               "both sleeps never were in the cage")
        escaped = next(pid for pid in cgroup_pids(cage) if pid != job.pid)
        escaped_ident = identity(escaped)
        assert escaped_ident is not None
        assert escaped not in _children(job.pid), "the setsid sleep is no child of the job"
        finding = Finding(
            id=1, key=f"output_not_growing:job{job.id}", rule="output_not_growing",
            subject=f"job #{job.id}", severity="warning", message="stalled", first_seen_at=0.0,
            last_seen_at=0.0, count=1, acknowledged_at=None, job_id=job.id, pid=job.pid,
            start_ticks=job.start_ticks,
        )
        request = request_kill(store, finding, "tester", time.time())
        assert {m.pid for m in stop_preview(store, request)} == {job.pid, escaped}
        outcome = approve(store, request.id, "tester", time.time(), grace=2.0)
        assert outcome.result == STOPPED and "and 1 more" in outcome.detail, outcome.detail
        _until(lambda: not escaped_ident.is_alive(), "the escaped process survived")
        runner.wait(timeout=DEADLINE)
    finally:
        end_session(runner.pid)
        if runner.poll() is None:
            runner.kill()
        runner.wait()


def _children(pid: int | None) -> list[int]:
    if pid is None:
        return []
    try:
        return [int(w) for w in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []

