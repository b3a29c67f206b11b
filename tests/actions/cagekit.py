"""Helpers for cage and runner tests: a memory hog, and real v1 test slices made and removed."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import time
from pathlib import Path

import pytest

from swarmdeck.probes.cgroups import cgroup_pids, read_hierarchies

MIB = 1 << 20
_counter = itertools.count()

HOG = (
    "import sys,time\n"
    "n=int(float(sys.argv[1])*1048576)\n"
    "b=bytearray(n)\n"
    "b[::4096]=b'\\1'*len(range(0,n,4096))\n"
    "print('held',flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)
"""Allocates argv[1] MiB, touches every page, then holds it for argv[2] seconds."""


def hog(mib: float, hold: float = 0.0) -> list[str]:
    """The argv of a process that really holds `mib` MiB for `hold` seconds."""
    return [sys.executable, "-S", "-c", HOG, str(mib), str(hold)]


def v1_root() -> Path:
    root = read_hierarchies().v1_memory
    if root is None or not os.access(root, os.W_OK):
        pytest.skip("needs a writable cgroup v1 memory hierarchy (root on these machines)")
    return root


def remove_tree(path: Path) -> None:
    """Kill what is left in a test slice and remove it, children first."""
    if not path.exists():
        return
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        _empty(child)
    _empty(path)


def _empty(cgroup: Path) -> None:
    for pid in cgroup_pids(cgroup):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    for _ in range(100):
        try:
            cgroup.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    cgroup.rmdir()


def new_slice() -> Path:
    """A fresh slice directory of this test's own: /sys/fs/cgroup/memory/swarmdeck-test-PID-N."""
    path = v1_root() / f"swarmdeck-test-{os.getpid()}-{next(_counter)}"
    path.mkdir()
    return path
