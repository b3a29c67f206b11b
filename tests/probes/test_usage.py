"""Cores in use and threads computing at once, measured on real busy threads of one process."""

from __future__ import annotations

import itertools
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from busy_job import BUSY_THREADS, start_job
from swarmdeck.probes import procs, usage
from swarmdeck.probes.procs import ProcessIdentity, identity

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
QUOTA = 0.2
LOADED_FLOOR = 3.0
"""The least four busy threads read over a short window on a machine at a load of 13 (3.27
seen): still far from the one thread of a job with one busy thread."""
_counter = itertools.count()


def on_one_cpu(root: ProcessIdentity) -> None:
    """Pin every thread of the tree to one CPU. On one run queue the scheduler shares that CPU
    equally among them however loaded the machine is, so N busy threads really are equally
    busy; spread over CPUs, a thread alone on a quieter one runs more than its siblings until
    the scheduler rebalances, and the job honestly reads fewer threads at once."""
    cpu = min(os.sched_getaffinity(0))
    for pid in usage.process_tree(root):
        for tid in os.listdir(f"/proc/{pid}/task"):
            os.sched_setaffinity(int(tid), {cpu})


@pytest.fixture
def four_thread_job() -> Iterator[tuple[subprocess.Popen[str], ProcessIdentity]]:
    job = start_job(4)
    me = identity(job.pid)
    assert me is not None
    on_one_cpu(me)
    try:
        yield job, me
    finally:
        job.kill()
        job.wait()


@pytest.fixture
def cpu_quota() -> Iterator[Path]:
    """A v1 cpu cgroup limited to QUOTA of one core."""
    if not os.access(CPU_ROOT, os.W_OK):
        pytest.skip("needs a writable v1 cpu cgroup (root)")
    group = CPU_ROOT / f"swarmdeck-test-usage-{os.getpid()}-{next(_counter)}"
    group.mkdir()
    (group / "cpu.cfs_period_us").write_text("100000")
    (group / "cpu.cfs_quota_us").write_text(str(int(QUOTA * 100000)))
    try:
        yield group
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            (CPU_ROOT / "cgroup.procs").write_text(pid)
        group.rmdir()


def test_four_busy_threads_read_about_four_threads_at_once(four_thread_job) -> None:
    _, job = four_thread_job
    measured = usage.measure(job, window=1.5)
    assert measured.nanosecond
    assert measured.threads_seen == 5
    assert 3.5 <= measured.threads_at_once <= 4.05
    # Pinned to one CPU it computes on at most that one, whatever else runs there.
    assert 0.05 <= measured.cores_in_use <= 1.05


def test_throttled_job_reads_fewer_cores_but_still_four_threads(
    four_thread_job, cpu_quota: Path
) -> None:
    _, job = four_thread_job
    free = usage.measure(job, window=0.5)
    (cpu_quota / "cgroup.procs").write_text(str(job.pid))
    time.sleep(0.3)  # let the quota's first periods pass before the window opens
    throttled = usage.measure(job, window=1.5)
    # Against the quota, not against `free`: at a load of 13 on 2 cores the unthrottled job
    # itself got 0.06 cores, less than the quota allows.
    assert throttled.cores_in_use <= QUOTA * 1.25
    assert free.threads_at_once >= LOADED_FLOOR
    assert LOADED_FLOOR <= throttled.threads_at_once <= 4.05


def test_one_busy_thread_among_idle_ones_reads_one_thread_at_once() -> None:
    job = start_job(busy=1, idle=3)
    try:
        me = identity(job.pid)
        assert me is not None
        measured = usage.measure(me, window=0.5)
    finally:
        job.kill()
        job.wait()
    assert measured.threads_seen == 5
    assert 0.9 <= measured.threads_at_once <= 1.3


