"""Processes that start one decision at the same moment: each gets ready, then waits for a
starting file, so a race between them is a real one rather than one that happens to be won
by whichever Python started first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_AT_THE_LINE = """
import sys as _sys, time as _time
from pathlib import Path as _Path
print("ready", flush=True)
while not _Path(_sys.argv[1]).exists():
    _time.sleep(0.0005)
"""


def start_racer(setup: str, run: str, go: Path, *args: str) -> subprocess.Popen[str]:
    """One racer: runs `setup` (imports), says it is ready, waits until `go` exists, then runs
    `run`, which finds `args` in sys.argv[2:]. Returns once it is ready."""
    racer = subprocess.Popen(
        [sys.executable, "-c", setup + _AT_THE_LINE + run, str(go), *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
    return racer


def race(setup: str, run: str, go: Path, argvs: list[list[str]]) -> list[str]:
    """Start every racer, let them go at once, and give what each printed, in order."""
    racers = [start_racer(setup, run, go, *argv) for argv in argvs]
    go.touch()
    return [racer.communicate(timeout=20)[0].strip() for racer in racers]
