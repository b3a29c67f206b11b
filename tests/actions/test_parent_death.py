"""The parent-death signal, set through _ctypes: asked for, read back, and delivered."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from swarmdeck.actions.parent_death import die_with_parent

READ_BACK = """
import ctypes, sys
from swarmdeck.actions.parent_death import die_with_parent
die_with_parent(int(sys.argv[1]))
value = ctypes.c_int()
ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(value), 0, 0, 0)
print(value.value)
"""

ORPHANED = """
import os, sys, time
from swarmdeck.actions.parent_death import die_with_parent
child = os.fork()
if child == 0:
    die_with_parent(9)
    time.sleep(60)
    os._exit(0)
print(child, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signal_number", [signal.SIGKILL, signal.SIGUSR1])
def test_the_signal_asked_for_is_the_one_the_kernel_holds(signal_number: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", READ_BACK, str(int(signal_number))],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == signal_number


def test_a_child_that_asked_dies_when_its_parent_is_killed_outright() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", ORPHANED], stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        time.sleep(0.2)
        assert _alive(child)
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(child), "the child outlived its parent"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_a_signal_the_kernel_refuses_is_an_error() -> None:
    with pytest.raises(OSError) as refused:
        die_with_parent(100_000)
    assert refused.value.errno == errno.EINVAL
