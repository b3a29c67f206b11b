"""The demo's jobs hold still while a person reads the README and tries each step: only the job
that grows into its cap ends on its own, the queued job stays queued until the person kills the
idle job (the README's `k`) or moves it (`m`), and no label names a state the job can leave."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from swarmdeck.demo.jobs import SLICE_MIB, demo_jobs, job_checkout
from swarmdeck.ledger.schema import ACTIVE, ADMITTED, DONE, LOST, MOVED, QUEUED, REFUSED, RUNNING

SLICE_OWN_MIB = 16
"""What the slice holds besides its jobs' bookings (kernel memory, a runner's pages; seen at
1-2 MiB), with room to spare."""


def _by_mode(mode: str):
    return next(spec for spec in demo_jobs() if spec.mode == mode and not spec.queued)


def test_the_queued_job_waits_until_the_idle_job_is_killed() -> None:
    queued = next(spec for spec in demo_jobs() if spec.queued)
    held = sum(spec.cap_mib for spec in demo_jobs() if spec.mode != "grow" and not spec.queued)
    assert held + queued.cap_mib > SLICE_MIB, "it would start once the growing job has ended"
    freed = held - _by_mode("idle").cap_mib
    assert freed + queued.cap_mib + SLICE_OWN_MIB <= SLICE_MIB, "the kill would not start it"


def test_no_label_names_a_state_the_job_can_leave() -> None:
    states = {*ACTIVE, ADMITTED, RUNNING, DONE, LOST, REFUSED, MOVED, QUEUED, "killed", "waiting"}
    for spec in demo_jobs():
        assert not set(re.findall(r"[a-z]+", spec.label.lower())) & states, spec.label


def test_only_the_growing_workload_ends_on_its_own(tmp_path: Path) -> None:
    """The growing one stops itself at its limit; the idle and busy ones are given no end and
    still run when it has."""
    checkout = job_checkout(tmp_path / "jobs")
    started = {
        mode: subprocess.Popen(
            _by_mode(mode).workload(limit_mib=16),
            cwd=checkout,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for mode in ("idle", "busy", "grow")
    }
    try:
        said, _ = started["grow"].communicate(timeout=30)
        assert started["grow"].returncode == 1 and "stopping at 16 MiB" in said, said
        time.sleep(1.0)
        assert started["idle"].poll() is None and started["busy"].poll() is None
    finally:
        for process in started.values():
            process.kill()
            process.communicate()
