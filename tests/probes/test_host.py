"""The host probe: busy cores from /proc/stat deltas, memory from /proc/meminfo, threads left."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledger_rows import insert_job
from swarmdeck.config import load_config
from swarmdeck.probes.host import (
    CpuSampler,
    CpuTimes,
    busy_fraction,
    host_snapshot,
    local_host_name,
    parse_cpu_times,
    parse_meminfo,
)
from swarmdeck.state import StateStore


def test_busy_fraction_counts_everything_but_idle_and_iowait() -> None:
    before = parse_cpu_times("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n")
    after = parse_cpu_times("cpu  200 0 200 800 100 0 0 0 0 0\n")
    assert before == CpuTimes(busy=200, total=1000)
    assert busy_fraction(before, after) == pytest.approx(200 / 300)


def test_busy_fraction_is_unknown_when_no_time_passed() -> None:
    same = CpuTimes(busy=5, total=10)
    assert busy_fraction(same, same) is None


def test_meminfo_is_read_in_bytes() -> None:
    fields = parse_meminfo("MemTotal:       1000 kB\nMemAvailable:    250 kB\nHugePages_Total: 0\n")
    assert fields == {"MemTotal": 1024000, "MemAvailable": 256000, "HugePages_Total": 0}


def test_a_cpu_hog_shows_as_a_busy_core() -> None:
    sampler = CpuSampler()
    config = load_config()
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        sampler.sample()
        time.sleep(1.0)
        snapshot = host_snapshot(config, None, sampler)
    finally:
        hog.kill()
        hog.wait()
    assert snapshot.cores.busy_cores is not None
    assert snapshot.cores.busy_cores >= 0.8


def test_first_sample_has_no_busy_figure_yet() -> None:
    snapshot = host_snapshot(load_config(), None, CpuSampler())
    assert snapshot.cores.busy_fraction is None
    assert snapshot.to_json()["busy_cores"] is None


def test_memory_and_slice_cap_follow_the_reserve(isolated_home) -> None:
    (isolated_home / "config.toml").write_text('[memory]\nreserve = "1G"\n')
    snapshot = host_snapshot(load_config(), None, None)
    meminfo = parse_meminfo(Path("/proc/meminfo").read_text())
    assert snapshot.memory.total == meminfo["MemTotal"]
    assert snapshot.memory.reserve == 1 << 30
    assert snapshot.memory.slice_cap == meminfo["MemTotal"] - (1 << 30)
    assert 0 < snapshot.memory.available <= snapshot.memory.total


def test_threads_declared_by_running_jobs_reduce_threads_free(isolated_home) -> None:
    (isolated_home / "config.toml").write_text("[cores]\nheavy_threads = 16\n")
    store = StateStore.open_default()
    host = local_host_name()
    with store.transaction() as conn:
        for state, threads in (("running", 4), ("running", 6), ("done", 8)):
            insert_job(conn, label=f"job-{state}-{threads}", host=host, state=state,
                       threads=threads)
    cores = host_snapshot(load_config(), store, None).cores
    assert cores.heavy_threads == 16
    assert cores.threads_declared == 10
    assert cores.threads_free == 6
