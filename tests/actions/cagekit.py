"""Helpers for cage and runner tests: a memory hog, and real v1 test slices made and removed."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import time
from pathlib import Path

import pytest

from swarmdeck.probes.cgroups import cgroup_pids, read_hierarchies
from swarmdeck.probes.procs import read_stat

MIB = 1 << 20
_counter = itertools.count()

HOG = (
    "import sys,time\n"
    "time.sleep(float(sys.argv[3]))\n"
    "n=int(float(sys.argv[1])*1048576)\n"
    "b=bytearray(n)\n"
    "b[::4096]=b'\\1'*len(range(0,n,4096))\n"
    "print('held',flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)
"""Waits argv[3] seconds, allocates argv[1] MiB touching every page, holds it argv[2] seconds."""

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
"""The console script of this venv: tests run the real `swarmdeck` command."""


def hog(mib: float, hold: float = 0.0, delay: float = 0.0) -> list[str]:
    """The argv of a process that really holds `mib` MiB for `hold` seconds."""
    return [sys.executable, "-S", "-c", HOG, str(mib), str(hold), str(delay)]


def mem_total() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


def write_config(path: Path, slice_path: Path | str, slice_cap: int, **memory: object) -> Path:
    """A config whose slice is the test's own, capped at slice_cap (MemTotal − reserve)."""
    settings: dict[str, object] = {
        "slice": str(slice_path),
        "reserve": str(mem_total() - slice_cap),
        "margin": "1M",
        "sample_interval": 0.05,
        "admission_wait": 0.0,
    }
    settings.update(memory)
    lines = ["[memory]"]
    for key, value in settings.items():
        lines.append(f"{key} = {json.dumps(value)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def session_processes(sid: int) -> list[int]:
    """Live processes of one session (zombies waiting to be reaped do not count)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = read_stat(int(entry.name))
            if stat is not None and stat.session == sid and stat.state != "Z":
                found.append(stat.pid)
    return found


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