def test_child_processes_count_as_part_of_the_tree() -> None:
    parent = subprocess.Popen(
        ["sh", "-c", f'"{sys.executable}" -c "$0" 2 0; wait', BUSY_THREADS],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "ready\n"
        me = identity(parent.pid)
        assert me is not None
        assert len(usage.process_tree(me)) == 2
        on_one_cpu(me)
        measured = usage.measure(me, window=0.5)
    finally:
        for pid in usage.process_tree(me)[::-1]:
            os.kill(pid, 9)
        parent.wait()
    assert 1.75 <= measured.threads_at_once <= 2.05


def test_a_gone_root_reads_an_empty_tree() -> None:
    job = subprocess.Popen(["true"])
    me = identity(job.pid)
    job.wait()
    assert me is not None
    assert usage.process_tree(me) == []
    assert usage.measure(me, window=0.01).threads_at_once == 0.0


def test_a_reused_pid_is_not_the_job_tree() -> None:
    me = identity(os.getpid())
    assert me is not None
    impostor = ProcessIdentity(me.pid, me.start_ticks + 1)
    assert usage.process_tree(impostor) == []


def test_serial_marker_names_the_reason(tmp_path: Path) -> None:
    marker = tmp_path / "serial"
    assert usage.serial_reason(marker) is None
    marker.write_text("serial right now: linking the final binary\n")
    assert usage.serial_reason(marker) == "linking the final binary"
    marker.write_text("parallel again\n")
    assert usage.serial_reason(marker) is None
    assert usage.serial_reason(None) is None


def test_a_serial_marker_that_is_no_regular_file_gives_no_reason_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "serial"
    os.mkfifo(fifo)
    done = threading.Event()
    reasons: list[str | None] = []

    def read() -> None:
        reasons.append(usage.serial_reason(fifo))
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "reading a FIFO marker blocked the refresh"
    assert reasons == [None]
    os.unlink(fifo)
    (tmp_path / "serial").write_bytes(b"serial right now: " + b"x" * 8192)
    assert usage.serial_reason(tmp_path / "serial") is None


def test_tracker_gives_use_since_the_previous_snapshot(four_thread_job) -> None:
    _, job = four_thread_job
    tracker = usage.UsageTracker()
    followed = usage.Supervised(job)
    assert tracker.update({7: followed}) == {7: None}
    time.sleep(0.5)
    figure = tracker.update({7: followed})[7]
    assert figure is not None and LOADED_FLOOR <= figure.threads_at_once <= 4.05
    assert tracker.update({}) == {}
    assert tracker.update({7: followed}) == {7: None}
    # The same key now naming another process (a reused row, a restarted job) starts afresh.
    me = identity(os.getpid())
    assert me is not None
    assert tracker.update({7: usage.Supervised(me)}) == {7: None}


BUSY_AND_LIGHT = """
import hashlib, threading, time
busy, light = b"x" * (1 << 20), b"x" * (1 << 14)
def spin():
    while True:
        hashlib.sha256(busy).digest()
def now_and_then():
    while True:
        hashlib.sha256(light).digest()
        time.sleep(0.05)
threading.Thread(target=spin, daemon=True).start()
for _ in range(3):
    threading.Thread(target=now_and_then, daemon=True).start()
print("ready", flush=True)
time.sleep(60)
"""


def test_threads_that_compute_now_and_then_count_as_the_fraction_they_compute() -> None:
    """Three threads that wake for a moment every 50 ms beside one that never stops: about one
    thread at once, not four threads that used some CPU."""
    job = subprocess.Popen(
        [sys.executable, "-c", BUSY_AND_LIGHT], stdout=subprocess.PIPE, text=True
    )
    try:
        assert job.stdout is not None and job.stdout.readline() == "ready\n"
        me = identity(job.pid)
        assert me is not None
        # The main thread, still between its print and its sleep, must not count as computing.
        assert wait_for(lambda: main_thread_state(job.pid) == "S")
        first = usage.sample_tree(me)
        time.sleep(0.5)
        second = usage.sample_tree(me)
    finally:
        job.kill()
        job.wait()
    computing = [key for key, ns in second.cpu_ns.items() if ns > first.cpu_ns.get(key, 0)]
    assert len(computing) == 4
    assert 1.0 <= usage.usage_between(first, second).threads_at_once <= 1.5


def main_thread_state(pid: int) -> str | None:
    """The scheduler state (R, S, …) of a process's main thread."""
    stat = procs.read_stat(pid)
    return stat.state if stat is not None else None


def test_cores_text_for_a_job_row() -> None:
    figure = usage.Usage(1.94, 3.87, 5, 1.0, True)
    assert usage.cores_text(figure, 4, None) == "1.9 cores · 3.9/4 thr"
    assert usage.cores_text(figure, None, None) == "1.9 cores · 3.9 thr"
    assert usage.cores_text(None, None, "linking") == "serial: linking · …"


def test_a_caged_job_is_read_from_its_cage_not_its_tree(v1_cgroups) -> None:
    """What the cage lists is the job: a child that moved out of it is no longer counted."""
    cage, elsewhere = v1_cgroups(), v1_cgroups()
    leave = f"echo $$ > {elsewhere}/cgroup.procs; exec sleep 60"
    busy = f'"{sys.executable}" -c "$0" 2 1'
    job = subprocess.Popen(
        ["sh", "-c", f"sh -c {shlex.quote(leave)} & {busy} & wait", BUSY_THREADS],
        stdout=subprocess.PIPE, text=True,
        preexec_fn=lambda: (cage / "cgroup.procs").write_text(str(os.getpid())),
    )
    me = identity(job.pid)
    try:
        assert me is not None
        assert job.stdout is not None and job.stdout.readline() == "ready\n"
        assert wait_for(lambda: len((elsewhere / "cgroup.procs").read_text().split()) == 1)
        tracker = usage.UsageTracker()
        caged = usage.Supervised(me, cage)
        assert tracker.update({1: caged}) == {1: None}
        # On a loaded machine the busy threads may get little of one short window (0.03 of a
        # core in one `make test` run): the next windows, as the next refreshes, show them.
        for _ in range(10):
            time.sleep(0.3)
            figure = tracker.update({1: caged})[1]
            if figure is None or figure.cores_in_use > 0.1:
                break
        whole_tree = usage.sample_tree(me)
    finally:
        for pid in usage.process_tree(me)[::-1] if me else []:
            os.kill(pid, 9)
        job.wait()
    assert figure is not None
    assert figure.threads_seen == 5, "the shell, and the busy job's main, two busy, one idle"
    assert len(whole_tree.cpu_ns) == 6, "the tree still holds the one that left"
    assert figure.cores_in_use > 0.1


def test_a_job_without_a_cage_is_followed_from_its_root_as_it_forks_and_ends() -> None:
    parent = subprocess.Popen(
        ["sh", "-c", "read line; sleep 60 & echo forked; read line; kill $!; echo ended; wait"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert parent.stdin is not None and parent.stdout is not None
    try:
        me = identity(parent.pid)
        assert me is not None
        follower = usage.TreeFollower(me)
        assert follower.pids(procs.fork_count()) == [parent.pid]
        parent.stdin.write("go\n")
        parent.stdin.flush()
        assert parent.stdout.readline() == "forked\n"
        grown = follower.pids(procs.fork_count())
        assert len(grown) == 2 and grown[0] == parent.pid
        parent.stdin.write("go\n")
        parent.stdin.flush()
        assert parent.stdout.readline() == "ended\n"
        assert wait_for(lambda: follower.pids(procs.fork_count()) == [parent.pid])
    finally:
        parent.kill()
        parent.wait()
    assert follower.pids(procs.fork_count()) == []


def test_a_followed_tree_is_not_read_again_while_nothing_forked_or_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = subprocess.Popen(["sh", "-c", "sleep 60 & echo ready; wait"], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None and parent.stdout.readline()
        me = identity(parent.pid)
        assert me is not None
        reads: list[int] = []
        children_of = procs.children_of
        monkeypatch.setattr(
            procs, "children_of", lambda pid: reads.append(pid) or children_of(pid)
        )
        follower = usage.TreeFollower(me)
        tree = follower.pids(41)
        assert len(tree) == 2 and len(reads) == 2
        assert follower.pids(41) == tree and len(reads) == 2, "same fork count: the cached map"
        assert follower.pids(42) == tree and len(reads) == 4, "something forked: read again"
    finally:
        parent.kill()
        parent.wait()


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
