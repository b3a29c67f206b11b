"""Cores in use and threads computing at once, measured on real busy threads of one process."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from busy_job import BUSY_THREADS, start_job
from swarmdeck.probes import usage
from swarmdeck.probes.procs import ProcessIdentity, identity

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
_counter = itertools.count()

@pytest.fixture
def four_thread_job() -> Iterator[tuple[subprocess.Popen[str], ProcessIdentity]]:
    job = start_job(4)
    me = identity(job.pid)
    assert me is not None
    try:
        yield job, me
    finally:
        job.kill()
        job.wait()


@pytest.fixture
def cpu_quota() -> Iterator[Path]:
    """A v1 cpu cgroup limited to 0.4 of one core."""
    if not os.access(CPU_ROOT, os.W_OK):
        pytest.skip("needs a writable v1 cpu cgroup (root)")
    group = CPU_ROOT / f"swarmdeck-test-usage-{os.getpid()}-{next(_counter)}"
    group.mkdir()
    (group / "cpu.cfs_period_us").write_text("100000")
    (group / "cpu.cfs_quota_us").write_text("40000")
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
    # Other work on these 2 shared cores can favour one thread a little; "about 4" it is.
    assert 3.0 <= measured.threads_at_once <= 4.05
    assert 0.3 <= measured.cores_in_use <= os.cpu_count() + 0.1


def test_throttled_job_reads_fewer_cores_but_still_four_threads(
    four_thread_job, cpu_quota: Path
) -> None:
    _, job = four_thread_job
    free = usage.measure(job, window=0.5)
    (cpu_quota / "cgroup.procs").write_text(str(job.pid))
    time.sleep(0.3)  # let the quota's first periods pass before the window opens
    throttled = usage.measure(job, window=1.5)
    assert throttled.cores_in_use <= 0.55
    assert throttled.cores_in_use < free.cores_in_use
    assert 3.0 <= throttled.threads_at_once <= 4.05


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
        measured = usage.measure(me, window=0.5)
    finally:
        for pid in usage.process_tree(me)[::-1]:
            os.kill(pid, 9)
        parent.wait()
    assert 1.6 <= measured.threads_at_once <= 2.05


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


def test_tracker_gives_use_since_the_previous_snapshot(four_thread_job) -> None:
    _, job = four_thread_job
    tracker = usage.UsageTracker()
    assert tracker.update({7: job}) == {7: None}
    time.sleep(0.5)
    figure = tracker.update({7: job})[7]
    assert figure is not None and 3.0 <= figure.threads_at_once <= 4.05
    assert tracker.update({}) == {}
    assert tracker.update({7: job}) == {7: None}


def test_cores_text_for_a_job_row() -> None:
    figure = usage.Usage(1.94, 3.87, 5, 1.0, True)
    assert usage.cores_text(figure, 4, None) == "1.9 cores · 3.9/4 thr"
    assert usage.cores_text(figure, None, None) == "1.9 cores · 3.9 thr"
    assert usage.cores_text(None, None, "linking") == "serial: linking · …"
