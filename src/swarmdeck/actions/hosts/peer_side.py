"""What a peer runs for the host that drives a peer run: start a job detached, stop it.

`swarmdeck peer remote-start DIR -- RUN-ARGS…` starts `swarmdeck run RUN-ARGS…` in DIR under a
small shell that writes the runner's exit code to a file when it ends, so the job outlives the
connection (`start`). `swarmdeck peer remote-stop PID TICKS SIGNAL` signals the runner under
that shell, only if the shell is still the process with those start ticks (`stop`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from swarmdeck.actions.kill import children_map, process_table, stop_tree
from swarmdeck.actions.run_request import RESULT_ENV, WORKLOAD_ENV
from swarmdeck.errors import UsageError
from swarmdeck.probes.procs import ProcessIdentity, read_stat, start_ticks

CONTROL = ".swarmdeck-peer"
"""The folder inside a run directory that holds the job's output and exit-code files."""
OUTPUT = f"{CONTROL}/out"
EXIT_CODE = f"{CONTROL}/rc"
SHELL = f"{CONTROL}/shell"
"""The job's shell as "PID START_TICKS", written as it starts: `peer cleanup` never removes a
run directory while that process lives."""
RESULT = f"{CONTROL}/result"
"""The runner's peak, cap and duration as JSON (runner.write_result), beside the exit code."""
WRAPPER = 'swarmdeck_run "$@"; code=$?; echo $code > "$RC.tmp" && mv "$RC.tmp" "$RC"'
STOP_GRACE = 15.0
"""Seconds the runner gets to stop its own tree and exit before the tree is stopped here."""


def start(
    run_dir: Path, run_args: list[str], workload: str | None = None
) -> subprocess.Popen[bytes]:
    """Start the runner detached in `run_dir`; returns its shell (see `identity`). The runner
    books by `workload`, the fingerprint the driver made where the command was asked for (the
    copy here is new each run), and leaves its peak in RESULT for the driver.

    The shell gets its own session, /dev/null as input, the output file as stdout and stderr,
    and no other descriptor (subprocess closes them). The caller prints the shell's pid and
    start ticks as one JSON line (also written into the run directory, for `peer cleanup`),
    closes its output and then waits for the shell: the shell is reaped by its own parent, not
    left as a zombie for a PID 1 that does not reap orphans (only a connection lost for good
    orphans it). The driver keeps that channel open until the job ended."""
    if not run_dir.is_dir():
        raise UsageError(f"remote-start: no run directory {run_dir}")
    (run_dir / CONTROL).mkdir(exist_ok=True)
    runner = f"{shlex.quote(sys.executable)} -m swarmdeck.cli run"
    script = f"swarmdeck_run() {{ {runner} \"$@\"; }}; {WRAPPER}"
    with open(run_dir / OUTPUT, "ab") as out:
        child = subprocess.Popen(
            ["sh", "-c", script, "sh", *run_args],
            cwd=run_dir,
            env={
                **os.environ, "RC": str(run_dir / EXIT_CODE),
                RESULT_ENV: str(run_dir / RESULT),
                **({WORKLOAD_ENV: workload} if workload else {}),
            },
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            close_fds=True,
            start_new_session=True,
        )
    shell = identity(child)
    (run_dir / SHELL).write_text(f"{shell.pid} {shell.start_ticks}\n")
    return child


def identity(child: subprocess.Popen[bytes]) -> ProcessIdentity:
    ticks = start_ticks(child.pid)
    assert ticks is not None, "an unreaped child always has a stat line"
    return ProcessIdentity(child.pid, ticks)


def reap(child: subprocess.Popen[bytes]) -> None:
    """Wait for the shell to end, so it is reaped here and never left as a zombie for a PID 1
    that does not reap orphans. Output is not written any more (the driver may be gone), and
    a hangup from a closing ssh session leaves the waiting alone."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    child.wait()


def start_line(ident: ProcessIdentity) -> str:
    return json.dumps({"pid": ident.pid, "start_ticks": ident.start_ticks})


def running(ident: ProcessIdentity) -> bool:
    """The same process still exists and has not ended (a zombie waiting for its reaper, its
    parent having exited, counts as ended)."""
    stat = read_stat(ident.pid)
    return stat is not None and stat.start_ticks == ident.start_ticks and stat.state != "Z"


def stop(shell: ProcessIdentity, signum: int, grace: float = STOP_GRACE) -> str:
    """Stop the job whose shell is `shell`; returns what happened, as one line. The runner
    under the shell is signalled (it stops its caged tree and records how it ended); when the
    shell has not gone after `grace`, its whole tree is stopped the hard way."""
    if not running(shell):
        return "already ended"
    table = process_table()
    for pid in children_map(table).get(shell.pid, []):
        if start_ticks(pid) == table[pid].start_ticks:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
    deadline = time.monotonic() + grace
    while running(shell) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not running(shell):
        return "stopped"
    report = stop_tree(shell, [shell], grace=2.0)
    return f"stopped the hard way ({len(report.signalled)} processes)"
