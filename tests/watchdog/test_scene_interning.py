"""A watchdog pass reads each running job's cage by its string path: parsed as a Path, a cage's
name was interned anew at every pass (tests/interned.py says why that costs memory)."""

from __future__ import annotations

import time
from pathlib import Path

from scene_kit import caged_job

from interned import interned_names
from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.watchdog.scene import supervised_processes


def test_a_pass_interns_no_running_jobs_cage_name(store, processes, own_slice: Path) -> None:
    proc = processes("sleep", "300")
    job_id = caged_job(store, own_slice, proc.pid, started_at=time.time())
    [job] = [job for job in ledger_jobs(store, local_host_name()) if job.id == job_id]
    assert job.cgroup is not None
    with interned_names() as interned:
        members = supervised_processes([job], [])
    assert [member.pid for member in members] == [proc.pid]
    assert job.cgroup.rsplit("/", 1)[1] not in interned
