"""A reader that goes away (`swarmdeck status | head -1`) ends a printing command quietly with
141, the status of a process ended by SIGPIPE, as `git log | head -1` leaves it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SWARMDECK = str(Path(sys.executable).with_name("swarmdeck"))
READER_GONE = 141

PRINTING = [
    ["status"],
    ["status", "--json"],
    ["probe", "--json"],
    ["config", "show"],
    ["lock", "show"],
    ["kills"],
    ["kills", "--json"],
    ["watch", "--once"],
    ["--help"],
    ["--version"],
    ["config", "show", "--help"],
    ["run", "--help"],
]


def with_reader_gone(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run `swarmdeck ARGV` whose stdout pipe's reader closed before anything was written."""
    proc = subprocess.Popen([SWARMDECK, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    try:
        stderr = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return subprocess.CompletedProcess(argv, proc.returncode, b"", stderr)


@pytest.mark.parametrize("argv", PRINTING, ids=" ".join)
def test_a_command_whose_reader_went_away_ends_quietly_with_141(argv: list[str]) -> None:
    done = with_reader_gone(argv)
    assert (done.returncode, done.stderr.decode()) == (READER_GONE, "")
