"""The memory book read from a real v1 slice, real processes in cages and a real state file."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger_rows import add_job as add_ledger_job
from swarmdeck.config import load_config
from swarmdeck.probes.cgroups import read_hierarchies
from swarmdeck.probes.memory_book import ledger_jobs, memory_book, not_yet_grown
from swarmdeck.probes.procs import own_identity
from swarmdeck.state import StateStore

MIB = 1 << 20
SLICE_CAP = 200 * MIB
_names = itertools.count()
HOLD = (
    "import sys,time;b=bytearray(20<<20);b[::4096]=b'\\1'*len(range(0,20<<20,4096));"
    "print(1,flush=True);time.sleep(600)"
)


def mem_total() -> int:
    line = next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemT"))
    return int(line.split()[1]) * 1024


def remove_cgroup_tree(path: Path) -> None:
    """Kill whatever is left in a test cgroup and remove it, children first; raise if it stays."""
    if not path.exists():
        return
    for cgroup in [*sorted((p for p in path.rglob("*") if p.is_dir()), reverse=True), path]:
        for _ in range(250):
            if not cgroup.exists():
                break
            for pid in (cgroup / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            try:
                cgroup.rmdir()
                break
            except OSError:
                time.sleep(0.02)
        else:
            cgroup.rmdir()


@pytest.fixture
def slice_dir(isolated_home: Path) -> Iterator[Path]:
    """A slice of this test's own at the hierarchy's root, removed with all it holds afterwards.

    A leftover of the same name (an earlier run with this pid, killed before its clean-up) is
    cleared first.
    """
    mount = read_hierarchies().v1_memory
    if mount is None or not os.access(mount, os.W_OK):
        pytest.skip("needs a writable cgroup v1 memory hierarchy")
    root = Path(mount)
    path = root / f"swarmdeck-ledger-test-{os.getpid()}-{next(_names)}"
    outside = root / f"{path.name}-outside"
    remove_cgroup_tree(path)
    remove_cgroup_tree(outside)
    path.mkdir()
    (isolated_home / "config.toml").write_text(
        f'[memory]\nslice = "{path}"\nreserve = "{mem_total() - SLICE_CAP}B"\nmargin = "1M"\n'
    )
    try:
        yield path
    finally:
        remove_cgroup_tree(outside)
        remove_cgroup_tree(path)


@contextlib.contextmanager
def holding_20m(cage: Path) -> Iterator[None]:
    """A process in `cage` really holding 20 MiB while the block runs; killed after it."""
    holder = subprocess.Popen(
        [sys.executable, "-S", "-c", HOLD], stdout=subprocess.PIPE,
        preexec_fn=lambda: (cage / "cgroup.procs").write_text(str(os.getpid())),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline()
        yield
    finally:
        holder.kill()
        holder.communicate()


def add_job(store: StateStore, state: str, booked: int, cgroup: Path | None,
            runner_pid: int, runner_ticks: int) -> int:
    return add_ledger_job(
        store, label=f"job-{state}", state=state, booked=booked, cap=2 * booked,
        cgroup=str(cgroup) if cgroup else None, runner_pid=runner_pid,
        runner_start_ticks=runner_ticks, started_at=time.time(),
    )


def test_not_yet_grown_counts_only_what_is_booked_beyond_current_use() -> None:
    assert not_yet_grown([(100, 30), (50, 80), (10, 10)]) == 70


def test_the_book_counts_what_caged_jobs_hold_and_what_they_may_still_grow(
    slice_dir: Path, isolated_home: Path
) -> None:
    store = StateStore.open_default()
    me = own_identity()
    cage = slice_dir / "job-1"
    cage.mkdir()
    with holding_20m(cage):
        add_job(store, "running", 60 * MIB, cage, me.pid, me.start_ticks)
        add_job(store, "admitted", 30 * MIB, None, me.pid, me.start_ticks)
        add_job(store, "queued", 500 * MIB, None, me.pid, me.start_ticks)
        book = memory_book(load_config(), store)
    assert book.backend == "cgroup-v1" and book.slice_path == str(slice_dir)
    assert book.placement == "configured" and book.problem == ""
    assert book.slice_cap == SLICE_CAP
    assert 20 * MIB <= book.unreclaimable < 40 * MIB
    running = next(job for job in book.jobs if job.state == "running")
    assert running.current is not None and 20 * MIB <= running.current < 40 * MIB
    assert book.not_yet_grown == 60 * MIB - running.current + 30 * MIB
    assert book.room == SLICE_CAP - book.unreclaimable - book.not_yet_grown
    assert [job.state for job in book.jobs] == ["running", "admitted"]
    assert book.to_json()["room"] == book.room


def test_a_running_job_with_no_cage_here_has_no_current_use_not_zero(
    slice_dir: Path, isolated_home: Path
) -> None:
    """A job on a peer (its cage is there) or one whose cage is not made yet."""
    store = StateStore.open_default()
    me = own_identity()
    add_job(store, "running", 60 * MIB, None, me.pid, me.start_ticks)
    add_job(store, "running", 60 * MIB, slice_dir / "never-made", me.pid, me.start_ticks)
    jobs = ledger_jobs(store)
    assert [job.current for job in jobs] == [None, None]
    book = memory_book(load_config(), store)
    assert book.not_yet_grown == 2 * 60 * MIB


def test_what_jobs_were_read_to_hold_counts_even_when_the_slice_reads_less(
    slice_dir: Path, isolated_home: Path
) -> None:
    """The cage is read before the slice; memory freed in between is not room yet.

    Stand-in for that race: the job's cage sits outside the slice, so the slice reads empty.
    """
    store = StateStore.open_default()
    me = own_identity()
    cage = slice_dir.parent / f"{slice_dir.name}-outside"
    cage.mkdir()
    with holding_20m(cage):
        add_job(store, "running", 10 * MIB, cage, me.pid, me.start_ticks)
        book = memory_book(load_config(), store)
    assert book.unreclaimable >= 20 * MIB
    assert book.room <= SLICE_CAP - 20 * MIB


def test_a_job_whose_runner_died_is_reported_stale_and_left_as_it_is(
    slice_dir: Path, isolated_home: Path
) -> None:
    store = StateStore.open_default()
    gone = subprocess.Popen(["true"])
    gone.wait()
    job_id = add_job(store, "running", 10 * MIB, None, gone.pid, 1)
    me = own_identity()
    live_id = add_job(store, "running", 10 * MIB, None, me.pid, me.start_ticks)
    jobs = {job.id: job for job in ledger_jobs(store)}
    assert jobs[job_id].stale and jobs[job_id].runner_alive is False
    assert not jobs[live_id].stale
    with store.read() as conn:
        states = [row[0] for row in conn.execute("SELECT state FROM jobs ORDER BY id")]
    assert states == ["running", "running"]


def test_the_jobs_list_shows_active_jobs_then_recent_finished_ones(
    slice_dir: Path, isolated_home: Path
) -> None:
    store = StateStore.open_default()
    me = own_identity()
    finished = add_job(store, "done", MIB, None, me.pid, me.start_ticks)
    active = add_job(store, "running", MIB, None, me.pid, me.start_ticks)
    jobs = ledger_jobs(store)
    assert [job.id for job in jobs] == [active, finished]
    assert jobs[1].current is None and jobs[1].runner_alive is None
    assert jobs[0].to_json()["runtime"] is not None


def test_a_host_where_no_cage_can_be_set_up_says_why(isolated_home: Path) -> None:
    (isolated_home / "config.toml").write_text(
        f'[memory]\nslice = "{isolated_home / "nowhere" / "slice"}"\n'
    )
    book = memory_book(load_config(), StateStore.open_default())
    assert book.backend == "" and "cgroup-v1" in book.problem
    assert book.unreclaimable == 0
