"""The snapshot as `status --json`, the app and the hooks read it, taken on this real host."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from busy_job import BUSY_THREADS, busy_job
from ledger_rows import add_job
from swarmdeck.config import load_config
from swarmdeck.probes import cgroups, procs
from swarmdeck.probes.procs import start_ticks
from swarmdeck.probes.usage import UsageTracker
from swarmdeck.snapshot import reconciled_snapshot, take_snapshot
from swarmdeck.state import StateStore


def add_running_job(
    store: StateStore, pid: int, threads: int, marker: Path, cgroup: Path | None = None
) -> int:
    return add_job(
        store, label="hashing", pid=pid, start_ticks=start_ticks(pid), threads=threads,
        serial_marker_path=str(marker), booked=1, cap=2, started_at=time.time(),
        cgroup=str(cgroup) if cgroup else None,
    )


def job_json(snapshot: dict, job_id: int) -> dict:
    (job,) = [job for job in snapshot["jobs"] if job["id"] == job_id]
    return job


def test_a_running_job_has_cores_figures_from_the_second_snapshot_on(
    isolated_home: Path,
) -> None:
    store = StateStore.open_default()
    config = load_config()
    tracker = UsageTracker()
    marker = isolated_home / "job.serial"
    with busy_job(2) as job:
        job_id = add_running_job(store, job.pid, 2, marker)
        first = job_json(take_snapshot(config, store, usage=tracker).to_json(), job_id)
        assert first["cores_in_use"] is None and first["threads_at_once"] is None
        time.sleep(0.5)
        marker.write_text("serial right now: linking\n")
        second = take_snapshot(config, store, usage=tracker).to_json()
        alone = job_json(take_snapshot(config, store).to_json(), job_id)
    job_row = job_json(json.loads(json.dumps(second)), job_id)
    assert job_row["pid"] == job.pid and job_row["threads"] == 2
    assert job_row["serial_marker_path"] == str(marker)
    # How many cores a busy job gets depends on the machine's load (tests/probes/test_usage.py
    # measures the figures on pinned threads): here only that they are there and physical.
    assert 0 < job_row["cores_in_use"] <= 2.1
    assert 0 < job_row["threads_at_once"] <= 2.05
    assert job_row["serial_reason"] == "linking"
    assert alone["cores_in_use"] is None, "no tracker, no window, no figure"


class UnlistableProc:
    """A /proc root that finds any one process (its readers name files as f"{PROC}/…") but fails
    loudly when anything lists it."""

    def __str__(self) -> str:
        return "/proc"

    def __fspath__(self) -> str:
        raise AssertionError("the refresh listed all of /proc")


def refuse_listing_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the /proc root at UnlistableProc, and make listing the real one by name fail too."""
    monkeypatch.setattr(procs, "PROC", UnlistableProc())
    for name in ("listdir", "scandir"):
        real = getattr(os, name)

        def refusing(path: object = ".", _real=real) -> object:
            if os.path.normpath(os.fsdecode(path)) == "/proc":  # type: ignore[arg-type]
                raise AssertionError("the refresh listed all of /proc")
            return _real(path)

        monkeypatch.setattr(os, name, refusing)


@contextmanager
def caged_busy_job(cgroup: Path) -> Iterator[subprocess.Popen[str]]:
    job = subprocess.Popen(
        [sys.executable, "-c", BUSY_THREADS, "1", "0"], stdout=subprocess.PIPE, text=True,
        preexec_fn=lambda: (cgroup / "cgroup.procs").write_text(str(os.getpid())),
    )
    try:
        assert job.stdout is not None and job.stdout.readline() == "ready\n"
        yield job
    finally:
        job.kill()
        job.wait()


