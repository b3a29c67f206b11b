"""Helpers for cage and runner tests: a memory hog, and real test slices made and removed.

The slices are cgroup v1 memory cgroups on these machines; on a cgroup v2 host with the memory
controller (the guest of `make test-v2`) they are v2 cgroups, so the same runner tests run there.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from swarmdeck.probes.cgroups import cgroup_pids, read_hierarchies
from swarmdeck.probes.procs import read_stat

MIB = 1 << 20
_counter = itertools.count()

HOG = (
    "import os,sys,time\n"
    "end=time.monotonic()+60\n"
    "while sys.argv[4] and not os.path.exists(sys.argv[4]) and time.monotonic()<end:\n"
    "    time.sleep(0.02)\n"
    "time.sleep(float(sys.argv[3]))\n"
    "n=int(float(sys.argv[1])*1048576)\n"
    "b=bytearray(n)\n"
    "b[::4096]=b'\\1'*len(range(0,n,4096))\n"
    "print('held',flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)
"""Waits for the file argv[4] (when named; at most 60 s) and then argv[3] seconds, allocates
argv[1] MiB touching every page, holds it argv[2] seconds."""

SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")
"""The console script of this venv: tests run the real `swarmdeck` command."""


def hog(
    mib: float, hold: float = 0.0, delay: float = 0.0, after: Path | None = None
) -> list[str]:
    """The argv of a process that really holds `mib` MiB for `hold` seconds; with `after`, it
    allocates only once that file exists, so a test decides when each job grows."""
    return [sys.executable, "-S", "-c", HOG, str(mib), str(hold), str(delay), str(after or "")]


def mem_total() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


def write_config(path: Path, slice_path: Path | str, slice_cap: int, **memory: object) -> Path:
    """A config whose slice is the test's own, capped at slice_cap (MemTotal − reserve)."""
    settings: dict[str, object] = {
        "slice": str(slice_path),
        "reserve": f"{mem_total() - slice_cap}B",
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


def end_session(sid: int) -> None:
    """Kill every live process of a session until none is left (a loop may still be forking)."""
    for _ in range(250):
        members = session_processes(sid)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        time.sleep(0.02)


def v1_root() -> Path:
    root = read_hierarchies().v1_memory
    if root is None or not os.access(root, os.W_OK):
        pytest.skip("needs a writable cgroup v1 memory hierarchy (root on these machines)")
    return Path(root)


def v2_root() -> Path | None:
    """The cgroup2 mount when it offers the memory controller and this user may write there."""
    root = read_hierarchies().v2
    if root is None or not os.access(root, os.W_OK):
        return None
    if "memory" not in Path(root, "cgroup.controllers").read_text().split():
        return None
    return Path(root)


def slice_root() -> Path:
    """Where test slices go: the v1 memory hierarchy here, the v2 root on a v2-only host (with
    memory passed on to its children, so a new slice has its memory files at once)."""
    v2 = v2_root() if read_hierarchies().v1_memory is None else None
    if v2 is None:
        return v1_root()
    control = v2 / "cgroup.subtree_control"
    if "memory" not in control.read_text().split():
        control.write_text("+memory")
    return v2


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


TEST_SLICE = re.compile(r"swarmdeck-(?:ledger-)?test-(\d+)-\d+(?:-outside)?")
"""Names of the slices tests make at the hierarchy's root; the number is the test run's pid."""
_swept = False


def sweep_stale_slices(root: Path) -> None:
    """Remove test slices left by test runs that were killed before their clean-up ran.

    A slice whose run is still alive (another test run at the same time) is left alone.
    """
    for entry in root.iterdir():
        match = TEST_SLICE.fullmatch(entry.name)
        if match and entry.is_dir() and not Path(f"/proc/{match.group(1)}").exists():
            remove_tree(entry)


def new_slice() -> Path:
    """A fresh slice directory of this test's own: /sys/fs/cgroup/memory/swarmdeck-test-PID-N
    (/sys/fs/cgroup/swarmdeck-test-PID-N on a cgroup v2 host).

    A leftover of the same name can only come from an earlier run that had this pid and was
    killed: it is cleared, not reused.
    """
    global _swept
    root = slice_root()
    if not _swept:
        sweep_stale_slices(root)
        _swept = True
    path = root / f"swarmdeck-test-{os.getpid()}-{next(_counter)}"
    remove_tree(path)
    path.mkdir()
    return path
