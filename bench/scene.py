"""A busy host for the benchmarks: a slice of their own, caged jobs, and many sleeping processes.

Everything here is started by the benchmark and stopped by it: the slice is a cgroup v1 memory
directory named for the benchmark's pid, the jobs are real `swarmdeck run -- sleep` runners in a
scratch state folder, the sleepers are plain `sleep` processes. The owner record the runners
write for the slice in the machine's run folder goes with the slice, as the demo's does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from swarmdeck.actions.cage import remove_cgroup
from swarmdeck.actions.cage.slice_claim import release_claim
from swarmdeck.probes import procs
from swarmdeck.probes.cgroups import cgroup_pids, read_hierarchies
from swarmdeck.probes.machine import mem_total

MIB = 1 << 20
SWARMDECK = str(Path(sys.executable).parent / "swarmdeck")


def make_slice(name: str) -> Path:
    """A fresh v1 memory cgroup at the hierarchy's root, named for this benchmark and its pid."""
    mount = read_hierarchies().v1_memory
    if mount is None or not os.access(mount, os.W_OK):
        sys.exit(f"{name}: needs a writable cgroup v1 memory hierarchy (run as root)")
    path = Path(mount) / f"swarmdeck-{name}-{os.getpid()}"
    # Only a killed earlier run that had this pid can have left one: start from nothing.
    remove_slice(path)
    path.mkdir()
    return path


def remove_slice(path: Path, ledgers: Iterable[Path] = ()) -> None:
    """Kill whatever is left in the slice and remove it, its job cgroups first; then the owner
    record of the slice, when it names one of `ledgers` (the benchmark's own state databases:
    `Home.db`), through the cage's `release_claim`, as `swarmdeck demo` removes its own."""
    if path.exists():
        for cgroup in [*(p for p in path.iterdir() if p.is_dir()), path]:
            for pid in cgroup_pids(cgroup):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            remove_cgroup(cgroup)
    release_claim(path, [str(ledger) for ledger in ledgers])


@dataclass(frozen=True)
class Home:
    """A scratch config, state and Claude Code folder, and the environment naming them."""

    folder: Path
    env: dict[str, str]

    @property
    def db(self) -> Path:
        return self.folder / "state" / "state.db"


def scratch_home(folder: Path, slice_path: Path, slice_cap: int = 2048 * MIB) -> Home:
    """Config with the benchmark's slice; state and Claude Code folders inside `folder`."""
    config = folder / "config.toml"
    config.write_text(
        f'[memory]\nslice = "{slice_path}"\nreserve = "{mem_total() - slice_cap}B"\n'
        'margin = "1M"\n'
    )
    (folder / "claude").mkdir(exist_ok=True)
    env = dict(
        os.environ,
        SWARMDECK_CONFIG=str(config),
        SWARMDECK_STATE_DIR=str(folder / "state"),
        CLAUDE_CONFIG_DIR=str(folder / "claude"),
    )
    # Measure what an installed swarmdeck costs: with its bytecode cached.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return Home(folder, env)


def running_jobs(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT COUNT(*) FROM jobs WHERE state = 'running'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


@contextlib.contextmanager
def caged_jobs(home: Home, count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` real `swarmdeck run -- sleep` runners, each job in its cage, until the block ends."""
    runners = [
        subprocess.Popen(
            [SWARMDECK, "run", "--cap", "8M", "--wait", "60", "--", "sleep", "3600"],
            env=home.env, stdout=subprocess.DEVNULL, start_new_session=True,
        )
        for _ in range(count)
    ]
    try:
        deadline = time.monotonic() + 120
        while running_jobs(home.db) < count:
            if time.monotonic() > deadline or any(r.poll() is not None for r in runners):
                raise RuntimeError("the caged jobs did not all start")
            time.sleep(0.1)
        yield runners
    finally:
        for runner in runners:
            with contextlib.suppress(ProcessLookupError):
                runner.send_signal(signal.SIGTERM)
        for runner in runners:
            runner.wait()


@contextlib.contextmanager
def sleepers(count: int) -> Iterator[int]:
    """`count` sleeping processes outside any cage, until the block ends; yields their number.

    One shell of their own starts them, so the measuring process holds no object for any of
    them: what a refresh costs then depends on the processes, not on this process's heap."""
    parent = subprocess.Popen(
        ["sh", "-c", f"i=0; while [ $i -lt {count} ]; do sleep 3600 & i=$((i+1)); done; wait"],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(_children(parent.pid)) < count:
            if time.monotonic() > deadline or parent.poll() is not None:
                raise RuntimeError("the sleeping processes did not all start")
            time.sleep(0.1)
        yield count
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


def _children(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def tree(pid: int, table: dict[int, procs.StatLine]) -> list[int]:
    """`pid` and its live descendants in the process table `table`."""
    children: dict[int, list[int]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        if current in table:
            found.append(current)
            todo += children.get(current, [])
    return found


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a process and its live descendants (VmRSS); None once it is gone."""
    total = 0
    for member in tree(pid, procs.process_table()):
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total if procs.identity(pid) is not None else None
