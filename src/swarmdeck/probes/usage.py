"""How much of a machine a job's process tree really computes on, over a window of time.

Two numbers, because either alone misleads. "Cores in use" (Δ CPU seconds ÷ Δ wall seconds)
drops when a job is starved or throttled; "threads computing at once" (Σ per-thread Δ CPU ÷
the largest per-thread Δ CPU: N equally busy threads give N) stays at N then, and drops only
when the job itself has gone serial. A job declared with 8 threads that reads 1 thread at once
is wasting its booking; one that reads 8 threads on 2 cores is starved, not wasteful.
"""

from __future__ import annotations

import os
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path

from swarmdeck.probes.procs import PROC, ProcessIdentity, parse_stat, read_stat

_CLK_TCK = os.sysconf("SC_CLK_TCK")
SERIAL_PREFIX = "serial right now:"


@dataclass(frozen=True)
class ThreadKey:
    """A thread as the sampler remembers it; the start ticks keep a reused tid apart."""

    pid: int
    tid: int
    start_ticks: int


@dataclass(frozen=True)
class TreeSample:
    """CPU time of every thread of a process tree at one moment (seconds on CLOCK_MONOTONIC)."""

    taken_at: float
    cpu_ns: dict[ThreadKey, int]
    nanosecond: bool

    @property
    def pids(self) -> set[int]:
        return {key.pid for key in self.cpu_ns}


@dataclass(frozen=True)
class Usage:
    """A tree's use of the machine between two samples."""

    cores_in_use: float
    threads_at_once: float
    threads_seen: int
    wall: float
    nanosecond: bool


def thread_reading(pid: int, tid: int) -> tuple[int, int, bool] | None:
    """(start ticks, CPU nanoseconds, whether at ns resolution) of one thread, None if gone.

    The CPU time is schedstat's first field where the kernel has it, else stat's utime+stime
    ticks (10 ms resolution, too coarse for short windows but still right on average).
    """
    task = PROC / str(pid) / "task" / str(tid)
    try:
        stat = parse_stat((task / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None
    try:
        return stat.start_ticks, int((task / "schedstat").read_text().split()[0]), True
    except (OSError, ValueError, IndexError):
        ticks = stat.utime + stat.stime
        return stat.start_ticks, ticks * 1_000_000_000 // _CLK_TCK, False


def process_tree(root: ProcessIdentity) -> list[int]:
    """The root and every descendant, found by one pass over /proc; empty if the root is gone."""
    if not root.is_alive():
        return []
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = read_stat(int(entry.name))
        if stat is not None:
            children.setdefault(stat.ppid, []).append(stat.pid)
    tree, todo = [], [root.pid]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def sample_tree(root: ProcessIdentity) -> TreeSample:
    """Per-thread CPU time of the whole tree under `root`, now."""
    cpu: dict[ThreadKey, int] = {}
    nanosecond = True
    for pid in process_tree(root):
        try:
            tids = [int(name) for name in os.listdir(PROC / str(pid) / "task")]
        except OSError:
            continue  # the process ended between the tree scan and now
        for tid in tids:
            reading = thread_reading(pid, tid)
            if reading is not None:
                ticks, ns, precise = reading
                cpu[ThreadKey(pid, tid, ticks)] = ns
                nanosecond = nanosecond and precise
    return TreeSample(time.monotonic(), cpu, nanosecond)


def usage_between(first: TreeSample, second: TreeSample) -> Usage:
    """Cores in use and threads computing at once between two samples of one tree.

    A thread born inside the window counts with all its CPU time; one that ended inside it
    is missing from the second sample and its last slice is lost (the honest lower bound).
    """
    wall = second.taken_at - first.taken_at
    deltas = [ns - first.cpu_ns.get(key, 0) for key, ns in second.cpu_ns.items()]
    deltas = [d for d in deltas if d > 0]
    total = sum(deltas)
    largest = max(deltas, default=0)
    return Usage(
        cores_in_use=total / 1e9 / wall if wall > 0 else 0.0,
        threads_at_once=total / largest if largest else 0.0,
        threads_seen=len(second.cpu_ns),
        wall=wall,
        nanosecond=first.nanosecond and second.nanosecond,
    )


def measure(root: ProcessIdentity, window: float = 1.0) -> Usage:
    """Sample the tree, wait `window` seconds, sample again: the tree's use over that window."""
    first = sample_tree(root)
    time.sleep(window)
    return usage_between(first, sample_tree(root))


class UsageTracker:
    """Each job tree's previous sample, so every snapshot gets the use since the one before
    without sleeping in between (the first sight of a tree has no figure yet)."""

    def __init__(self) -> None:
        self._last: dict[Hashable, tuple[ProcessIdentity, TreeSample]] = {}

    def update(self, roots: Mapping[Hashable, ProcessIdentity]) -> dict[Hashable, Usage | None]:
        """Sample every tree now; forget trees no longer asked about."""
        figures: dict[Hashable, Usage | None] = {}
        seen: dict[Hashable, tuple[ProcessIdentity, TreeSample]] = {}
        for key, root in roots.items():
            sample = sample_tree(root)
            previous = self._last.get(key)
            same_tree = previous is not None and previous[0] == root
            figures[key] = usage_between(previous[1], sample) if same_tree else None
            seen[key] = (root, sample)
        self._last = seen
        return figures


def cores_text(usage: Usage | None, declared_threads: int | None, serial: str | None) -> str:
    """The cores cell of a job row: "1.9 cores · 3.8/4 thr" (threads at once of those declared),
    led by "serial: REASON" while the job says it is serial on purpose; "…" before a figure."""
    if usage is None:
        text = "…"
    else:
        threads = f"{usage.threads_at_once:.1f}"
        if declared_threads:
            threads += f"/{declared_threads}"
        text = f"{usage.cores_in_use:.1f} cores · {threads} thr"
    return f"serial: {serial} · {text}" if serial else text


def serial_reason(marker: Path | str | None) -> str | None:
    """The reason a job gave for an intentionally serial phase, or None.

    A job marks such a phase by writing "serial right now: REASON" into the file named in its
    ledger row (and removing it, or writing anything else, when the phase ends).
    """
    if not marker:
        return None
    try:
        text = Path(marker).read_text(errors="replace")
    except OSError:
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    if not first.lower().startswith(SERIAL_PREFIX):
        return None
    return first[len(SERIAL_PREFIX) :].strip() or "no reason given"
