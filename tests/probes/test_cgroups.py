"""Who is inside a cage, read from its cgroup's own lists, against real v1 memory cgroups."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from swarmdeck.probes.cgroups import cage_members

THREAD_POOL = """
import concurrent.futures, threading, time
pool = concurrent.futures.ThreadPoolExecutor(4)
started = threading.Barrier(5)
for _ in range(4):
    pool.submit(lambda: (started.wait(), time.sleep(60)))
started.wait()
print("ready", flush=True)
time.sleep(60)
"""


def joining(cgroup: Path) -> Callable[[], None]:
    """Run in the child before exec: enter `cgroup`."""
    return lambda: (cgroup / "cgroup.procs").write_text(str(os.getpid()))


@contextmanager
def started(argv: list[str], cgroup: Path) -> Iterator[subprocess.Popen[str]]:
    """A process started inside `cgroup`, returned once it printed its first line."""
    job = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, preexec_fn=joining(cgroup),
        start_new_session=True,
    )
    try:
        assert job.stdout is not None and job.stdout.readline()
        yield job
    finally:
        job.kill()
        job.wait()


def children(pid: int) -> set[int]:
    return {int(word) for word in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def test_a_job_that_forks_is_listed_with_every_child(v1_cgroups) -> None:
    cage = v1_cgroups()
    with started(["sh", "-c", "sleep 60 & sleep 60 & echo ready; wait"], cage) as job:
        members = cage_members(cage)
        forked = children(job.pid)
    assert members is not None
    assert len(forked) == 2
    assert set(members.pids) == {job.pid, *forked}
    assert set(members.tids) == set(members.pids), "three single-threaded processes"


def test_every_thread_of_a_thread_pool_is_listed(v1_cgroups) -> None:
    cage = v1_cgroups()
    with started([sys.executable, "-c", THREAD_POOL], cage) as job:
        members = cage_members(cage)
        threads = {int(tid) for tid in os.listdir(f"/proc/{job.pid}/task")}
    assert members is not None
    assert members.pids == (job.pid,)
    assert set(members.tids) == threads and len(threads) == 5


def test_a_process_that_leaves_its_cage_is_not_counted(v1_cgroups) -> None:
    cage, elsewhere = v1_cgroups(), v1_cgroups()
    leave = f"echo $$ > {elsewhere}/cgroup.procs; echo left; exec sleep 60"
    script = f"sleep 60 & sh -c {shlex.quote(leave)} & wait"
    with started(["sh", "-c", script], cage) as job:
        members = cage_members(cage)
        outside = cage_members(elsewhere)
        forked = children(job.pid)
    assert members is not None and outside is not None
    assert len(outside.pids) == 1 and set(outside.pids) < forked, "the leaver is elsewhere"
    assert set(members.pids) == {job.pid, *(forked - set(outside.pids))}
    assert not set(outside.tids) & set(members.tids)


def test_a_cgroup_the_job_made_inside_its_cage_still_counts(v1_cgroups) -> None:
    cage = v1_cgroups()
    inner = cage / "inner"
    inner.mkdir()
    sleeper = ["sh", "-c", "echo ready; exec sleep 60"]
    with started(sleeper, cage) as outer_job, started(sleeper, inner) as nested:
        members = cage_members(cage)
    assert members is not None
    assert set(members.pids) == {outer_job.pid, nested.pid}


def test_a_cage_that_is_gone_reads_as_none(v1_cgroups) -> None:
    cage = v1_cgroups()
    cage.rmdir()
    assert cage_members(cage) is None


def test_the_configured_slice_is_worked_out_once_not_parsed_at_every_refresh() -> None:
    """The memory book asks for the slice's path at every refresh; pathlib interned its name
    anew each time (tests/interned.py says why that costs memory)."""
    from interned import interned_names
    from swarmdeck.probes.cgroups import configured_path

    root = "/sys/fs/cgroup/memory"
    assert configured_path("swarmdeck-once", root) == f"{root}/swarmdeck-once"
    assert configured_path(f"{root}/swarmdeck-once/", root) == f"{root}/swarmdeck-once"
    with interned_names() as interned:
        assert configured_path("swarmdeck-once", root) == f"{root}/swarmdeck-once"
    assert interned == []
