"""The real `swarmdeck` command run once, and the one line it must say when it refuses: for the
tests that check a refusal is one line and a documented exit code, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))
TIMEOUT = 120.0
"""Seconds a command may take before the test fails: a hang is a defect, never a wait."""


def swarmdeck(*argv: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run `swarmdeck ARGV…` with the test's environment, its output captured."""
    return subprocess.run(
        [SWARMDECK, *argv], capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The command's stderr, which must be one line and no traceback."""
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    return lines[0]
