"""The demo's runner where no memory cage can be set up: `python -m swarmdeck.demo.uncaged SPEC`.

`swarmdeck run` never runs a job uncapped (it exits 251). The demo still wants its jobs on
screen on such a machine, so this runner books a job on the ledger as `swarmdeck run` would,
runs it as a plain process labelled "(uncaged)" so nobody mistakes it for a caged one, and
closes its row with the exit code. Only the demo uses it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from swarmdeck import paths
from swarmdeck.actions.admission import JobRow, NotAdmittedError, admit
from swarmdeck.actions.booking import Booking, Via
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.jobrecord import Ending, mark_running, record_end
from swarmdeck.config import load_config
from swarmdeck.demo.jobs import MIB, JobSpec
from swarmdeck.durations import MAX_SECONDS
from swarmdeck.probes.machine import local_host_name, mem_total
from swarmdeck.probes.memory_book import slice_facts
from swarmdeck.probes.procs import ProcessIdentity, own_identity, start_ticks
from swarmdeck.state import StateStore

UNCAGED = " (uncaged)"


class _Stop(Exception):
    """TERM, INT or HUP: stop the job and close its row."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop(signum)


def run_uncaged(spec: JobSpec) -> int:
    """Book `spec` on the ledger, run its workload uncaged, record how it ended."""
    config = load_config()
    store = StateStore.open_default()
    cwd = Path.cwd()
    workload = spec.workload(limit_mib=spec.cap_mib)
    cap = spec.cap_mib * MIB
    row = JobRow(
        label=spec.label + UNCAGED,
        host=local_host_name(),
        fingerprint=fingerprint(workload, cwd),
        argv=workload,
        cwd=cwd,
        runner=own_identity(),
        booking=Booking(booked=cap, cap=cap, via=Via.CAP, oom_score_adj=0),
        threads=spec.threads,
        detached=False,
        timeout=None,
    )
    no_cage = Path(paths.state_dir()) / "uncaged"
    try:
        admission = admit(
            store, row, slice_facts(config, mem_total()), lambda job_id: no_cage / str(job_id),
            MAX_SECONDS, lambda line: print(f"swarmdeck demo: {line}", flush=True),
        )
    except NotAdmittedError as error:
        print(f"swarmdeck demo: {error.message}", flush=True)
        return int(error.exit_code)
    started = time.monotonic()
    child = subprocess.Popen(workload, stdin=subprocess.DEVNULL)
    ticks = start_ticks(child.pid)
    assert ticks is not None, "an unreaped child always has a stat line"
    mark_running(store, admission.job_id, ProcessIdentity(child.pid, ticks), None)
    outcome = ""
    try:
        code = child.wait()
    except _Stop as stop:
        child.terminate()
        code = child.wait()
        outcome = f"stopped: runner got {signal.Signals(stop.args[0]).name}"
    if code < 0:
        code = 128 - code
    if not outcome:
        outcome = "ok" if code == 0 else f"exit {code}"
    ending = Ending(code, outcome + ", uncaged", None, None, False, time.monotonic() - started)
    record_end(store, admission.job_id, row.fingerprint, cap, ending)
    store.close()
    return code


def main(argv: list[str]) -> int:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop)
    spec = JobSpec(**json.loads(argv[0]))
    try:
        return run_uncaged(spec)
    except _Stop:
        return 143


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
