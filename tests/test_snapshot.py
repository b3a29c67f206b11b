"""The snapshot as `status --json`, the app and the hooks read it, taken on this real host."""

from __future__ import annotations

import json
import time
from pathlib import Path

from busy_job import busy_job
from ledger_rows import add_job
from swarmdeck.config import load_config
from swarmdeck.probes.procs import start_ticks
from swarmdeck.probes.usage import UsageTracker
from swarmdeck.snapshot import take_snapshot
from swarmdeck.state import StateStore


def add_running_job(store: StateStore, pid: int, threads: int, marker: Path) -> int:
    return add_job(
        store, label="hashing", pid=pid, start_ticks=start_ticks(pid), threads=threads,
        serial_marker_path=str(marker), booked=1, cap=2, started_at=time.time(),
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
    assert 0.3 <= job_row["cores_in_use"] <= 2.1
    assert 1.5 <= job_row["threads_at_once"] <= 2.05
    assert job_row["serial_reason"] == "linking"
    assert alone["cores_in_use"] is None, "no tracker, no window, no figure"
