"""The demo's heavy jobs: small workloads started through the real `swarmdeck run`.

Four kinds the control room should make visible: one that grows into its cap and exits 250,
one that idles far under its declared threads, one long and healthy, and one big booking with
a job queued behind it. Only the growing one ends on its own: the others run, and the queued
one waits, until the person acts on them or quits, however long they take to read the README
and try each step. Each runner is a process group of its own, so the scene can stop it (and
the runner its job and cage) when the person quits.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from swarmdeck.durations import MAX_SECONDS

MIB = 1 << 20

WORKLOAD_FILE = "workload.py"
WORKLOAD = r"""# A demo job (swarmdeck demo): grow, busy or idle, until stopped.
import sys, time
mode, limit = sys.argv[1], int(sys.argv[2])
held = []
step = 0
while True:
    step += 1
    if mode == "grow":
        if 8 * (len(held) + 1) > limit:
            print(f"stopping at {8 * len(held)} MiB: uncaged, nothing else would stop it")
            sys.exit(1)
        block = bytearray(8 << 20)
        block[::4096] = b"\1" * len(range(0, len(block), 4096))
        held.append(block)
        print(f"step {step}: holding {8 * len(held)} MiB", flush=True)
        time.sleep(0.4)
    elif mode == "busy":
        stop = time.monotonic() + 0.3
        while time.monotonic() < stop:
            sum(i * i for i in range(2000))
        print(f"step {step}: {step * 25} of many cases passed", flush=True)
        time.sleep(0.2)
    else:
        if not held:
            held.append(bytearray(16 << 20))
        print(f"step {step}: waiting on the next shard", flush=True)
        time.sleep(2.0)
"""
"""One small program for every demo job: `grow` takes 8 MiB more every 0.4 s (and stops itself
before it would pass argv[2] MiB), `busy` computes steadily on one core, `idle` holds a little
memory and mostly sleeps; `busy` and `idle` run until they are stopped."""


@dataclass(frozen=True)
class JobSpec:
    """One demo job: how `swarmdeck run` is asked to run which workload."""

    label: str
    cap_mib: int
    mode: str
    threads: int | None = None
    queued: bool = False
    """Started last and expected to queue: the scene does not wait for it to be admitted."""

    def argv(self) -> list[str]:
        """`swarmdeck run` with this job's cap, label and threads, waiting for room as long as
        it may (a year: until the scene stops it)."""
        run = [sys.executable, "-m", "swarmdeck.cli", "run", "--cap", f"{self.cap_mib}M"]
        run += ["--label", self.label, "--wait", str(int(MAX_SECONDS))]
        if self.threads:
            run += ["--threads", str(self.threads)]
        return [*run, "--", *self.workload(limit_mib=4 * self.cap_mib)]

    def uncaged_argv(self) -> list[str]:
        """The demo's own uncaged runner for this job (demo/uncaged.py)."""
        return [sys.executable, "-m", "swarmdeck.demo.uncaged", json.dumps(asdict(self))]

    def workload(self, limit_mib: int) -> list[str]:
        """The job's program, run in the job checkout; a growing one stops itself before it
        passes `limit_mib`."""
        return [sys.executable, "-S", WORKLOAD_FILE, self.mode, str(limit_mib)]


SLICE_MIB = 768
"""The demo's own slice: small, so its bookings fill it and one job has to queue."""


def demo_jobs() -> list[JobSpec]:
    """The jobs in the order they start; their bookings fill the slice so the last one queues.

    The last one's booking fits neither beside the growing job's while it grows nor beside the
    other three's once it has ended, but does once the idle job's is freed: killing that job
    starts it here."""
    return [
        JobSpec("pytest -n 8 (idle)", 48, "idle", threads=8),
        JobSpec("cargo build --release", 64, "busy", threads=1),
        JobSpec("bench alloc (grows)", 160, "grow"),
        JobSpec("train small model", 448, "busy", threads=1),
        JobSpec("integration suite", 224, "busy", threads=1, queued=True),
    ]


@dataclass
class StartedJob:
    """A runner the scene started, and the log its output goes to."""

    spec: JobSpec
    process: subprocess.Popen[bytes]
    log: Path
    caged: bool

    def terminate(self) -> None:
        """SIGTERM the runner unless it was reaped already (then its pid may be another's)."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)

    def stop(self, grace: float = 15.0) -> None:
        """TERM the runner (it stops its job's tree and removes its cage), then KILL its group.

        Its pid, and so its group's id, is the runner's only while the runner is not reaped:
        the group is signalled before the runner is, never after. A runner reaped earlier (it
        ended on its own) leaves what its group still holds to the scene's sweep of its own
        processes (demo/strays.py)."""
        if self.process.returncode is not None:
            return
        self.terminate()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not _exited(self.process.pid):
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def _exited(pid: int) -> bool:
    """Whether the child `pid` has ended, leaving it unreaped (its pid stays its own)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def job_checkout(folder: Path) -> Path:
    """The checkout the demo's jobs run in: a git tree holding their program, so `swarmdeck peer
    run` (the migrate pane) has a tree to copy to the peer."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / WORKLOAD_FILE).write_text(WORKLOAD.lstrip())
    for command in (["git", "init", "-q"], ["git", "add", WORKLOAD_FILE]):
        try:
            subprocess.run(command, cwd=folder, capture_output=True, check=False, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            # Without git the jobs still run here; only moving one to the peer is refused,
            # and peer run says why.
            break
    return folder


def start_job(spec: JobSpec, logs: Path, caged: bool, cwd: Path) -> StartedJob:
    """Start one job in `cwd`: through `swarmdeck run` when caged, else the uncaged runner."""
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{spec.mode}-{spec.cap_mib}M.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            spec.argv() if caged else spec.uncaged_argv(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cwd,
        )
    return StartedJob(spec, process, log, caged)