def test_a_refresh_with_every_job_caged_never_lists_proc(
    isolated_home: Path, v1_cgroups, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh costs what is supervised: every caged job is read from its cgroup's lists."""
    store = StateStore.open_default()
    config = load_config()
    tracker = UsageTracker()
    cages = [v1_cgroups(), v1_cgroups()]
    with caged_busy_job(cages[0]) as first, caged_busy_job(cages[1]) as second:
        ids = [
            add_running_job(store, job.pid, 1, isolated_home / f"{job.pid}.serial", cage)
            for job, cage in zip((first, second), cages, strict=True)
        ]
        with monkeypatch.context() as patch:
            refuse_listing_proc(patch)
            take_snapshot(config, store, usage=tracker)
            time.sleep(0.3)
            snapshot = take_snapshot(config, store, usage=tracker).to_json()
    for job_id in ids:
        row = job_json(snapshot, job_id)
        assert row["state"] == "running"
        assert row["cores_in_use"] is not None and row["cores_in_use"] > 0
        assert 0 < row["threads_at_once"] <= 1.1


def test_a_refresh_reads_no_kernel_file_twice(
    isolated_home: Path, v1_cgroups, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the app's refresh reads of /proc and of the cages, each file once: checking a
    runner for the reconcile and again for the row, or a cage twice, costs a refresh per job."""
    store = StateStore.open_default()
    config = load_config()
    tracker = UsageTracker()
    cages = [v1_cgroups(), v1_cgroups()]
    with caged_busy_job(cages[0]) as first, caged_busy_job(cages[1]) as second:
        for job, cage in zip((first, second), cages, strict=True):
            add_job(store, label="hashing", pid=job.pid, start_ticks=start_ticks(job.pid),
                    runner_pid=job.pid, runner_start_ticks=start_ticks(job.pid),
                    started_at=time.time(), cgroup=str(cage))
        reconciled_snapshot(config, store, usage=tracker)
        read: Counter[str] = Counter()
        proc_bytes, cage_bytes = procs.read_bytes, cgroups.read_bytes

        def counted_proc(path: str) -> bytes | None:
            # A process's stat line, however it is read (whole, or its start ticks alone).
            if re.fullmatch(r".*/\d+/stat", path):
                read[path] += 1
            return proc_bytes(path)

        def counted_cage(path: str) -> bytes | None:
            read[path] += 1
            return cage_bytes(path)

        monkeypatch.setattr(procs, "read_bytes", counted_proc)
        monkeypatch.setattr(cgroups, "read_bytes", counted_cage)
        snapshot = reconciled_snapshot(config, store, usage=tracker)
    assert [job.state for job in snapshot.jobs] == ["running", "running"]
    assert any(str(cages[0]) in path for path in read), read
    assert any(path.endswith(f"/{first.pid}/stat") for path in read), read
    assert [path for path, times in read.items() if times > 1] == []


def test_a_snapshot_reads_the_state_file_in_one_read(isolated_home: Path) -> None:
    """One consistent read for the whole snapshot, not one per part (ledger, book, alerts,
    findings, kill requests, hooks): each read is four statements of its own."""
    store = StateStore.open_default()
    add_job(store, label="j")
    statements: list[str] = []
    store.connect().set_trace_callback(statements.append)
    take_snapshot(load_config(), store)
    store.connect().set_trace_callback(None)
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN DEFERRED"], statements


class MeminfoCounting:
    """The real kernel files, counting each time a reader opens meminfo (every reader goes
    through procs.proc_text("meminfo"): procs.read_meminfo is the one reader of it)."""

    def __init__(self, real: Callable[[str], str]) -> None:
        self.real = real
        self.meminfo_reads = 0

    def __call__(self, name: str) -> str:
        if name == "meminfo":
            self.meminfo_reads += 1
        return self.real(name)


@pytest.mark.parametrize("take", [take_snapshot, reconciled_snapshot])
def test_a_snapshot_reads_meminfo_once(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, take
) -> None:
    """The host's memory, the slice's cap and the memory book are figures of one reading."""
    store = StateStore.open_default()
    config = load_config()
    with busy_job(1) as job:
        add_running_job(store, job.pid, 1, isolated_home / "job.serial")
        counting = MeminfoCounting(procs.proc_text)
        monkeypatch.setattr(procs, "proc_text", counting)
        snapshot = take(config, store)
    assert counting.meminfo_reads == 1
    [book] = snapshot.books
    assert book.mem_total == snapshot.hosts[0].memory.total
