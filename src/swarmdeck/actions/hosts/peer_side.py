"""What a peer runs for the host that drives a peer run: start a job detached, stop it.

`swarmdeck peer remote-start DIR -- RUN-ARGS…` starts `swarmdeck run RUN-ARGS…` in DIR under a
small shell that writes the runner's exit code to a file when it ends. The shell gets its own
session, /dev/null as input, the output file as stdout and stderr, and no other descriptor
(subprocess closes them), so the ssh channel that asked for it can close at once and the job
outlives the connection. It prints the shell's pid and start ticks as one JSON line.

`swarmdeck peer remote-stop PID TICKS SIGNAL` signals the runner under that shell (the runner
stops its caged tree and records how it ended), only if the shell is still the process with
those start ticks; when the shell has not gone after the grace period, its whole tree is
stopped the hard way.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from swarmdeck.actions.kill import children_map, process_table, stop_tree
from swarmdeck.errors import UsageError
from swarmdeck.probes.procs import ProcessIdentity, read_stat, start_ticks

CONTROL = ".swarmdeck-peer"
"""The folder inside a run directory that holds the job's output and exit-code files."""
OUTPUT = f"{CONTROL}/out"
EXIT_CODE = f"{CONTROL}/rc"
WRAPPER = 'swarmdeck_run "$@"; code=$?; echo $code > "$RC.tmp" && mv "$RC.tmp" "$RC"'
STOP_GRACE = 15.0
"""Seconds the runner gets to stop its own tree and exit before the tree is stopped here."""


def start(run_dir: Path, run_args: list[str]) -> ProcessIdentity:
    """Start the runner detached in `run_dir`; returns the identity of its shell."""
    if not run_dir.is_dir():
        raise UsageError(f"remote-start: no run directory {run_dir}")
    (run_dir / CONTROL).mkdir(exist_ok=True)
    runner = f"{shlex.quote(sys.executable)} -m swarmdeck.cli run"
    script = f"swarmdeck_run() {{ {runner} \"$@\"; }}; {WRAPPER}"
    with open(run_dir / OUTPUT, "ab") as out:
        child = subprocess.Popen(
            ["sh", "-c", script, "sh", *run_args],
            cwd=run_dir,
            env={**os.environ, "RC": str(run_dir / EXIT_CODE)},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            close_fds=True,
            start_new_session=True,
        )
    ticks = start_ticks(child.pid)
    assert ticks is not None, "an unreaped child always has a stat line"
    return ProcessIdentity(child.pid, ticks)


def start_line(ident: ProcessIdentity) -> str:
    return json.dumps({"pid": ident.pid, "start_ticks": ident.start_ticks})


def running(ident: ProcessIdentity) -> bool:
    """The same process still exists and has not ended (a zombie waiting for its reaper, its
    parent having exited, counts as ended)."""
    stat = read_stat(ident.pid)
    return stat is not None and stat.start_ticks == ident.start_ticks and stat.state != "Z"


def stop(shell: ProcessIdentity, signum: int, grace: float = STOP_GRACE) -> str:
    """Stop the job whose shell is `shell`; returns what happened, as one line."""
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
