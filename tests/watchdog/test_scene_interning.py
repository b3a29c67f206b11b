"""A watchdog pass reads each running job's cage by its string path: pathlib interns each part
of a path it parses, and a cage's name interned anew at every pass keeps replacing entries in
the interpreter's table of interned strings, which is reallocated whole each time its deleted
entries use it up: the control room's resident memory steps up with each (issue 36)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from scene_kit import caged_job

from swarmdeck.probes.machine import local_host_name
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.watchdog.scene import supervised_processes


def test_a_pass_interns_no_running_jobs_cage_name(
    store, processes, own_slice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = processes("sleep", "300")
    job_id = caged_job(store, own_slice, proc.pid, started_at=time.time())
    [job] = [job for job in ledger_jobs(store, local_host_name()) if job.id == job_id]
    assert job.cgroup is not None
    interned: list[str] = []
    real = sys.intern

    def noted(text: str) -> str:
        interned.append(text)
        return real(text)

    with monkeypatch.context() as patch:
        patch.setattr(sys, "intern", noted)
        members = supervised_processes([job], [])
    assert [member.pid for member in members] == [proc.pid]
    assert job.cgroup.rsplit("/", 1)[1] not in interned
